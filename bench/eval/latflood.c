/*
 * bench/eval's driver-API tenants: latflood's two jobs, and the stand-ins that the sim
 * runs for the PyTorch jobs of bench/eval/workloads.py (the sim runs no PyTorch).  Linked
 * by soname, so the same binary runs on the system driver or, with LD_LIBRARY_PATH, on
 * detshare's client.  Every kernel is BLOCKS blocks of 256 threads, each spinning NS
 * nanoseconds on a GPU (spin.cu); the sim times a kernel by its grid.
 *
 *   latflood lat SECS BLOCKS NS GAP_MS     one kernel, waited for, then GAP_MS of idle,
 *                                          over and over; each kernel's time from launch
 *                                          to completion is one sample
 *   latflood flood SECS BLOCKS NS          kernels back to back (steps of one kernel)
 *   latflood steps SECS BLOCKS NS K        a trainer's stand-in: steps of K kernels, the
 *                                          next step launched while the one before runs
 *   latflood serve SECS BLOCKS NS K RATES  an inference server's stand-in: requests of K
 *                                          kernels arriving open-loop (Poisson) at each
 *                                          rate of RATES in turn, for SECS / rates each;
 *                                          RATES is "R1,R2..." per second, or "auto:F1,F2.."
 *                                          (F times the requests a second it serves alone)
 *
 * What it prints (one JSON object on stdout) and how a cell's jobs start together are
 * those of workloads.py, whose docstring says them.  The first WARM_S seconds after the
 * start barrier are not measured (the policy learns the tenant's speed, the neighbour gets
 * going).
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spin_fatbin.h"

#define WARM_S 0.5
#define MAX_SAMPLES 200000
#define MAX_RATES 8
#define SYNC_WAIT_S 100.0 /* for the cell's other jobs to be ready */
#define LINGER_S 30.0     /* at most, keeping the load on after the window */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    long long ns = (long long)(s * 1e9);
    struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };

    if (ns > 0)
        nanosleep(&ts, NULL);
}

static int fail(const char *what, CUresult rc)
{
    const char *name = NULL;

    cuGetErrorName(rc, &name);
    fprintf(stderr, "latflood: %s: %s\n", what, name != NULL ? name : "unknown error");
    return 1;
}

static CUresult launch(CUfunction f, unsigned blocks, unsigned long long *ns, unsigned k)
{
    void *params[] = { ns };
    CUresult rc = CUDA_SUCCESS;

    for (unsigned i = 0; i < k && rc == CUDA_SUCCESS; i++)
        rc = cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, NULL, params, NULL);
    return rc;
}

/* The harness's start barrier (DS_EVAL_SYNC="DIR N"): each job of a cell leaves
 * DIR/ready.PID once it is set up and waits for N of them, so that all measure the same
 * window; after its window it leaves DIR/done.PID, and a job that loads the device keeps
 * loading it until N of those are there, so that no job's window sees another gone. */
static int sync_dir(char *dir, size_t len)
{
    const char *v = getenv("DS_EVAL_SYNC");
    int n = 0;

    if (v == NULL || sscanf(v, "%*s %d", &n) != 1 || n <= 0)
        return 0;
    snprintf(dir, len, "%.*s", (int)strcspn(v, " "), v);
    return n;
}

