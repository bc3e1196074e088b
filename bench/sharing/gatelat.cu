// The tenant of gate-check.sh: it finds the offset between the GPU's %globaltimer and the
// host's CLOCK_REALTIME (a kernel spins on a mapped host word until the host sets it at a
// known time), then launches N short kernels back to back, each recording when it
// started, and prints those start times on the host's clock, one per line, after a line
// "offset_ns OFFSET spread_ns SPREAD".  The offset is the smallest of 20 tries, so kernel
// start times err early by at most the spread of the visibility delay (about a microsecond
// over PCIe), which makes measured hold times a little short, never long.
// usage: gatelat N
#include <cstdio>
#include <cstdlib>
#include <ctime>

__device__ unsigned long long now_gpu()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void calibrate(volatile int *started, volatile int *go, unsigned long long *seen)
{
    *started = 1;
    __threadfence_system();
    while (*go == 0)
        ;
    *seen = now_gpu();
}

__global__ void stamp(unsigned long long *starts, int i)
{
    starts[i] = now_gpu();
}

static long long host_ns()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    int *flags;
    unsigned long long *seen, *starts, *host;
    long long best = 0, worst = 0;

    if (cudaHostAlloc(&flags, 2 * sizeof(int), cudaHostAllocMapped) != cudaSuccess ||
        cudaHostAlloc(&seen, sizeof(*seen), cudaHostAllocMapped) != cudaSuccess ||
        cudaMalloc(&starts, n * sizeof(*starts)) != cudaSuccess) {
        fprintf(stderr, "gatelat: no device memory\n");
        return 1;
    }
    for (int k = 0; k < 20; k++) {
        volatile int *f = flags;
        f[0] = f[1] = 0;
        calibrate<<<1, 1>>>(flags, flags + 1, seen);
        while (f[0] == 0)
            ;
        long long t = host_ns();
        f[1] = 1;
        if (cudaDeviceSynchronize() != cudaSuccess)
            return 1;
        long long off = (long long)*seen - t;
        if (k == 0 || off < best)
            best = off;
        if (k == 0 || off > worst)
            worst = off;
    }
    for (int i = 0; i < n; i++)
        stamp<<<1, 1>>>(starts, i);
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    host = (unsigned long long *)malloc(n * sizeof(*host));
    cudaMemcpy(host, starts, n * sizeof(*host), cudaMemcpyDeviceToHost);
    printf("offset_ns %lld spread_ns %lld\n", best, worst - best);
    for (int i = 0; i < n; i++)
        printf("%lld\n", (long long)host[i] - best);
    return 0;
}
