/* Run 64: launch cost by current context x stream's context (green whole-device vs primary). */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define OK(x) do { CUresult r_ = (x); if (r_) { printf("%s -> %d\n", #x, r_); exit(1); } } while (0)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static char *slurp(const char *p) { FILE *f = fopen(p, "rb"); fseek(f, 0, 2); long n = ftell(f); fseek(f, 0, 0); char *b = malloc(n); if (fread(b, 1, n, f) != (size_t)n) exit(1); fclose(f); return b; }
enum { N = 100000 };
int main(int argc, char **argv)
{
    CUdevice dev; CUcontext prim, gc; CUgreenCtx g; CUdevResource sms; CUdevResourceDesc desc;
    CUstream gs, ps; CUlibrary lib; CUkernel k; CUdeviceptr d;
    struct { CUdeviceptr d; int v, n; } buf; size_t bytes = sizeof(buf);
    (void)argc;
    OK(cuInit(0)); OK(cuDeviceGet(&dev, 0));
    OK(cuDevicePrimaryCtxRetain(&prim, dev));
    OK(cuCtxSetCurrent(prim));
    OK(cuStreamCreate(&ps, CU_STREAM_NON_BLOCKING));
    OK(cuDeviceGetDevResource(dev, &sms, CU_DEV_RESOURCE_TYPE_SM));
    OK(cuDevResourceGenerateDesc(&desc, &sms, 1));
    OK(cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    OK(cuCtxFromGreenCtx(&gc, g));
    OK(cuGreenCtxStreamCreate(&gs, g, CU_STREAM_NON_BLOCKING, 0));
    char *img = slurp(argv[1]);
    OK(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "fill"));
    OK(cuMemAlloc(&d, 64));
    buf.d = d; buf.v = 1; buf.n = 1;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END };
    for (int rep = 0; rep < 3; rep++) {
        struct { const char *name; CUcontext cur; CUstream s; } v[] = {
            { "cur green, green stream", gc, gs }, { "cur primary, primary stream", prim, ps },
            { "cur primary, green stream", prim, gs }, { "cur green, primary stream", gc, ps } };
        for (int i = 0; i < 4; i++) {
            double t;
            OK(cuCtxSetCurrent(v[i].cur));
            OK(cuStreamSynchronize(v[i].s)); t = now();
            for (int j = 0; j < N; j++) OK(cuLaunchKernel((CUfunction)k, 1,1,1, 32,1,1, 0, v[i].s, NULL, extra));
            OK(cuStreamSynchronize(v[i].s));
            printf("%-32s %.3f us/launch\n", v[i].name, (now() - t) / N * 1e6);
        }
    }
    return 0;
}
