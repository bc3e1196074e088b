/*
 * Allocations per second as a tenant sees them: cuMemAlloc then cuMemFree of 1 MiB, in a
 * loop, through whatever libcuda.so.1 the loader finds (run.sh points it at detshare's
 * client, against a sim server with and without a quota for this tenant).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 5
#define ITERS 20000

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    CUcontext ctx;
    CUdeviceptr d;
    size_t free_b, total;
    double best = 0;

    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuMemGetInfo(&free_b, &total) != CUDA_SUCCESS) {
        fprintf(stderr, "alloc_bench: no device\n");
        return 1;
    }
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now(), rate;

        for (int i = 0; i < ITERS; i++)
            if (cuMemAlloc(&d, 1 << 20) != CUDA_SUCCESS || cuMemFree(d) != CUDA_SUCCESS) {
                fprintf(stderr, "alloc_bench: allocation %d failed\n", i);
                return 1;
            }
        rate = ITERS / (now() - t0);
        if (rate > best)
            best = rate;
    }
    printf("%.0f allocations/s (cuMemAlloc + cuMemFree of 1 MiB, best of %d rounds of %d; "
           "device memory seen: %zu bytes)\n", best, ROUNDS, ITERS, total);
    return 0;
}
