// A tenant that keeps one block busy with a fixed amount of arithmetic, repeated: it
// occupies few SMs for long.  Two of them side by side finish together under MPS and
// take turns without it.  (A clock64 loop would not do: the SM clock runs on while
// another context holds the GPU, so a time-sliced kernel would still end on time.)
// usage: spin ITERS REPEATS   prints the wall time of all repeats in ms
//        spin 0 REPEATS MS    first finds ITERS for about MS per launch, alone
#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void work(long long iters, float *out)
{
    float x = threadIdx.x;

    for (long long i = 0; i < iters; i++)
        x = x * 0.999999f + 1e-7f;
    out[threadIdx.x] = x;
}

static double run(long long iters, int repeats, float *d)
{
    auto t0 = std::chrono::steady_clock::now();

    for (int i = 0; i < repeats; i++)
        work<<<1, 32>>>(iters, d);
    if (cudaDeviceSynchronize() != cudaSuccess)
        return -1;
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char **argv)
{
    long long iters = argc > 1 ? atoll(argv[1]) : 0;
    int repeats = argc > 2 ? atoi(argv[2]) : 5, ms = argc > 3 ? atoi(argv[3]) : 300;
    float *d;

    if (cudaMalloc(&d, 32 * sizeof(float)) != cudaSuccess) {
        fprintf(stderr, "spin: no device\n");
        return 1;
    }
    if (iters == 0) {
        double t = run(1 << 20, 1, d);

        t = run(1 << 22, 1, d);
        iters = (long long)((double)(1 << 22) * ms / (t > 0 ? t : 1));
    }
    double took = run(iters, repeats, d);
    printf("{\"iters\": %lld, \"repeats\": %d, \"wall_ms\": %.1f, \"ok\": %s}\n", iters, repeats,
           took, took >= 0 ? "true" : "false");
    return took >= 0 ? 0 : 1;
}
