// The tenant of mechanism-check.sh's gate part: it puts the GPU's clock on the host's
// (gputime.cuh), then launches N short kernels back to back, each recording when it
// started, and prints those start times on the host's clock, one per line, after a line
// "offset_ns OFFSET spread_ns SPREAD".
// usage: gatelat N
#include "gputime.cuh"

#include <cstdio>
#include <cstdlib>

__global__ void stamp(unsigned long long *starts, int i)
{
    starts[i] = gpu_now();
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    unsigned long long *starts, *host;
    long long best, spread;

    if (gpu_clock_offset(20, &best, &spread) != 0 ||
        cudaMalloc(&starts, n * sizeof(*starts)) != cudaSuccess) {
        fprintf(stderr, "gatelat: no device memory\n");
        return 1;
    }
    for (int i = 0; i < n; i++)
        stamp<<<1, 1>>>(starts, i);
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    host = (unsigned long long *)malloc(n * sizeof(*host));
    cudaMemcpy(host, starts, n * sizeof(*host), cudaMemcpyDeviceToHost);
    printf("offset_ns %lld spread_ns %lld\n", best, spread);
    for (int i = 0; i < n; i++)
        printf("%lld\n", (long long)host[i] - best);
    return 0;
}
