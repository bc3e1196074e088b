/*
 * Driver-API costs for bench/overhead/run.sh.  The same binary runs natively and, with
 * LD_LIBRARY_PATH and DETSHARE_SERVER set, through detshare.  It prints one JSON object
 * per line, each flushed at once so that a run killed half-way keeps what it measured:
 *   {"metric": M, "value": V, "unit": U, "n": SAMPLES}    V is a median over the samples
 *   {"info": "device", ...}                                 what it ran on, with what sizes
 * Usage:
 *   driver_bench [-l LAUNCHES] [-r REPEATS] [-s COPY_MIB] micro
 *   driver_bench [-r REPEATS] [-s COPY_MIB] copies   the large copies of micro alone
 *   driver_bench [-r REPEATS] startup   fresh children of itself: spawn to first kernel done
 *   driver_bench idle SECONDS           initialise, print own RSS, sleep until SIGTERM
 *   driver_bench first-kernel           one startup child (prints two timestamps)
 * A failed call prints its name and error on stderr and exits 1.
 */
#include <cuda.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "empty_fatbin.h"

extern char **environ;

#define CHECK(call) check((call), #call, __LINE__)

/* Samples per latency figure: enough for a stable median, few enough that a round trip
 * ten times native still takes well under a second each. */
enum { SMALL_SAMPLES = 2000, ALLOC_SAMPLES = 1000, MODULE_SAMPLES = 20 };

struct params {
    int launches;       /* per launch_async repeat */
    int reps;           /* repeats of launch_async and large copies; startup children */
    size_t copy_bytes;  /* large copies */
};

/* What the timed operations work on. */
struct bench {
    CUfunction fn;
    CUstream stream;
    CUdeviceptr dev;
    void *pinned, *pageable;
    size_t bytes;       /* of the copy being timed */
};

typedef void (*op_fn)(const struct bench *b);

static void check(CUresult rc, const char *what, int line)
{
    const char *name = NULL;

    if (rc == CUDA_SUCCESS)
        return;
    if (cuGetErrorName(rc, &name) != CUDA_SUCCESS)
        name = "unknown error";
    fprintf(stderr, "driver_bench:%d: %s failed: %s (%d)\n", line, what, name, (int)rc);
    exit(1);
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);

    if (p == NULL)
        die("malloc");
    return p;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void emit(const char *metric, double value, const char *unit, int n)
{
    printf("{\"metric\": \"%s\", \"value\": %.9g, \"unit\": \"%s\", \"n\": %d}\n", metric, value,
           unit, n);
    fflush(stdout);
}

static void init_context(void)
{
    CUdevice dev;
    CUcontext ctx;

    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
}

static CUmodule load_kernel(CUfunction *fn)
{
    CUmodule mod;

    CHECK(cuModuleLoadData(&mod, empty_fatbin));
    CHECK(cuModuleGetFunction(fn, mod, "empty"));
    return mod;
}

