// cuBLAS through the CUDA runtime: a single-precision GEMM and a double-precision one on
// deterministic inputs, printed as checksums of the results.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cublas_v2.h>
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
#define CHECK_BLAS(call)                                                               \
    do {                                                                               \
        cublasStatus_t s_ = (call);                                                    \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                             \
            fprintf(stderr, "%s:%d %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, \
                    (int)s_);                                                          \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

static unsigned long long checksum(const void *p, size_t bytes)
{
    const unsigned char *b = (const unsigned char *)p;
    unsigned long long h = 1469598103934665603ull;

    for (size_t i = 0; i < bytes; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

int main()
{
    const int n = 512;
    size_t fs = (size_t)n * n * sizeof(float), ds = (size_t)n * n * sizeof(double);
    float *ha = (float *)malloc(fs), *hc = (float *)malloc(fs), *a, *c;
    double *hda = (double *)malloc(ds), *hdc = (double *)malloc(ds), *da, *dc;
    const float one = 1.0f, zero = 0.0f;
    const double done = 1.0, dzero = 0.0;
    cublasHandle_t h;

    for (int i = 0; i < n * n; i++) {
        ha[i] = (float)(((long long)i * 7919) % 1000) / 1000.0f - 0.5f;
        hda[i] = (double)(((long long)i * 104729) % 997) / 997.0 - 0.5;
    }
    CHECK_BLAS(cublasCreate(&h));
    CHECK(cudaMalloc(&a, fs));
    CHECK(cudaMalloc(&c, fs));
    CHECK(cudaMalloc(&da, ds));
    CHECK(cudaMalloc(&dc, ds));
    CHECK(cudaMemcpy(a, ha, fs, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(da, hda, ds, cudaMemcpyHostToDevice));
    CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &one, a, n, a, n, &zero, c, n));
    CHECK_BLAS(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &done, da, n, da, n, &dzero, dc, n));
    CHECK(cudaMemcpy(hc, c, fs, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hdc, dc, ds, cudaMemcpyDeviceToHost));
    printf("sgemm %dx%d: c[777] = %.9g, checksum %016llx\n", n, n, hc[777], checksum(hc, fs));
    printf("dgemm %dx%d: c[777] = %.17g, checksum %016llx\n", n, n, hdc[777], checksum(hdc, ds));
    CHECK_BLAS(cublasDestroy(h));
    CHECK(cudaFree(a));
    CHECK(cudaFree(c));
    CHECK(cudaFree(da));
    CHECK(cudaFree(dc));
    return 0;
}
