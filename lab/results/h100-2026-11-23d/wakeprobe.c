/* Run 87: ways to be woken when the device passes a point, natively (MPS when the
 * environment says so).  argv[2]: hostfunc (the executor's way: a second stream waits on
 * the event, then a host function writes an eventfd) or waker (the second stream waits on
 * the event, records a blocking-sync event, and a thread synchronises on it, then writes
 * the eventfd).  argv[3]: 1 = the kernel fails a device assert (does the process hang?),
 * 0 = 300 rounds timed, launch to wake, median and p90 in us. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static int efd;
static CUevent wev;
static CUcontext ctx;
static void CUDA_CB wake(void *p) { (void)p; eventfd_write(efd, 1); }
static void *waker(void *p) { (void)p; cuCtxSetCurrent(ctx); CUresult r = cuEventSynchronize(wev); if (r) fprintf(stderr, "waker sync -> %d\n", r); eventfd_write(efd, 1); return NULL; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv)
{
    CUdevice d; CUmodule m; CUfunction f; int bad = atoi(argv[3]); void *args[] = { &bad };
    CUdevResource sms; CUdevResourceDesc desc; CUgreenCtx g; CUstream s, own; CUevent done; CUresult r;
    int hf = !strcmp(argv[2], "hostfunc"), rounds = bad ? 1 : 300;
    double lat[300];
    if (cuInit(0) || cuDeviceGet(&d, 0)) return 2;
    r = cuDeviceGetDevResource(d, &sms, CU_DEV_RESOURCE_TYPE_SM);
    if (!r) r = cuDevResourceGenerateDesc(&desc, &sms, 1);
    if (!r) r = cuGreenCtxCreate(&g, desc, d, CU_GREEN_CTX_DEFAULT_STREAM);
    if (!r) r = cuCtxFromGreenCtx(&ctx, g);
    if (!r) r = cuCtxSetCurrent(ctx);
    if (!r) r = cuGreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, 0);
    if (!r) r = cuGreenCtxStreamCreate(&own, g, CU_STREAM_NON_BLOCKING, 0);
    if (!r) r = cuEventCreate(&done, CU_EVENT_DISABLE_TIMING);
    if (!r) r = cuEventCreate(&wev, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
    if (r) { printf("setup failed %d\n", r); return 2; }
    if (cuModuleLoad(&m, argv[1]) || cuModuleGetFunction(&f, m, "insist")) return 3;
    efd = eventfd(0, 0);
    for (int i = 0; i < rounds; i++) {
        pthread_t th;
        eventfd_t v;
        double t = now();
        cuLaunchKernel(f, 1,1,1, 1,1,1, 0, s, args, NULL);
        cuEventRecord(done, s);
        cuStreamWaitEvent(own, done, 0);
        if (hf) cuLaunchHostFunc(own, wake, NULL);
        else { cuEventRecord(wev, own); pthread_create(&th, NULL, waker, NULL); }
        eventfd_read(efd, &v);
        lat[i] = (now() - t) * 1e6;
        if (!hf) pthread_join(th, NULL);
        r = cuEventQuery(done);
        if (bad) { printf("woken after %.3f s; query -> %d\n", lat[i] / 1e6, r); fflush(stdout); }
    }
    if (bad) { printf("event sync -> %d\n", cuEventSynchronize(done)); return 0; }
    qsort(lat, rounds, sizeof(double), cmp);
    printf("%s: launch to wake median %.1f us, p90 %.1f us\n", argv[2], lat[rounds / 2], lat[rounds * 9 / 10]);
    return 0;
}
