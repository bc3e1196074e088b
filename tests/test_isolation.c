/* Two tenants at once, one over the Unix socket and one over TCP: each sees only its
 * own memory and handles. */
#include "ds_test.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 1, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(isolation, .init = start, .fini = stop, .timeout = 60);

struct secret {
    CUdeviceptr ptr;
    CUstream stream;
    CUevent event;
};

/* Tenant B, over TCP: allocates, fills, publishes its pointer and handles, waits, then
 * checks its memory is untouched.  Exit status 0 means all held. */
static int tenant_b(int to_parent, int from_parent)
{
    unsigned char fill[4096], back[4096];
    struct secret s;
    CUcontext ctx;
    char go;

    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    memset(fill, 0x5a, sizeof(fill));
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) ||
        cuMemAlloc(&s.ptr, sizeof(fill)) || cuMemcpyHtoD(s.ptr, fill, sizeof(fill)) ||
        cuStreamCreate(&s.stream, 0) || cuEventCreate(&s.event, 0))
        return 1;
    if (write(to_parent, &s, sizeof(s)) != sizeof(s) || read(from_parent, &go, 1) != 1)
        return 2;
    if (cuMemcpyDtoH(back, s.ptr, sizeof(back)) || memcmp(back, fill, sizeof(fill)) != 0)
        return 3;
    return cuStreamSynchronize(s.stream) == CUDA_SUCCESS ? 0 : 4;
}

Test(isolation, a_tenant_cannot_touch_another_tenants_objects)
{
    int up[2], down[2], status;
    unsigned char buf[64] = { 0 };
    struct secret s;
    CUdeviceptr mine;
    pid_t pid;

    cr_assert_eq(pipe(up), 0);
    cr_assert_eq(pipe(down), 0);
    pid = fork();
    if (pid == 0)
        _exit(tenant_b(up[1], down[0]));
    cr_assert_eq(read(up[0], &s, sizeof(s)), sizeof(s), "tenant B did not start");

    /* Each executor is its own process with its own address space: on a GPU, a number
     * valid for B may name memory of A's own once A allocates.  So A probes B's
     * pointer while it owns nothing; what must hold is that B's bytes never change. */
    ds_test_ctx();
    CU_IS(cuMemcpyHtoD(s.ptr, buf, sizeof(buf)), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyDtoH(buf, s.ptr, sizeof(buf)), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyDtoD(s.ptr, s.ptr + 64, sizeof(buf)), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemsetD8(s.ptr, 0, 16), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemFree(s.ptr), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuStreamSynchronize(s.stream), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuStreamDestroy(s.stream), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuEventQuery(s.event), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuEventDestroy(s.event), CUDA_ERROR_INVALID_HANDLE);
    /* Batched attempts fail too, reported at the next synchronous call. */
    CU_OK(cuMemcpyHtoDAsync(s.ptr, buf, sizeof(buf), NULL));
    CU_IS(cuCtxSynchronize(), CUDA_ERROR_INVALID_VALUE);
    /* Whatever A does with its own memory, even at B's numbers, leaves B's alone. */
    CU_OK(cuMemAlloc(&mine, 4096));
    CU_OK(cuMemsetD8(mine, 0, 4096));

    cr_assert_eq(write(down[1], "g", 1), 1);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "tenant B saw its memory or handles disturbed (status 0x%x)", status);
}

Test(isolation, tcp_tenant_round_trip)
{
    unsigned char src[10000], dst[10000];
    CUdeviceptr d;

    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i ^ (i >> 8));
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, sizeof(src)));
    CU_OK(cuMemcpyHtoD(d, src, sizeof(src)));
    CU_OK(cuMemcpyDtoH(dst, d, sizeof(dst)));
    cr_assert_arr_eq(src, dst, sizeof(src));
    /* The control process logs the connection before it hands it to the executor. */
    cr_assert(ds_test_log_has(&srv, "connected on tcp:127.0.0.1"));
}

/* Over TCP, device-to-host chunks are pipelined: a copy of several chunks comes back
 * whole, and one whose second chunk is refused fails without leaving replies unread. */
Test(isolation, tcp_copies_of_many_chunks, .timeout = 120)
{
    const size_t n = (13u << 20) + 4099;
    unsigned char *src = malloc(n), *dst = malloc(n);
    CUdeviceptr d;

    cr_assert(src != NULL && dst != NULL);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i * 13 + (i >> 20));
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, n));
    CU_OK(cuMemcpyHtoD(d, src, n));
    memset(dst, 0, n);
    CU_OK(cuMemcpyDtoH(dst, d, n));
    cr_assert_arr_eq(src, dst, n);
    CU_IS(cuMemcpyDtoH(dst, d + n - (6u << 20), 8u << 20), CUDA_ERROR_INVALID_VALUE);
    memset(dst, 0, 4096);
    CU_OK(cuMemcpyDtoH(dst, d + 4096, 4096));
    cr_assert_arr_eq(src + 4096, dst, 4096);
    free(src);
    free(dst);
}
