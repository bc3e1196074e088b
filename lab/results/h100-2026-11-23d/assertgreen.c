/* Run 83: a failing device assert on a green context's stream, natively (under MPS when the environment says so). */
#include <cuda.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv)
{
    CUdevice d; CUcontext c; CUmodule m; CUfunction f; int bad = 1; void *args[] = { &bad };
    CUdevResource sms; CUdevResourceDesc desc; CUgreenCtx g; CUstream s; CUdeviceptr p; CUresult r;
    (void)argc;
    if (cuInit(0) || cuDeviceGet(&d, 0)) { printf("init failed\n"); return 2; }
    r = cuDeviceGetDevResource(d, &sms, CU_DEV_RESOURCE_TYPE_SM);
    if (!r) r = cuDevResourceGenerateDesc(&desc, &sms, 1);
    if (!r) r = cuGreenCtxCreate(&g, desc, d, CU_GREEN_CTX_DEFAULT_STREAM);
    if (!r) r = cuCtxFromGreenCtx(&c, g);
    if (!r) r = cuCtxSetCurrent(c);
    if (!r) r = cuGreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, 0);
    if (r) { printf("green setup failed %d\n", r); return 2; }
    if (cuModuleLoad(&m, argv[1]) || cuModuleGetFunction(&f, m, "insist")) { printf("module failed\n"); return 3; }
    printf("launch -> %d\n", cuLaunchKernel(f, 1,1,1, 1,1,1, 0, s, args, NULL)); fflush(stdout);
    double t = now();
    r = cuStreamSynchronize(s);
    printf("stream sync -> %d after %.3f s\n", r, now() - t); fflush(stdout);
    t = now();
    r = cuCtxSynchronize();
    printf("ctx sync -> %d after %.3f s\n", r, now() - t); fflush(stdout);
    t = now();
    r = cuMemAlloc(&p, 64);
    printf("alloc -> %d after %.3f s\n", r, now() - t); fflush(stdout);
    return 0;
}
