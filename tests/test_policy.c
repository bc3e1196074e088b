/* The temporal baseline: tenants take turns at kernel boundaries, each held while the
 * other has its turn, and a held tenant shows as gated. */
#include "ds_test.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct ds_test_server srv;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Kernel and synchronize, over and over for `ms`: the longest wait for one of them. */
static double longest_wait_ms(double ms)
{
    CUfunction fill;
    CUdeviceptr d;
    int v = 1, n = 1;
    void *params[] = { &d, &v, &n };
    double end = now_ms() + ms, last = now_ms(), longest = 0;

    if (cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS ||
        cuMemAlloc(&d, 64) != CUDA_SUCCESS)
        return -1;
    while (now_ms() < end) {
        double t;

        if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
            cuCtxSynchronize() != CUDA_SUCCESS)
            return -1;
        t = now_ms();
        if (t - last > longest)
            longest = t - last;
        last = t;
    }
    return longest;
}

/* The second tenant: the same loop; it must have been held for a turn of the other. */
static int other(void *arg)
{
    CUcontext ctx;

    (void)arg;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 1;
    return longest_wait_ms(1200) >= 30 ? 0 : 2;
}

Test(policy, temporal_tenants_take_turns)
{
    struct ds_test_peer peer;
    double longest;

    ds_test_server_start(&srv, 0, "--policy temporal");
    ds_test_peer_fork(&peer, other, NULL);
    ds_test_ctx();
    ds_test_peer_go(&peer);
    /* Turns are 50 ms: each tenant waits about that long while the other runs. */
    longest = longest_wait_ms(1200);
    cr_expect_geq(longest, 30, "the longest wait was %.1f ms", longest);
    ds_test_peer_join(&peer);
    ds_test_peer_leave(&peer);
    ds_test_server_stop(&srv);
}
