// The stream-ordered allocator: buffers allocated and freed in stream order from the
// device's default pool and from a pool of the program's own, bytes carried through them
// with async copies, and the pool's own accounting read back.
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

// One round: two buffers from `pool` on stream s, host bytes in, device to device,
// back out; 0 when they came back exact.
static int round_trip(cudaMemPool_t pool, cudaStream_t s, unsigned char *in,
                      unsigned char *out, size_t n, int *exact)
{
    void *a, *b;

    CHECK(cudaMallocFromPoolAsync(&a, n, pool, s));
    CHECK(cudaMallocAsync(&b, n, s));
    CHECK(cudaMemcpyAsync(a, in, n, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaFreeAsync(a, s));
    CHECK(cudaMemcpyAsync(out, b, n, cudaMemcpyDeviceToHost, s));
    CHECK(cudaFreeAsync(b, s));
    CHECK(cudaStreamSynchronize(s));
    *exact = memcmp(in, out, n) == 0;
    return 0;
}

int main()
{
    const size_t n = 8 << 20;
    const int rounds = 6;
    unsigned char *in, *out;
    cudaMemPool_t def, mine;
    cudaMemPoolProps props = {};
    unsigned long long threshold = 64ull << 20, used = 1, high = 0;
    cudaStream_t s;
    int supported = 0, exact = 0, all = 1;

    CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
    CHECK(cudaMallocHost(&in, n));
    CHECK(cudaMallocHost(&out, n));
    for (size_t i = 0; i < n; i++)
        in[i] = (unsigned char)(i * 7 + (i >> 13));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaDeviceGetDefaultMemPool(&def, 0));
    CHECK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &threshold));
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK(cudaMemPoolCreate(&mine, &props));
    for (int r = 0; r < rounds; r++) {
        if (round_trip(r % 2 ? mine : def, s, in, out, n, &exact) != 0)
            return 1;
        all &= exact;
    }
    CHECK(cudaMemPoolGetAttribute(mine, cudaMemPoolAttrUsedMemCurrent, &used));
    CHECK(cudaMemPoolGetAttribute(mine, cudaMemPoolAttrUsedMemHigh, &high));
    printf("pools supported: %d\n", supported);
    printf("stream-ordered allocations: %d rounds of %zu MiB, round trips %s\n", rounds,
           n >> 20, all ? "exact" : "CHANGED");
    printf("own pool: %llu bytes in use after the frees, high mark %s\n",
           (unsigned long long)used, high >= n ? "at least one buffer" : "too low");
    CHECK(cudaMemPoolDestroy(mine));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFreeHost(in));
    CHECK(cudaFreeHost(out));
    return all && used == 0 && high >= n ? 0 : 1;
}
