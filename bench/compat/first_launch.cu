// How long one kernel takes between two events, launch after launch, as the CUDA samples
// that time a single kernel measure it (immaTensorCoreGemm, simpleTexture).  Through
// detshare those samples reported a tenth of their native throughput (run 121): this
// tells a cost paid by the first launch of a kernel from one paid by every launch.
//
//   first_launch [ITERATIONS]    prints: i event_ms host_us
// event_ms: between events recorded right before and after the launch; host_us: the
// launch call and cudaEventSynchronize(stop), timed on the host.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// About a millisecond of work on every SM: enough that the kernel, not the launch,
// dominates natively.
__global__ void spin(float *out, int rounds)
{
    float v = threadIdx.x;
    for (int i = 0; i < rounds; i++)
        v = v * 1.000001f + 0.5f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

static int check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        fprintf(stderr, "first_launch: %s: %s\n", what, cudaGetErrorString(e));
    return e != cudaSuccess;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 6;
    int sms = 0, blocks;
    float *out;
    cudaEvent_t a, b;

    if (check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute"))
        return 1;
    blocks = sms * 8;
    if (check(cudaMalloc(&out, (size_t)blocks * 256 * sizeof(float)), "malloc") ||
        check(cudaEventCreate(&a), "event") || check(cudaEventCreate(&b), "event"))
        return 1;
    // As the samples do: an attribute of the kernel set before the timed launch, so the
    // module is loaded (natively) before the first event.
    if (check(cudaFuncSetAttribute(spin, cudaFuncAttributePreferredSharedMemoryCarveout, 0),
              "attribute"))
        return 1;
    cudaDeviceSynchronize();
    for (int i = 0; i < iters; i++) {
        float ms = 0;
        auto t0 = std::chrono::steady_clock::now();
        cudaEventRecord(a);
        spin<<<blocks, 256>>>(out, 20000);
        cudaEventRecord(b);
        if (check(cudaEventSynchronize(b), "sync") || check(cudaEventElapsedTime(&ms, a, b), "elapsed"))
            return 1;
        auto t1 = std::chrono::steady_clock::now();
        printf("%d %.3f %.1f\n", i, ms,
               std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return 0;
}
