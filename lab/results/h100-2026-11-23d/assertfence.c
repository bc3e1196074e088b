/* Run 86: the executor's fence pattern around a failing device assert, natively: green context,
 * kernel on stream s, event 'done' recorded after it; with argv[2]=="arm", a second stream
 * waits on done and gets a host function (as ds__cuda_fence_arm); then cuEventQuery until
 * not NOT_READY, then cuEventSynchronize (as ds__cuda_fence_query's print_out). */
#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void CUDA_CB wake(void *p) { (void)p; }
int main(int argc, char **argv)
{
    CUdevice d; CUcontext c; CUmodule m; CUfunction f; int bad = 1; void *args[] = { &bad };
    CUdevResource sms; CUdevResourceDesc desc; CUgreenCtx g; CUstream s, own; CUevent done; CUresult r;
    int arm = argc > 2 && !strcmp(argv[2], "arm");
    if (cuInit(0) || cuDeviceGet(&d, 0)) return 2;
    r = cuDeviceGetDevResource(d, &sms, CU_DEV_RESOURCE_TYPE_SM);
    if (!r) r = cuDevResourceGenerateDesc(&desc, &sms, 1);
    if (!r) r = cuGreenCtxCreate(&g, desc, d, CU_GREEN_CTX_DEFAULT_STREAM);
    if (!r) r = cuCtxFromGreenCtx(&c, g);
    if (!r) r = cuCtxSetCurrent(c);
    if (!r) r = cuGreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, 0);
    if (!r) r = cuGreenCtxStreamCreate(&own, g, CU_STREAM_NON_BLOCKING, 0);
    if (!r) r = cuEventCreate(&done, CU_EVENT_DISABLE_TIMING);
    if (r) { printf("setup failed %d\n", r); return 2; }
    if (cuModuleLoad(&m, argv[1]) || cuModuleGetFunction(&f, m, "insist")) return 3;
    printf("launch -> %d\n", cuLaunchKernel(f, 1,1,1, 1,1,1, 0, s, args, NULL));
    printf("record -> %d\n", cuEventRecord(done, s));
    if (arm) {
        printf("wait -> %d\n", cuStreamWaitEvent(own, done, 0));
        printf("hostfunc -> %d\n", cuLaunchHostFunc(own, wake, NULL));
    }
    fflush(stdout);
    double t = now();
    int n = 0;
    while ((r = cuEventQuery(done)) == CUDA_ERROR_NOT_READY) { n++; usleep(50); }
    printf("query -> %d after %.3f s, %d polls\n", r, now() - t, n); fflush(stdout);
    t = now();
    r = cuEventSynchronize(done);
    printf("event sync -> %d after %.3f s\n", r, now() - t); fflush(stdout);
    return 0;
}
