// A CUDA runtime program that uses two devices the way multi-GPU code does: the device
// count and each device's properties, memory on each, a copy from one device to the
// other on the source device's stream ordered by events both ways (as PyTorch's
// tensor.to("cuda:1") does), cudaMemcpyPeer, and the bytes back on the host.  With one
// device it says so and ends.  Through detshare each device is one server's
// (DETSHARE_SERVER=a,b).
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                                    \
    do {                                                                               \
        cudaError_t e_ = (call);                                                       \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorString(e_));                                           \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

enum { N = 1 << 20 };

static unsigned char host[N], back[N];

int main()
{
    int count = 0, can = 0;
    unsigned char *a, *b, *c;
    cudaStream_t s0, s1;
    cudaEvent_t ready, done;

    CHECK(cudaGetDeviceCount(&count));
    printf("devices: %d\n", count);
    if (count < 2) {
        printf("one device: nothing to copy between\n");
        return 0;
    }
    for (int d = 0; d < 2; d++) {
        cudaDeviceProp p;

        CHECK(cudaGetDeviceProperties(&p, d));
        printf("device %d: %d SMs\n", d, p.multiProcessorCount);
    }
    CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
    printf("peer access 0 -> 1: %d\n", can);
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 7 + 3);

    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&b, N));
    {
        int cur = -1;
        cudaPointerAttributes at;

        CHECK(cudaGetDevice(&cur));
        CHECK(cudaPointerGetAttributes(&at, b));
        printf("after cudaSetDevice(1): current device %d, memory on device %d\n", cur, at.device);
    }
    CHECK(cudaMalloc(&c, N));
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CHECK(cudaMemsetAsync(b, 0, N, s1));
    CHECK(cudaEventRecord(ready, s1));

    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&a, N));
    CHECK(cudaStreamCreate(&s0));
    CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CHECK(cudaMemcpyAsync(a, host, N, cudaMemcpyHostToDevice, s0));
    CHECK(cudaStreamWaitEvent(s0, ready, 0));
    CHECK(cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, s0));
    CHECK(cudaEventRecord(done, s0));

    CHECK(cudaSetDevice(1));
    CHECK(cudaStreamWaitEvent(s1, done, 0));
    CHECK(cudaMemcpyAsync(back, b, N, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamSynchronize(s1));
    printf("copy on the source's stream: %s\n", memcmp(host, back, N) ? "DIFFERS" : "exact");

    CHECK(cudaMemcpyPeer(c, 1, a, 0, N));
    memset(back, 0, N);
    CHECK(cudaMemcpy(back, c, N, cudaMemcpyDeviceToHost));
    printf("cudaMemcpyPeer: %s\n", memcmp(host, back, N) ? "DIFFERS" : "exact");
    return 0;
}
