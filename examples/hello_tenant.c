/*
 * A first tenant: an ordinary CUDA driver-API program, nothing detshare-specific in it.
 * It finds the device, moves data through device memory on two streams, times a copy
 * with events and checks every byte it gets back.
 *
 *   detshare-server &           # or --device sim on a machine without a GPU
 *   LD_LIBRARY_PATH=build/client ./build/examples/hello_tenant
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                         \
    do {                                                                    \
        CUresult rc_ = (call);                                              \
        if (rc_ != CUDA_SUCCESS) {                                          \
            const char *name_ = NULL;                                       \
            cuGetErrorName(rc_, &name_);                                    \
            fprintf(stderr, "%s failed: %s\n", #call, name_ ? name_ : "?"); \
            return 1;                                                       \
        }                                                                   \
    } while (0)

int main(void)
{
    const size_t n = 16u << 20;
    CUdevice dev;
    CUcontext ctx;
    CUstream s1, s2;
    CUevent start, stop;
    CUdeviceptr a, b;
    size_t free_b, total_b;
    unsigned char *host, *back;
    char name[256];
    int sms, major, minor;
    float ms;

    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDeviceGetName(name, sizeof(name), dev));
    CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    printf("device 0: %s, %d SMs, compute capability %d.%d\n", name, sms, major, minor);

    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuMemGetInfo(&free_b, &total_b));
    printf("memory: %zu MiB free of %zu MiB\n", free_b >> 20, total_b >> 20);

    CHECK(cuMemAllocHost((void **)&host, n));
    back = malloc(n);
    if (back == NULL)
        return 1;
    for (size_t i = 0; i < n; i++)
        host[i] = (unsigned char)(i * 31 + 7);
    CHECK(cuMemAlloc(&a, n));
    CHECK(cuMemAlloc(&b, n));
    CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));

    /* Upload on s1, then copy a -> b on s2 once s1's upload is done, then download. */
    CHECK(cuEventRecord(start, s1));
    CHECK(cuMemcpyHtoDAsync(a, host, n, s1));
    CHECK(cuEventRecord(stop, s1));
    CHECK(cuStreamWaitEvent(s2, stop, 0));
    CHECK(cuMemcpyDtoDAsync(b, a, n, s2));
    CHECK(cuMemcpyDtoHAsync(back, b, n, s2));
    CHECK(cuStreamSynchronize(s2));
    CHECK(cuEventElapsedTime(&ms, start, stop));
    printf("copied %zu MiB host -> device in %.3f ms (%.1f GB/s), device -> device -> host\n",
           n >> 20, ms, (double)n / (ms * 1e6));
    if (memcmp(host, back, n) != 0) {
        printf("MISMATCH: the bytes that came back differ\n");
        return 1;
    }
    printf("all %zu bytes came back identical\n", n);

    CHECK(cuMemsetD32(a, 0xdecafbad, n / 4));
    CHECK(cuMemcpyDtoH(back, a, 8));
    printf("memset: first word 0x%08x\n", *(unsigned *)back);

    CHECK(cuEventDestroy(start));
    CHECK(cuEventDestroy(stop));
    CHECK(cuStreamDestroy(s1));
    CHECK(cuStreamDestroy(s2));
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    CHECK(cuMemFreeHost(host));
    free(back);
    CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("done\n");
    return 0;
}
