/*
 * One tenant of bench/eval's latency experiment, through the driver API (linked by
 * soname, so the same binary runs on the system driver or, with LD_LIBRARY_PATH, on
 * detshare's client):
 *
 *   latflood lat SECS BLOCKS NS GAP_MS   a latency-critical tenant: one kernel of BLOCKS
 *                                        blocks of 256 threads, waited for, then GAP_MS
 *                                        of idle, over and over; each kernel's time from
 *                                        launch to completion is one sample
 *   latflood flood SECS BLOCKS NS        a best-effort flood: kernels of BLOCKS blocks back
 *                                        to back, the next launched while the one before
 *                                        runs, so the device never waits for the host
 *
 * NS is what each block spins on a GPU (spin.cu); the sim times a kernel by its grid.
 * The first WARM_S seconds are not measured (the policy learns the tenant's speed, the
 * neighbour gets going).  It prints one JSON object on stdout: for lat, every sample in
 * ms; for flood, the kernels it finished in the measured window and their rate.
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spin_fatbin.h"

#define WARM_S 0.5
#define MAX_SAMPLES 200000

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(double ms)
{
    long long ns = (long long)(ms * 1e6);
    struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };

    nanosleep(&ts, NULL);
}

static int fail(const char *what, CUresult rc)
{
    const char *name = NULL;

    cuGetErrorName(rc, &name);
    fprintf(stderr, "latflood: %s: %s\n", what, name != NULL ? name : "unknown error");
    return 1;
}

static CUresult launch(CUfunction f, unsigned blocks, unsigned long long *ns, CUstream s)
{
    void *params[] = { ns };

    return cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, s, params, NULL);
}

static int run_lat(CUfunction f, double secs, unsigned blocks, unsigned long long ns,
                   double gap_ms)
{
    static double ms[MAX_SAMPLES];
    double start = now_s(), t0;
    int n = 0;
    CUresult rc;

    while ((t0 = now_s()) < start + WARM_S + secs && n < MAX_SAMPLES) {
        if ((rc = launch(f, blocks, &ns, NULL)) != CUDA_SUCCESS)
            return fail("launch", rc);
        if ((rc = cuStreamSynchronize(NULL)) != CUDA_SUCCESS)
            return fail("synchronize", rc);
        if (t0 >= start + WARM_S)
            ms[n++] = (now_s() - t0) * 1e3;
        sleep_ms(gap_ms);
    }
    printf("{\"role\": \"lat\", \"secs\": %.3f, \"blocks\": %u, \"ms\": [", secs, blocks);
    for (int i = 0; i < n; i++)
        printf("%s%.4f", i ? ", " : "", ms[i]);
    printf("]}\n");
    return n > 0 ? 0 : 1;
}

static int run_flood(CUfunction f, double secs, unsigned blocks, unsigned long long ns)
{
    CUevent ev[2];
    double start = now_s(), t0 = 0, t;
    long done = 0;
    CUresult rc;

    if ((rc = cuEventCreate(&ev[0], CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS ||
        (rc = cuEventCreate(&ev[1], CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
        return fail("event", rc);
    for (long i = 0; (t = now_s()) < start + WARM_S + secs; i++) {
        if ((rc = launch(f, blocks, &ns, NULL)) != CUDA_SUCCESS ||
            (rc = cuEventRecord(ev[i % 2], NULL)) != CUDA_SUCCESS)
            return fail("launch", rc);
        if (i > 0 && (rc = cuEventSynchronize(ev[(i - 1) % 2])) != CUDA_SUCCESS)
            return fail("synchronize", rc);
        if (t0 == 0 && t >= start + WARM_S)
            t0 = t;
        done += t0 != 0 && i > 0;
    }
    if ((rc = cuCtxSynchronize()) != CUDA_SUCCESS)
        return fail("synchronize", rc);
    t = now_s() - t0;
    printf("{\"role\": \"flood\", \"secs\": %.3f, \"blocks\": %u, \"kernels\": %ld, "
           "\"kernels_per_s\": %.3f}\n", t, blocks, done, t0 != 0 ? (double)done / t : 0.0);
    return done > 0 ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: latflood lat SECS BLOCKS NS GAP_MS | latflood flood SECS BLOCKS NS\n");
    return 2;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUresult rc;
    int lat = argc == 6 && strcmp(argv[1], "lat") == 0;
    double secs;
    unsigned blocks;
    unsigned long long ns;

    if (!lat && !(argc == 5 && strcmp(argv[1], "flood") == 0))
        return usage();
    secs = atof(argv[2]);
    blocks = (unsigned)strtoul(argv[3], NULL, 10);
    ns = strtoull(argv[4], NULL, 10);
    if (secs <= 0 || blocks == 0)
        return usage();
    if ((rc = cuInit(0)) != CUDA_SUCCESS || (rc = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS ||
        (rc = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
        (rc = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS)
        return fail("context", rc);
    if ((rc = cuModuleLoadData(&mod, spin_fatbin)) != CUDA_SUCCESS ||
        (rc = cuModuleGetFunction(&f, mod, "spin")) != CUDA_SUCCESS)
        return fail("module", rc);
    return lat ? run_lat(f, secs, blocks, ns, atof(argv[5])) : run_flood(f, secs, blocks, ns);
}
