// The GPU's %globaltimer against the host's CLOCK_REALTIME, for the gate benchmarks
// (gatelat.cu, gatemodes.cu): a kernel spins on a mapped host word until the host sets it
// at a known time.  The offset is the smallest of `tries`, so device times put on the
// host clock err early by at most the spread of the visibility delay (about a
// microsecond over PCIe): hold times come out a little short, never long.
#pragma once
#include <ctime>

__device__ inline unsigned long long gpu_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static inline long long host_ns()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

__global__ void gpu_clock_probe(volatile int *started, volatile int *go, unsigned long long *seen)
{
    *started = 1;
    __threadfence_system();
    while (*go == 0)
        ;
    *seen = gpu_now();
}

// Returns 0 and sets *offset (GPU time minus host time) and *spread, or -1.
static inline int gpu_clock_offset(int tries, long long *offset, long long *spread)
{
    int *flags;
    unsigned long long *seen;
    long long best = 0, worst = 0;

    if (cudaHostAlloc(&flags, 2 * sizeof(int), cudaHostAllocMapped) != cudaSuccess ||
        cudaHostAlloc(&seen, sizeof(*seen), cudaHostAllocMapped) != cudaSuccess)
        return -1;
    for (int k = 0; k < tries; k++) {
        volatile int *f = flags;
        f[0] = f[1] = 0;
        gpu_clock_probe<<<1, 1>>>(flags, flags + 1, seen);
        while (f[0] == 0)
            ;
        long long t = host_ns();
        f[1] = 1;
        if (cudaDeviceSynchronize() != cudaSuccess)
            return -1;
        long long off = (long long)*seen - t;
        if (k == 0 || off < best)
            best = off;
        if (k == 0 || off > worst)
            worst = off;
    }
    cudaFreeHost(flags);
    cudaFreeHost(seen);
    *offset = best;
    *spread = worst - best;
    return 0;
}
