/* Run 76: a kernel whose assert fails, then a context synchronize: what it returns and how long it takes. */
#include <cuda.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv)
{
    CUdevice d; CUcontext c; CUmodule m; CUfunction f; int bad = 1; void *args[] = { &bad };
    CUdeviceptr p;
    (void)argc;
    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c)) { printf("init failed\n"); return 2; }
    if (cuModuleLoad(&m, argv[1]) || cuModuleGetFunction(&f, m, "insist")) { printf("module failed\n"); return 3; }
    printf("launch -> %d\n", cuLaunchKernel(f, 1,1,1, 1,1,1, 0, NULL, args, NULL)); fflush(stdout);
    double t = now();
    CUresult r = cuCtxSynchronize();
    printf("sync -> %d after %.3f s\n", r, now() - t); fflush(stdout);
    t = now();
    r = cuMemAlloc(&p, 64);
    printf("alloc -> %d after %.3f s\n", r, now() - t); fflush(stdout);
    return 0;
}