static void launch(CUfunction fn, CUstream s)
{
    CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

/* Median seconds of n calls of op, after one untimed call that takes first-use costs. */
static double median_time(op_fn op, const struct bench *b, int n)
{
    double *t = xmalloc(sizeof(*t) * (size_t)n), m;

    op(b);
    for (int i = 0; i < n; i++) {
        double t0 = now();

        op(b);
        t[i] = now() - t0;
    }
    m = median(t, n);
    free(t);
    return m;
}

static void op_launch_sync(const struct bench *b)
{
    launch(b->fn, b->stream);
    CHECK(cuStreamSynchronize(b->stream));
}

static void op_alloc_free(const struct bench *b)
{
    CUdeviceptr p;

    (void)b;
    CHECK(cuMemAlloc(&p, 1 << 20));
    CHECK(cuMemFree(p));
}

static void op_htod_pageable(const struct bench *b)
{
    CHECK(cuMemcpyHtoD(b->dev, b->pageable, b->bytes));
}

static void op_dtoh_pageable(const struct bench *b)
{
    CHECK(cuMemcpyDtoH(b->pageable, b->dev, b->bytes));
}

static void op_htod_pinned(const struct bench *b)
{
    CHECK(cuMemcpyHtoD(b->dev, b->pinned, b->bytes));
}

static void op_dtoh_pinned(const struct bench *b)
{
    CHECK(cuMemcpyDtoH(b->pinned, b->dev, b->bytes));
}

static void op_htod_pinned_async(const struct bench *b)
{
    CHECK(cuMemcpyHtoDAsync(b->dev, b->pinned, b->bytes, b->stream));
    CHECK(cuStreamSynchronize(b->stream));
}

static void op_dtoh_pinned_async(const struct bench *b)
{
    CHECK(cuMemcpyDtoHAsync(b->pinned, b->dev, b->bytes, b->stream));
    CHECK(cuStreamSynchronize(b->stream));
}

/* Launch throughput: the launches are queued back to back and only the end is waited
 * for, as a framework issuing kernels does. */
static void bench_launch_async(const struct bench *b, const struct params *p)
{
    double *rate = xmalloc(sizeof(*rate) * (size_t)p->reps);

    for (int i = 0; i < 1000; i++)
        launch(b->fn, b->stream);
    CHECK(cuCtxSynchronize());
    for (int r = 0; r < p->reps; r++) {
        double t0 = now();

        for (int i = 0; i < p->launches; i++)
            launch(b->fn, b->stream);
        CHECK(cuCtxSynchronize());
        rate[r] = p->launches / (now() - t0);
    }
    emit("launch_async_per_s", median(rate, p->reps), "1/s", p->reps);
    free(rate);
}

/* Timed apart from median_time: unloading is not part of the figure. */
static void bench_module_load(void)
{
    double t[MODULE_SAMPLES];

    for (int i = 0; i < MODULE_SAMPLES; i++) {
        CUfunction fn;
        double t0 = now();
        CUmodule mod = load_kernel(&fn);

        t[i] = now() - t0;
        CHECK(cuModuleUnload(mod));
    }
    emit("module_load_ms", median(t, MODULE_SAMPLES) * 1e3, "ms", MODULE_SAMPLES);
}

static void bench_small(struct bench *b)
{
    emit("launch_sync_rtt_us", median_time(op_launch_sync, b, SMALL_SAMPLES) * 1e6, "us",
         SMALL_SAMPLES);
    emit("alloc_free_us", median_time(op_alloc_free, b, ALLOC_SAMPLES) * 1e6, "us",
         ALLOC_SAMPLES);
    b->bytes = 4096;
    emit("copy_4k_htod_us", median_time(op_htod_pageable, b, SMALL_SAMPLES) * 1e6, "us",
         SMALL_SAMPLES);
    emit("copy_4k_dtoh_us", median_time(op_dtoh_pageable, b, SMALL_SAMPLES) * 1e6, "us",
         SMALL_SAMPLES);
}

/* Large copies are named by their size (copy_256m_...), so that a run with a smaller
 * size never reads as the same figure. */
static void bench_large(struct bench *b, const struct params *p)
{
    static const struct {
        const char *name;
        op_fn op;
    } ops[] = {
        { "pinned_htod", op_htod_pinned },
        { "pinned_dtoh", op_dtoh_pinned },
        { "pinned_htod_async", op_htod_pinned_async },
        { "pinned_dtoh_async", op_dtoh_pinned_async },
        { "pageable_htod", op_htod_pageable },
        { "pageable_dtoh", op_dtoh_pageable },
    };
    char metric[64];

    b->bytes = p->copy_bytes;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        double s = median_time(ops[i].op, b, p->reps);

        snprintf(metric, sizeof(metric), "copy_%zum_%s_gbps", p->copy_bytes >> 20, ops[i].name);
        emit(metric, (double)p->copy_bytes / s / 1e9, "GB/s", p->reps);
    }
}

static void print_device(const struct params *p)
{
    char name[256];
    int version;
    size_t total;
    CUdevice dev;

    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDeviceGetName(name, sizeof(name), dev));
    CHECK(cuDriverGetVersion(&version));
    CHECK(cuDeviceTotalMem(&total, dev));
    /* A device name has no quotes or backslashes to escape. */
    printf("{\"info\": \"device\", \"name\": \"%s\", \"driver_api_version\": %d, "
           "\"memory_mib\": %zu, \"launches\": %d, \"repeats\": %d, \"copy_mib\": %zu}\n",
           name, version, total >> 20, p->launches, p->reps, p->copy_bytes >> 20);
    fflush(stdout);
}

static void buffers_make(struct bench *b, const struct params *p)
{
    CHECK(cuStreamCreate(&b->stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&b->dev, p->copy_bytes));
    CHECK(cuMemAllocHost(&b->pinned, p->copy_bytes));
    b->pageable = xmalloc(p->copy_bytes);
    /* Touch every page, so that no copy pays for first faults. */
    memset(b->pinned, 1, p->copy_bytes);
    memset(b->pageable, 1, p->copy_bytes);
}

static void buffers_free(struct bench *b)
{
    free(b->pageable);
    CHECK(cuMemFreeHost(b->pinned));
    CHECK(cuMemFree(b->dev));
    CHECK(cuStreamDestroy(b->stream));
}

static int run_micro(const struct params *p)
{
    struct bench b = { .bytes = 0 };
    CUmodule mod;

    init_context();
    print_device(p);
    mod = load_kernel(&b.fn);
    buffers_make(&b, p);

    bench_launch_async(&b, p);
    bench_small(&b);
    bench_module_load();
    bench_large(&b, p);

    buffers_free(&b);
    CHECK(cuModuleUnload(mod));
    return 0;
}

/* The large copies alone: what bench/overhead/copy_ratio.sh compares between transports,
 * in seconds rather than micro's minutes. */
static int run_copies(const struct params *p)
{
    struct bench b = { .bytes = 0 };

    init_context();
    print_device(p);
    buffers_make(&b, p);
    bench_large(&b, p);
    buffers_free(&b);
    return 0;
}

