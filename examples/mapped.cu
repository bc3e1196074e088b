// Mapped (zero-copy) host memory through the CUDA runtime: the kernel writes its results
// straight into page-locked host memory, which the host reads without a copy.
#include <cstdio>
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

__global__ void collatz_steps(const unsigned *in, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n) {
        unsigned long long x = in[i];
        unsigned steps = 0;

        while (x != 1 && steps < 1000) {
            x = (x & 1) ? 3 * x + 1 : x / 2;
            steps++;
        }
        out[i] = steps;
    }
}

int main()
{
    const int n = 1 << 16;
    unsigned *in, *out, *d_in, *d_out;
    unsigned long long sum = 0;

    CHECK(cudaHostAlloc(&in, n * sizeof(unsigned), cudaHostAllocMapped));
    CHECK(cudaHostAlloc(&out, n * sizeof(unsigned), cudaHostAllocMapped));
    for (int i = 0; i < n; i++)
        in[i] = (unsigned)i + 1;
    CHECK(cudaHostGetDevicePointer(&d_in, in, 0));
    CHECK(cudaHostGetDevicePointer(&d_out, out, 0));
    collatz_steps<<<n / 256, 256>>>(d_in, d_out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++)
        sum += out[i];
    printf("collatz steps of 1..%d written into mapped host memory: out[26] = %u, sum %llu\n", n,
           out[26], sum);
    CHECK(cudaFreeHost(in));
    CHECK(cudaFreeHost(out));
    return 0;
}
