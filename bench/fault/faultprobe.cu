// One small CUDA program for the fault benchmarks (bench/fault/), natively or through
// detshare.  Every line it prints is JSON with the wall-clock time (CLOCK_REALTIME, ns),
// so that lines of several processes can be put in one order.
//   victim SECS     kernels of ~1 ms back to back, each checked, for SECS seconds; prints
//                   how many ran and the first error (the process a neighbour's fault hits)
//   wild DELAY_MS   after DELAY_MS, one kernel that writes through a wild pointer
//   work BLOCKS N   one kernel of BLOCKS blocks that each do N dependent multiply-adds;
//                   prints the elapsed time.  Two side by side tell spatial sharing from
//                   taking turns (a clock-based spin cannot: the SM clock runs on while a
//                   context is switched out)
//   first           the time from start to the end of a first kernel (recovery probes)
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

static long long now_ns()
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__global__ void spin(unsigned long long cycles, unsigned *out)
{
    unsigned long long t0 = clock64();

    while (clock64() - t0 < cycles)
        ;
    if (threadIdx.x == 0)
        atomicAdd(out, 1u);
}

__global__ void work(long n, float *out)
{
    float x = threadIdx.x;

    for (long i = 0; i < n; i++)
        x = x * 0.999999f + 1.0f;
    if (x == -1.0f)
        out[0] = x;
}

__global__ void scribble(int *p)
{
    p[threadIdx.x] = 42;
}

static unsigned long long cycles_per_ms()
{
    int khz = 0;

    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    return (unsigned long long)(khz > 0 ? khz : 1500000);
}

/* The driver's own error log since *it (cuLogs, CUDA 12.9+), on one line: does it tell a
 * culprit's fault from a neighbour's? */
static void driver_log(CUlogIterator *it)
{
    char buf[25600];
    size_t n = sizeof(buf);

    if (cuLogsDumpToMemory(it, buf, &n, 0) != CUDA_SUCCESS || n == 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\n' || buf[i] == '"' || buf[i] == '\\')
            buf[i] = ' ';
    printf("{\"mode\": \"driver-log\", \"pid\": %d, \"log\": \"%.*s\"}\n", (int)getpid(), (int)n, buf);
}

static CUlogIterator log_it;

static int report(const char *mode, long long t0, long n, cudaError_t e)
{
    if (e != cudaSuccess)
        driver_log(&log_it);
    printf("{\"mode\": \"%s\", \"pid\": %d, \"start_ns\": %lld, \"end_ns\": %lld, \"count\": %ld, "
           "\"error\": \"%s\"}\n",
           mode, (int)getpid(), t0, now_ns(), n, cudaGetErrorName(e));
    fflush(stdout);
    return e == cudaSuccess ? 0 : 1;
}

static int victim(double secs)
{
    long long t0 = now_ns(), end = t0 + (long long)(secs * 1e9);
    unsigned *d;
    long n = 0;
    cudaError_t e = cudaMalloc(&d, sizeof(unsigned));

    while (e == cudaSuccess && now_ns() < end) {
        spin<<<8, 32>>>(cycles_per_ms(), d);
        e = cudaDeviceSynchronize();
        if (e == cudaSuccess)
            n++;
    }
    return report("victim", t0, n, e);
}

static int wild(int delay_ms)
{
    long long t0 = now_ns();
    cudaError_t e = cudaFree(0);

    usleep((useconds_t)delay_ms * 1000);
    if (e == cudaSuccess) {
        printf("{\"mode\": \"wild-launch\", \"pid\": %d, \"at_ns\": %lld}\n", (int)getpid(), now_ns());
        fflush(stdout);
        scribble<<<1, 32>>>((int *)0x10000);
        e = cudaDeviceSynchronize();
    }
    report("wild", t0, 0, e);
    return e == cudaErrorIllegalAddress ? 0 : 1;
}

static int spin_blocks(int blocks, int ms)
{
    unsigned *d;
    long long t0;
    cudaError_t e = cudaMalloc(&d, sizeof(unsigned));

    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    t0 = now_ns();
    if (e == cudaSuccess) {
        spin<<<blocks, 32>>>(cycles_per_ms() * (unsigned long long)ms, d);
        e = cudaDeviceSynchronize();
    }
    return report("spin", t0, blocks, e);
}

static int work_blocks(int blocks, long n)
{
    float *d;
    long long t0;
    cudaError_t e = cudaMalloc(&d, sizeof(float));

    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    t0 = now_ns();
    if (e == cudaSuccess) {
        work<<<blocks, 32>>>(n, d);
        e = cudaDeviceSynchronize();
    }
    return report("work", t0, blocks, e);
}

static int first(long long t0)
{
    unsigned *d;
    cudaError_t e = cudaMalloc(&d, sizeof(unsigned));

    if (e == cudaSuccess) {
        spin<<<1, 32>>>(1000, d);
        e = cudaDeviceSynchronize();
    }
    return report("first", t0, 0, e);
}

int main(int argc, char **argv)
{
    long long t0 = now_ns();

    cuLogsCurrent(&log_it, 0);
    if (argc == 4 && strcmp(argv[1], "work") == 0)
        return work_blocks(atoi(argv[2]), atol(argv[3]));
    if (argc == 3 && strcmp(argv[1], "victim") == 0)
        return victim(atof(argv[2]));
    if (argc == 3 && strcmp(argv[1], "wild") == 0)
        return wild(atoi(argv[2]));
    if (argc == 4 && strcmp(argv[1], "spin") == 0)
        return spin_blocks(atoi(argv[2]), atoi(argv[3]));
    if (argc == 2 && strcmp(argv[1], "first") == 0)
        return first(t0);
    fprintf(stderr, "usage: faultprobe victim SECS | wild DELAY_MS | spin BLOCKS MS | work BLOCKS N | first\n");
    return 2;
}
