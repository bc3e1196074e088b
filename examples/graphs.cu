// CUDA graphs: a chain of kernels captured from a stream, instantiated once and replayed.
#include <cstdio>
#include <cstdlib>
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

__global__ void step(int *v, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        v[i] = v[i] * 3 + k + i % 7;
}

int main()
{
    const int n = 1 << 16;
    int *d, *h = (int *)malloc(n * sizeof(int));
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t e;
    long long sum = 0;

    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMemsetAsync(d, 0, n * sizeof(int), s));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < 8; k++)
        step<<<n / 256, 256, 0, s>>>(d, n, k);
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&e, g, 0));
    for (int rep = 0; rep < 5; rep++)
        CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        sum += h[i];
    printf("graph of 8 kernels, 5 replays: v[100] = %d, sum %lld\n", h[100], sum);
    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d));
    return 0;
}
