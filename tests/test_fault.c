/* A kernel that writes through a wild pointer fails its own tenant's context for good,
 * as natively: the synchronisation after it and every later call return the fault's
 * error.  Its executor then leaves (under MPS that is what lets the GPU take new clients
 * again), the tenant's later calls fail as with any lost server, and the server goes on
 * serving new tenants.  On the sim, DETSHARE_SIM_FAULT names the kernel that faults
 * (docs/sim-device.md); on a GPU the wild write faults for real. */
#include "ds_test.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;

static void launch_fill(CUfunction fill, CUdeviceptr d)
{
    int v = 3, n = 32;
    void *params[] = { &d, &v, &n };

    CU_OK(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
}

/* The faulting tenant, in a child: exit status 0 when everything went as natively. */
static int faulty_tenant(void)
{
    CUfunction fill;
    CUdeviceptr d, wild = 0x10000;
    int v = 3, n = 32;
    void *params[] = { &wild, &v, &n };

    if (ds_test_connect() != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS)
        return 10;
    if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS)
        return 11;
    if (cuCtxSynchronize() != CUDA_ERROR_ILLEGAL_ADDRESS)
        return 12;
    /* Sticky, as natively. */
    if (cuMemAlloc(&d, 4096) != CUDA_ERROR_ILLEGAL_ADDRESS)
        return 13;
    /* After the grace, the executor has left. */
    sleep(2);
    if (cuMemAlloc(&d, 4096) != CUDA_ERROR_DEVICE_UNAVAILABLE)
        return 14;
    return 0;
}

Test(fault, a_faulting_kernel_ends_only_its_tenant, .timeout = 120)
{
    CUfunction fill;
    CUdeviceptr d;
    unsigned got[32];
    int status;
    pid_t pid;

    setenv("DETSHARE_SIM_FAULT", "fill", 1);
    ds_test_server_start(&srv, 0, NULL);
    unsetenv("DETSHARE_SIM_FAULT");
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(faulty_tenant());
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the faulting tenant saw something else (step %d)", WEXITSTATUS(status));
    cr_expect(ds_test_log_has(&srv, "its device context failed"),
              "the server did not say why the tenant left");

    /* A new tenant is served.  On the sim, fill faults in every context: it only
     * allocates, copies and fills here. */
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, sizeof(got)));
    CU_OK(cuMemsetD32(d, 5, 32));
    if (!ds_test_on_sim()) {
        CU_OK(cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
        launch_fill(fill, d);
    }
    CU_OK(cuMemcpyDtoH(got, d, sizeof(got)));
    cr_expect_eq(got[31], ds_test_on_sim() ? 5u : 3u + 31u, "got %u", got[31]);
    CU_OK(cuMemFree(d));
    ds_test_server_stop(&srv);
}
