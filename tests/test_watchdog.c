/* An executor stuck in a driver call once its tenant has gone is ended by its watchdog
 * (server/exec/watchdog.h): what the tenant held is freed, the server says why, and new
 * tenants are served.  On the sim, DETSHARE_SIM_HANG names a kernel whose launch never
 * returns, as a driver bug can make a call (docs/sim-device.md). */
#include "ds_test.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;

/* A tenant whose launch hangs its executor, then which gives up waiting and dies. */
static int stuck_tenant(void)
{
    CUfunction fill;
    CUdeviceptr d;
    int v = 3, n = 32;
    void *params[] = { &d, &v, &n };

    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 1 << 20) != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS)
        return 10;
    if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS)
        return 11;
    alarm(1);
    cuCtxSynchronize();
    return 12;
}

Test(watchdog, an_executor_stuck_after_its_tenant_left_is_ended, .timeout = 60)
{
    CUdeviceptr d;
    int status;
    pid_t pid;

    DS_SIM_ONLY();
    setenv("DETSHARE_SIM_HANG", "fill", 1);
    ds_test_server_start(&srv, 0, NULL);
    unsetenv("DETSHARE_SIM_HANG");
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(stuck_tenant());
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM,
              "the tenant did not hang in its synchronisation (status 0x%x)", status);
    for (int i = 0; i < 1000 && !ds_test_log_has(&srv, "was stuck in the driver"); i++)
        usleep(10000);
    cr_assert(ds_test_log_has(&srv, "still stuck in a call to the device"),
              "the executor's watchdog did not say it ended it");
    cr_assert(ds_test_log_has(&srv, "was stuck in the driver after the tenant left"),
              "the control process did not say why the tenant left");
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 4096));
    CU_OK(cuMemFree(d));
    ds_test_server_stop(&srv);
}