/* A startup child: everything a fresh tenant does before its first kernel has run.  It
 * prints when main began and when the kernel completed; CLOCK_MONOTONIC is system-wide,
 * so the parent can compare them with its own spawn time. */
static int run_first_kernel(void)
{
    double t_main = now();
    CUfunction fn;

    init_context();
    load_kernel(&fn);
    launch(fn, NULL);
    CHECK(cuCtxSynchronize());
    printf("%.9f %.9f\n", t_main, now());
    return 0;
}

/* One startup sample: spawn this binary in first-kernel mode with our environment (so
 * natively or through detshare alike) and read back its timestamps. */
static void spawn_first_kernel(double *from_spawn, double *from_main)
{
    char *argv[] = { "driver_bench", "first-kernel", NULL };
    posix_spawn_file_actions_t fa;
    double t0, t_main, t_done;
    int fd[2], status, got;
    pid_t pid;
    FILE *f;

    if (pipe(fd) != 0)
        die("pipe");
    if (posix_spawn_file_actions_init(&fa) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO) != 0 ||
        posix_spawn_file_actions_addclose(&fa, fd[0]) != 0 ||
        posix_spawn_file_actions_addclose(&fa, fd[1]) != 0)
        die("posix_spawn_file_actions");
    t0 = now();
    if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ) != 0)
        die("posix_spawn");
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if ((f = fdopen(fd[0], "r")) == NULL)
        die("fdopen");
    got = fscanf(f, "%lf %lf", &t_main, &t_done);
    fclose(f);
    if (waitpid(pid, &status, 0) != pid)
        die("waitpid");
    if (got != 2 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "driver_bench: first-kernel child failed (wait status %d)\n", status);
        exit(1);
    }
    *from_spawn = t_done - t0;
    *from_main = t_done - t_main;
}

static int run_startup(const struct params *p)
{
    double *spawn = xmalloc(sizeof(*spawn) * (size_t)p->reps);
    double *in_main = xmalloc(sizeof(*in_main) * (size_t)p->reps);

    /* The first child warms the page cache and the server; it is not counted.  Samples
     * are 0.5 s apart: a warm server is an idle one, whose executor pool (started ahead
     * of tenants, device open) has refilled since the last connection. */
    spawn_first_kernel(&spawn[0], &in_main[0]);
    for (int r = 0; r < p->reps; r++) {
        usleep(500000);
        spawn_first_kernel(&spawn[r], &in_main[r]);
    }
    emit("connect_to_first_kernel_ms", median(spawn, p->reps) * 1e3, "ms", p->reps);
    emit("first_kernel_after_main_ms", median(in_main, p->reps) * 1e3, "ms", p->reps);
    free(spawn);
    free(in_main);
    return 0;
}

static double rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;

    if (f == NULL)
        die("/proc/self/status");
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    if (kb < 0) {
        fprintf(stderr, "driver_bench: no VmRSS in /proc/self/status\n");
        exit(1);
    }
    return kb / 1024.0;
}

static void on_term(int sig)
{
    (void)sig;
    _exit(0);
}

/* A tenant that only initialised: its own RSS is the client's footprint, and while it
 * sleeps run.sh reads its executor's.  SIGTERM is its normal end. */
static int run_idle(int seconds)
{
    init_context();
    if (signal(SIGTERM, on_term) == SIG_ERR)
        die("signal");
    emit("tenant_rss_mib", rss_mib(), "MiB", 1);
    sleep((unsigned)seconds);
    return 0;
}

static int positive(const char *s, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v <= 0 || v > 100000000) {
        fprintf(stderr, "driver_bench: bad %s: %s\n", what, s);
        exit(2);
    }
    return (int)v;
}

static int usage(void)
{
    fprintf(stderr, "usage: driver_bench [-l LAUNCHES] [-r REPEATS] [-s COPY_MIB] micro\n"
                    "       driver_bench [-r REPEATS] [-s COPY_MIB] copies\n"
                    "       driver_bench [-r REPEATS] startup\n"
                    "       driver_bench idle SECONDS\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct params p = { .launches = 100000, .reps = 5, .copy_bytes = (size_t)256 << 20 };
    const char *mode;
    int opt;

    while ((opt = getopt(argc, argv, "l:r:s:")) != -1) {
        if (opt == 'l')
            p.launches = positive(optarg, "launch count");
        else if (opt == 'r')
            p.reps = positive(optarg, "repeat count");
        else if (opt == 's')
            p.copy_bytes = (size_t)positive(optarg, "copy size") << 20;
        else
            return usage();
    }
    if (optind >= argc)
        return usage();
    mode = argv[optind];
    if (strcmp(mode, "micro") == 0)
        return run_micro(&p);
    if (strcmp(mode, "copies") == 0)
        return run_copies(&p);
    if (strcmp(mode, "startup") == 0)
        return run_startup(&p);
    if (strcmp(mode, "first-kernel") == 0)
        return run_first_kernel();
    if (strcmp(mode, "idle") == 0 && optind + 1 < argc)
        return run_idle(positive(argv[optind + 1], "seconds"));
    return usage();
}
