// Streams, events and pinned memory through the CUDA runtime: a pipeline of chunks, each
// uploaded, transformed and downloaded on one of four streams, ordered with events.
#include <cstdio>
#include <cstdlib>
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

__global__ void square_plus(const int *in, int *out, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        out[i] = in[i] * in[i] + k;
}

int main()
{
    const int chunks = 16, n = 1 << 18, ns = 4;
    int *h_in, *h_out, *d_in, *d_out;
    cudaStream_t s[ns];
    cudaEvent_t uploaded[chunks];
    long long sum = 0;
    unsigned long long h = 1469598103934665603ull;

    CHECK(cudaMallocHost(&h_in, (size_t)chunks * n * 4));
    CHECK(cudaMallocHost(&h_out, (size_t)chunks * n * 4));
    CHECK(cudaMalloc(&d_in, (size_t)chunks * n * 4));
    CHECK(cudaMalloc(&d_out, (size_t)chunks * n * 4));
    for (int i = 0; i < chunks * n; i++)
        h_in[i] = (i * 37) % 1001 - 500;
    for (int i = 0; i < ns; i++)
        CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    for (int c = 0; c < chunks; c++) {
        cudaStream_t st = s[c % ns], next = s[(c + 1) % ns];
        size_t off = (size_t)c * n;

        CHECK(cudaEventCreateWithFlags(&uploaded[c], cudaEventDisableTiming));
        CHECK(cudaMemcpyAsync(d_in + off, h_in + off, n * 4, cudaMemcpyHostToDevice, st));
        CHECK(cudaEventRecord(uploaded[c], st));
        // The transform runs on the next stream, after the upload it depends on.
        CHECK(cudaStreamWaitEvent(next, uploaded[c], 0));
        square_plus<<<n / 256, 256, 0, next>>>(d_in + off, d_out + off, n, c);
        CHECK(cudaMemcpyAsync(h_out + off, d_out + off, n * 4, cudaMemcpyDeviceToHost, next));
    }
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < chunks * n; i++) {
        sum += h_out[i];
        h = (h ^ (unsigned)h_out[i]) * 1099511628211ull;
    }
    printf("%d chunks on %d streams: sum %lld, checksum %016llx\n", chunks, ns, sum, h);
    for (int i = 0; i < ns; i++)
        CHECK(cudaStreamDestroy(s[i]));
    for (int c = 0; c < chunks; c++)
        CHECK(cudaEventDestroy(uploaded[c]));
    CHECK(cudaFreeHost(h_in));
    CHECK(cudaFreeHost(h_out));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    return 0;
}
