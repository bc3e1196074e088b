// cuRAND's host API: a Philox generator with a fixed seed fills device memory with normal
// deviates; the first values and a checksum are printed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <curand.h>

#define CHECK(call)                                                                    \
    do {                                                                               \
        cudaError_t e_ = (call);                                                       \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorString(e_));                                           \
            return 1;                                                                  \
        }                                                                              \
    } while (0)
#define CHECK_RAND(call)                                                               \
    do {                                                                               \
        curandStatus_t s_ = (call);                                                    \
        if (s_ != CURAND_STATUS_SUCCESS) {                                             \
            fprintf(stderr, "%s:%d %s: cuRAND status %d\n", __FILE__, __LINE__, #call, \
                    (int)s_);                                                          \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main()
{
    const size_t n = 1 << 20;
    float *d, *h = (float *)malloc(n * sizeof(float));
    curandGenerator_t g;
    unsigned long long sum = 1469598103934665603ull;

    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK_RAND(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CHECK_RAND(curandSetPseudoRandomGeneratorSeed(g, 20261122ull));
    CHECK_RAND(curandGenerateNormal(g, d, n, 0.0f, 1.0f));
    CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        unsigned u;

        memcpy(&u, &h[i], 4);
        sum = (sum ^ u) * 1099511628211ull;
    }
    printf("normal deviates: %.9g %.9g %.9g ... checksum %016llx\n", h[0], h[1], h[2], sum);
    CHECK_RAND(curandDestroyGenerator(g));
    CHECK(cudaFree(d));
    return 0;
}