static int sync_count(const char *prefix)
{
    char dir[4096];
    DIR *d;
    struct dirent *e;
    int n = 0;

    if (sync_dir(dir, sizeof(dir)) == 0 || (d = opendir(dir)) == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static int sync_mark(const char *prefix)
{
    char dir[4096], path[4200];
    FILE *f;

    if (sync_dir(dir, sizeof(dir)) == 0)
        return 0;
    snprintf(path, sizeof(path), "%s/%s.%ld", dir, prefix, (long)getpid());
    if ((f = fopen(path, "w")) == NULL) {
        fprintf(stderr, "latflood: cannot write %s\n", path);
        return 1;
    }
    fclose(f);
    return 0;
}

/* Wait at the barrier; nonzero when the others never came. */
static int sync_ready(void)
{
    char dir[4096];
    int n = sync_dir(dir, sizeof(dir));
    double end = now_s() + SYNC_WAIT_S;

    if (sync_mark("ready") != 0)
        return 1;
    while (n > 0 && sync_count("ready.") < n) {
        if (now_s() > end) {
            fprintf(stderr, "latflood: the cell's other jobs were not ready within %.0f s\n",
                    SYNC_WAIT_S);
            return 1;
        }
        sleep_s(0.005);
    }
    return 0;
}

/* True while some job of the cell is still in its window. */
static int others_measuring(void)
{
    char dir[4096];
    int n = sync_dir(dir, sizeof(dir));

    return n > 0 && sync_count("done.") < n;
}

static int run_lat(CUfunction f, double secs, unsigned blocks, unsigned long long ns,
                   double gap_ms)
{
    static double ms[MAX_SAMPLES];
    double start, t0;
    int n = 0;
    CUresult rc;

    if (sync_ready() != 0)
        return 1;
    start = now_s();
    while ((t0 = now_s()) < start + WARM_S + secs && n < MAX_SAMPLES) {
        if ((rc = launch(f, blocks, &ns, 1)) != CUDA_SUCCESS)
            return fail("launch", rc);
        if ((rc = cuStreamSynchronize(NULL)) != CUDA_SUCCESS)
            return fail("synchronize", rc);
        if (t0 >= start + WARM_S)
            ms[n++] = (now_s() - t0) * 1e3;
        sleep_s(gap_ms / 1e3);
    }
    if (sync_mark("done") != 0)
        return 1;
    printf("{\"role\": \"lat\", \"secs\": %.3f, \"blocks\": %u, \"ms\": [", secs, blocks);
    for (int i = 0; i < n; i++)
        printf("%s%.4f", i ? ", " : "", ms[i]);
    printf("]}\n");
    return n > 0 ? 0 : 1;
}

/* Steps of k kernels, two in flight; each step bracketed by timed events, so that the
 * device's busy share of the window (its steps' time over the window's) comes from the
 * device's own clock. */
struct stepper {
    CUfunction f;
    unsigned blocks, k;
    unsigned long long ns;
    CUevent s[2], e[2], w0;
    long i;
    double busy_ms, wall_ms;
};

static CUresult step_once(struct stepper *p, int measured, long *done)
{
    CUresult rc;
    float a, b;
    int cur = (int)(p->i % 2), prev = 1 - cur;

    if ((rc = cuEventRecord(p->s[cur], NULL)) != CUDA_SUCCESS ||
        (rc = launch(p->f, p->blocks, &p->ns, p->k)) != CUDA_SUCCESS ||
        (rc = cuEventRecord(p->e[cur], NULL)) != CUDA_SUCCESS)
        return rc;
    if (p->i++ == 0)
        return CUDA_SUCCESS;
    if ((rc = cuEventSynchronize(p->e[prev])) != CUDA_SUCCESS)
        return rc;
    if (measured > 1) {
        if ((rc = cuEventElapsedTime(&a, p->s[prev], p->e[prev])) != CUDA_SUCCESS ||
            (rc = cuEventElapsedTime(&b, p->w0, p->e[prev])) != CUDA_SUCCESS)
            return rc;
        p->busy_ms += a;
        p->wall_ms = b;
        (*done)++;
    }
    return CUDA_SUCCESS;
}

static int run_steps(CUfunction f, double secs, unsigned blocks, unsigned long long ns,
                     unsigned k, const char *role)
{
    struct stepper p = { .f = f, .blocks = blocks, .k = k, .ns = ns };
    double t0 = 0, t, start;
    long done = 0;
    int measured = 0;
    CUresult rc;

    for (int j = 0; j < 2; j++)
        if ((rc = cuEventCreate(&p.s[j], CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
            (rc = cuEventCreate(&p.e[j], CU_EVENT_DEFAULT)) != CUDA_SUCCESS)
            return fail("event", rc);
    if ((rc = cuEventCreate(&p.w0, CU_EVENT_DEFAULT)) != CUDA_SUCCESS)
        return fail("event", rc);
    if ((rc = step_once(&p, 0, &done)) != CUDA_SUCCESS)
        return fail("launch", rc);
    if (sync_ready() != 0)
        return 1;
    start = now_s();
    while ((t = now_s()) < start + WARM_S + secs) {
        if (measured == 0 && t >= start + WARM_S) {
            /* The window opens with the step in flight: its successor is the first
             * whose whole time counts, and the wall time starts where it was queued. */
            if ((rc = cuEventRecord(p.w0, NULL)) != CUDA_SUCCESS)
                return fail("event", rc);
            t0 = t;
            measured = 1;
        } else if (measured == 1 && p.i > 0) {
            measured = 2;
        }
        if ((rc = step_once(&p, measured, &done)) != CUDA_SUCCESS)
            return fail("launch", rc);
    }
    t = now_s() - t0;
    if (sync_mark("done") != 0)
        return 1;
    for (double end = now_s() + LINGER_S; others_measuring() && now_s() < end;)
        if ((rc = step_once(&p, 0, &done)) != CUDA_SUCCESS)
            return fail("launch", rc);
    if ((rc = cuCtxSynchronize()) != CUDA_SUCCESS)
        return fail("synchronize", rc);
    printf("{\"role\": \"%s\", \"secs\": %.3f, \"blocks\": %u, \"steps\": %ld, "
           "\"steps_per_s\": %.3f, \"kernels_per_s\": %.3f, \"busy\": %.4f}\n", role, t,
           blocks, done, (double)done / t, (double)done * k / t,
           p.wall_ms > 0 ? p.busy_ms / p.wall_ms : 0.0);
    return done > 0 ? 0 : 1;
}

/* A fixed-seed xorshift: the same arrivals in every cell and every mode. */
static double exp_gap(unsigned long long *x, double rate)
{
    double u;

    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    u = ((double)(*x >> 11) + 0.5) / 9007199254740992.0;
    return -log(u) / rate;
}

static CUresult request(CUfunction f, unsigned blocks, unsigned long long *ns, unsigned k)
{
    CUresult rc = launch(f, blocks, ns, k);

    return rc != CUDA_SUCCESS ? rc : cuStreamSynchronize(NULL);
}

/* One phase of the open loop: requests arriving at rate from t0 to t1, served in order
 * as soon as the one before has finished.  A request still waiting at t1 is dropped and
 * counts as having taken until t1 (a lower bound), so that an overloaded phase ends on
 * time and still shows in its tail. */
static int serve_phase(CUfunction f, unsigned blocks, unsigned long long *ns, unsigned k,
                       double rate, double t0, double t1, unsigned long long *x, int record)
{
    static double ms[MAX_SAMPLES];
    double next = t0 + exp_gap(x, rate);
    int n = 0, dropped = 0;
    CUresult rc;

    for (; next < t1 && n < MAX_SAMPLES; next += exp_gap(x, rate)) {
        sleep_s(next - now_s());
        if (now_s() >= t1) {
            ms[n++] = (t1 - next) * 1e3;
            dropped++;
            continue;
        }
        if ((rc = request(f, blocks, ns, k)) != CUDA_SUCCESS)
            return fail("request", rc);
        ms[n++] = (now_s() - next) * 1e3;
    }
    if (!record)
        return 0;
    printf("{\"rate\": %.3f, \"secs\": %.3f, \"done\": %d, \"dropped\": %d, \"ms\": [", rate,
           t1 - t0, n - dropped, dropped);
    for (int i = 0; i < n; i++)
        printf("%s%.4f", i ? ", " : "", ms[i]);
    printf("]}");
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median time of a request served closed-loop for secs: what "auto:" rates scale. */
static int service_ms(CUfunction f, unsigned blocks, unsigned long long *ns, unsigned k,
                      double secs, double *med)
{
    static double ms[MAX_SAMPLES];
    double end = now_s() + secs, t;
    int n = 0;
    CUresult rc;

    while ((t = now_s()) < end && n < MAX_SAMPLES) {
        if ((rc = request(f, blocks, ns, k)) != CUDA_SUCCESS)
            return fail("request", rc);
        ms[n++] = (now_s() - t) * 1e3;
    }
    qsort(ms, (size_t)n, sizeof(ms[0]), cmp_double);
    *med = n > 0 ? ms[n / 2] : 0;
    return n > 0 ? 0 : 1;
}

static int parse_rates(const char *s, double *r)
{
    int n = 0;
    char *end;

    while (n < MAX_RATES) {
        r[n] = strtod(s, &end);
        if (end == s || r[n] <= 0)
            return 0;
        n++;
        if (*end != ',')
            return *end == '\0' ? n : 0;
        s = end + 1;
    }
    return 0;
}

static int run_serve(CUfunction f, double secs, unsigned blocks, unsigned long long ns,
                     unsigned k, const char *rates)
{
    double r[MAX_RATES], med = 0, start, len;
    unsigned long long x = 88172645463325252ull;
    int autoscale = strncmp(rates, "auto:", 5) == 0;
    int n = parse_rates(autoscale ? rates + 5 : rates, r);

    if (n == 0) {
        fprintf(stderr, "latflood: bad rates %s\n", rates);
        return 2;
    }
    if (service_ms(f, blocks, &ns, k, autoscale ? 1.0 : 0.1, &med) != 0)
        return 1;
    for (int i = 0; autoscale && i < n; i++)
        r[i] *= 1e3 / med;
    if (sync_ready() != 0)
        return 1;
    start = now_s();
    if (serve_phase(f, blocks, &ns, k, r[0], start, start + WARM_S, &x, 0) != 0)
        return 1;
    printf("{\"role\": \"serve\", \"secs\": %.3f, \"service_ms\": %.4f, \"phases\": [", secs,
           med);
    len = secs / n;
    for (int i = 0; i < n; i++) {
        double t0 = start + WARM_S + i * len;

        printf("%s", i ? ", " : "");
        if (serve_phase(f, blocks, &ns, k, r[i], t0, t0 + len, &x, 1) != 0)
            return 1;
    }
    printf("]}\n");
    return sync_mark("done");
}

static int usage(void)
{
    fprintf(stderr, "usage: latflood lat SECS BLOCKS NS GAP_MS | flood SECS BLOCKS NS |\n"
                    "       steps SECS BLOCKS NS K | serve SECS BLOCKS NS K RATES\n");
    return 2;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUresult rc;
    const char *m = argc > 1 ? argv[1] : "";
    int want = strcmp(m, "lat") == 0 ? 6 : strcmp(m, "flood") == 0 ? 5
             : strcmp(m, "steps") == 0 ? 6 : strcmp(m, "serve") == 0 ? 7 : -1;
    double secs;
    unsigned blocks, k = 1;
    unsigned long long ns;

    if (argc != want)
        return usage();
    secs = atof(argv[2]);
    blocks = (unsigned)strtoul(argv[3], NULL, 10);
    ns = strtoull(argv[4], NULL, 10);
    if (want >= 6 && m[0] != 'l')
        k = (unsigned)strtoul(argv[5], NULL, 10);
    if (secs <= 0 || blocks == 0 || k == 0)
        return usage();
    if ((rc = cuInit(0)) != CUDA_SUCCESS || (rc = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS ||
        (rc = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
        (rc = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS)
        return fail("context", rc);
    if ((rc = cuModuleLoadData(&mod, spin_fatbin)) != CUDA_SUCCESS ||
        (rc = cuModuleGetFunction(&f, mod, "spin")) != CUDA_SUCCESS)
        return fail("module", rc);
    if (m[0] == 'l')
        return run_lat(f, secs, blocks, ns, atof(argv[5]));
    if (m[1] == 'e')
        return run_serve(f, secs, blocks, ns, k, argv[6]);
    return run_steps(f, secs, blocks, ns, k, m[0] == 'f' ? "flood" : "steps");
}
