// A tenant whose kernels keep every SM they are given busy: BLOCKS blocks of 256 threads,
// each doing the same fixed arithmetic, far more blocks than fit at once.  Its time
// therefore follows the number of SMs it runs on, which is how SM partitions are checked
// from outside (%smid is virtualised under MPS).
// usage: burn BLOCKS ITERS REPEATS [graph]   prints the wall time of REPEATS launches in
//                                            ms; with graph, of REPEATS launches of a graph
//                                            holding the kernel (do graphs keep to the
//                                            partition their stream's work runs on?)
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
    if (argc != 4 && !(argc == 5 && strcmp(argv[4], "graph") == 0))
        return 2;
    int blocks = atoi(argv[1]), repeats = atoi(argv[3]), graph = argc == 5;
    long long iters = atoll(argv[2]);
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t x = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    work<<<blocks, 256, 0, s>>>(1, d);
    if (graph) {
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        work<<<blocks, 256, 0, s>>>(iters, d);
        if (cudaStreamEndCapture(s, &g) != cudaSuccess ||
            cudaGraphInstantiate(&x, g, 0) != cudaSuccess || cudaGraphLaunch(x, s) != cudaSuccess)
            return 1;
    }
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats; i++) {
        if (graph)
            cudaGraphLaunch(x, s);
        else
            work<<<blocks, 256, 0, s>>>(iters, d);
    }
    cudaError_t e = cudaDeviceSynchronize();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    printf("{\"blocks\": %d, \"iters\": %lld, \"repeats\": %d, \"graph\": %s, \"wall_ms\": %.1f, "
           "\"ok\": %s}\n", blocks, iters, repeats, graph ? "true" : "false", ms,
           e == cudaSuccess ? "true" : "false");
    return e == cudaSuccess ? 0 : 1;
}
