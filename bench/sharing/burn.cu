// A tenant whose kernels keep every SM they are given busy: BLOCKS blocks of 256 threads,
// each doing the same fixed arithmetic, far more blocks than fit at once.  Its time
// therefore follows the number of SMs it runs on, which is how SM partitions are checked
// from outside (%smid is virtualised under MPS).
// usage: burn BLOCKS ITERS REPEATS   prints the wall time of REPEATS launches in ms
//        burn idle SECONDS           holds a context (and so a partition), launching nothing
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

__global__ void work(long long iters, float *out)
{
    float x = threadIdx.x, y = blockIdx.x;

    for (long long i = 0; i < iters; i++) {
        x = x * 0.999999f + 1e-7f;
        y = y * 0.999998f + 2e-7f;
    }
    if (x + y == 0.0f)
        out[0] = x;
}

int main(int argc, char **argv)
{
    float *d;

    if (cudaMalloc(&d, sizeof(float)) != cudaSuccess) {
        fprintf(stderr, "burn: no device\n");
        return 1;
    }
    if (argc == 3 && strcmp(argv[1], "idle") == 0) {
        work<<<1, 32>>>(1, d);
        cudaDeviceSynchronize();
        std::this_thread::sleep_for(std::chrono::duration<double>(atof(argv[2])));
        return 0;
    }
    if (argc != 4)
        return 2;
    int blocks = atoi(argv[1]), repeats = atoi(argv[3]);
    long long iters = atoll(argv[2]);
    work<<<blocks, 256>>>(1, d);
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats; i++)
        work<<<blocks, 256>>>(iters, d);
    cudaError_t e = cudaDeviceSynchronize();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    printf("{\"blocks\": %d, \"iters\": %lld, \"repeats\": %d, \"wall_ms\": %.1f, \"ok\": %s}\n",
           blocks, iters, repeats, ms, e == cudaSuccess ? "true" : "false");
    return e == cudaSuccess ? 0 : 1;
}
