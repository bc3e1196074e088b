// A CUDA runtime program with nothing detshare-specific in it: device query, memory,
// copies, a kernel, and a checksum of the result.  Its output is the same natively and
// through detshare on a GPU (bench/run-on-gpu.sh compares them byte for byte); on the
// sim device kernels compute nothing, so only the copies' round trip is checked there.
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

__global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        y[i] = a * x[i] + y[i];
}

static unsigned long long checksum(const float *v, int n)
{
    unsigned long long h = 1469598103934665603ull;

    for (int i = 0; i < n; i++) {
        unsigned u;

        memcpy(&u, &v[i], 4);
        h = (h ^ u) * 1099511628211ull;
    }
    return h;
}

int main()
{
    const int n = 1 << 22;
    float *x, *y, *hx = (float *)malloc(n * 4), *hy = (float *)malloc(n * 4), *back = (float *)malloc(n * 4);
    cudaDeviceProp p;
    int count;

    CHECK(cudaGetDeviceCount(&count));
    CHECK(cudaGetDeviceProperties(&p, 0));
    printf("devices %d; compute capability %d.%d\n", count, p.major, p.minor);
    for (int i = 0; i < n; i++) {
        hx[i] = (float)i / 7.0f;
        hy[i] = 1.0f / (float)(i + 1);
    }
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMalloc(&y, n * 4));
    CHECK(cudaMemcpy(x, hx, n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, hy, n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(back, y, n * 4, cudaMemcpyDeviceToHost));
    printf("round trip of %d floats: %s\n", n, memcmp(back, hy, n * 4) == 0 ? "exact" : "DIFFERENT");
    for (int rep = 0; rep < 10; rep++)
        saxpy<<<(n + 255) / 256, 256>>>(2.5f, x, y, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(hy, y, n * 4, cudaMemcpyDeviceToHost));
    printf("y[12345] = %.9g\n", hy[12345]);
    printf("checksum of y: %016llx\n", checksum(hy, n));
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    free(hx);
    free(hy);
    free(back);
    return 0;
}
