/*
 * Copy bandwidth and call latency of the driver API, for comparing detshare with the
 * native driver: the same binary runs twice, once on the system's libcuda.so.1 and once
 * with LD_LIBRARY_PATH pointing at detshare's.  Prints one JSON object per line:
 *   {"label": L, "op": OP, "bytes": N, "seconds": median, "gbps": ...}
 * Usage: copy_bench LABEL [REPEATS]
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                     \
    do {                                                                \
        CUresult rc_ = (call);                                          \
        if (rc_ != CUDA_SUCCESS) {                                      \
            fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #call, rc_); \
            exit(1);                                                    \
        }                                                               \
    } while (0)

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return v[n / 2];
}

enum op { HTOD, DTOH, DTOD };

static void copy_once(enum op op, CUdeviceptr a, CUdeviceptr b, void *host, size_t n)
{
    if (op == HTOD)
        CHECK(cuMemcpyHtoD(a, host, n));
    else if (op == DTOH)
        CHECK(cuMemcpyDtoH(host, a, n));
    else {
        CHECK(cuMemcpyDtoD(b, a, n));
        CHECK(cuCtxSynchronize());
    }
}

static void bench_copies(const char *label, int reps, CUdeviceptr a, CUdeviceptr b, void *host)
{
    static const char *const names[] = { "htod", "dtoh", "dtod" };
    static const size_t sizes[] = { 4096, 65536, 1 << 20, 16 << 20, 64 << 20 };
    double *t = malloc(sizeof(double) * (size_t)reps);

    for (int op = HTOD; op <= DTOD; op++)
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            copy_once((enum op)op, a, b, host, sizes[i]); /* warm-up */
            for (int r = 0; r < reps; r++) {
                double t0 = now();

                copy_once((enum op)op, a, b, host, sizes[i]);
                t[r] = now() - t0;
            }
            double m = median(t, reps);

            printf("{\"label\": \"%s\", \"op\": \"%s\", \"bytes\": %zu, \"seconds\": %.9f, "
                   "\"gbps\": %.3f}\n", label, names[op], sizes[i], m, sizes[i] / m / 1e9);
        }
    free(t);
}

/* A synchronous round trip (stream query on an idle stream) and an asynchronous call
 * (a 4-byte fill), per call. */
static void bench_calls(const char *label, CUdeviceptr a)
{
    const int n = 20000;
    double t0;

    CHECK(cuStreamQuery(NULL));
    t0 = now();
    for (int i = 0; i < n; i++)
        CHECK(cuStreamQuery(NULL));
    printf("{\"label\": \"%s\", \"op\": \"sync_call\", \"bytes\": 0, \"seconds\": %.9f}\n", label,
           (now() - t0) / n);
    t0 = now();
    for (int i = 0; i < n; i++)
        CHECK(cuMemsetD32Async(a, (unsigned)i, 1, NULL));
    CHECK(cuStreamSynchronize(NULL));
    printf("{\"label\": \"%s\", \"op\": \"async_call\", \"bytes\": 0, \"seconds\": %.9f}\n", label,
           (now() - t0) / n);
}

int main(int argc, char **argv)
{
    const char *label = argc > 1 ? argv[1] : "run";
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    CUcontext ctx;
    CUdeviceptr a, b;
    char name[256];
    void *host;

    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuDeviceGetName(name, sizeof(name), 0));
    fprintf(stderr, "%s: device %s\n", label, name);
    CHECK(cuMemAlloc(&a, 64 << 20));
    CHECK(cuMemAlloc(&b, 64 << 20));
    host = malloc(64 << 20);
    memset(host, 1, 64 << 20);
    bench_copies(label, reps, a, b, host);
    bench_calls(label, a);
    printf("{\"label\": \"%s\", \"op\": \"device\", \"name\": \"%s\"}\n", label, name);
    return 0;
}
