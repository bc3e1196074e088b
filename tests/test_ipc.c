/* CUDA IPC between tenants (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle,
 * cuIpcGetEventHandle, cuIpcOpenEventHandle): memory written by one tenant and read by
 * the other through copies, fills and a kernel, events ordering work across them, and
 * every handle that must open nothing.  Two tenants are two processes: the other one is
 * forked before this one connects and talks to it over pipes. */
#include "ds_test.h"
#include "shm.h"

#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 1, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(ipc, .init = start, .fini = stop, .timeout = 120);

#define N ((1u << 20) + 100) /* the shared allocation: not a whole number of pages */
/* The one flag the driver accepts when opening memory (0 is refused on the H100). */
#define LAZY CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
#define KB 1024u
#define BUSY_MS 300
#define BIG (256u << 20)

static unsigned char pattern_at(size_t i, unsigned seed)
{
    return (unsigned char)((i * 131u + seed) ^ (i >> 9));
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern_at(i, seed);
}

static int is_pattern(const unsigned char *p, size_t off, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern_at(off + i, seed))
            return 0;
    return 1;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The pipes' ends, in either process: 0 or -1. */
static int put(int fd, const void *buf, size_t n)
{
    return write(fd, buf, n) == (ssize_t)n ? 0 : -1;
}

static int get(int fd, void *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);

        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* The other tenant.  It reports how far it got in its exit status: 0 when all held, else
 * the number of the step that failed. */
struct peer {
    pid_t pid;
    int to, from;
};

static void peer_start(struct peer *p, int (*fn)(int in, int out))
{
    int down[2], up[2];

    cr_assert(pipe(down) == 0 && pipe(up) == 0);
    p->pid = fork();
    cr_assert(p->pid >= 0);
    if (p->pid == 0) {
        close(down[1]);
        close(up[0]);
        _exit(fn(down[0], up[1]));
    }
    close(down[0]);
    close(up[1]);
    p->to = down[1];
    p->from = up[0];
}

/* Let the other tenant finish (its input closes) and assert that all held there. */
static void peer_end(struct peer *p)
{
    int status;

    close(p->to);
    cr_assert_eq(waitpid(p->pid, &status, 0), p->pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the other tenant failed at its step %d (status 0x%x)", WEXITSTATUS(status), status);
    close(p->from);
}

/* Wait until the server has seen a tenant leave more than `before` times. */
static void await_leave(int before)
{
    for (int i = 0; i < 500 && ds_test_log_count(&srv, " left: ") <= before; i++)
        usleep(10000);
    cr_assert_gt(ds_test_log_count(&srv, " left: "), before, "the tenant never left");
}

/* In the other tenant: fail at `step` unless cond holds. */
#define NEED(cond, step)         \
    do {                         \
        if (!(cond))             \
            return (step);       \
    } while (0)

/* The tests' kernels: fill(int *out, int v, int n) and spin(ns). */
struct kernels {
    CUfunction fill, spin;
};

static CUresult load_kernels(struct kernels *k)
{
    CUmodule m;
    CUresult rc = cuModuleLoad(&m, DS_KERNEL_DIR "/launch.fatbin");

    if (rc == CUDA_SUCCESS)
        rc = cuModuleGetFunction(&k->fill, m, "fill");
    if (rc == CUDA_SUCCESS)
        rc = cuModuleGetFunction(&k->spin, m, "spin");
    return rc;
}

/* About BUSY_MS of device work on s, with nothing for the host to do: on a GPU a kernel
 * that spins that long; on the sim, wide kernels of 10 ms modelled each. */
static CUresult busy(const struct kernels *k, CUstream s)
{
    static CUdeviceptr none;
    unsigned long long ns = BUSY_MS * 1000000ull;
    int v = 0, n = 0;
    void *fill[] = { &none, &v, &n }, *spin[] = { &ns };
    CUresult rc = CUDA_SUCCESS;

    if (!ds_test_on_sim())
        return cuLaunchKernel(k->spin, 1, 1, 1, 1, 1, 1, 0, s, spin, NULL);
    for (int i = 0; i < BUSY_MS / 10 && rc == CUDA_SUCCESS; i++)
        rc = cuLaunchKernel(k->fill, 2640000, 1, 1, 256, 1, 1, 0, s, fill, NULL);
    return rc;
}

/* ---- memory, both ways ---- */

/* Where the opener writes, each its own way, in the exporter's allocation. */
#define AT_COPY 0u               /* cuMemcpyHtoD of pattern 2, 256 KiB */
#define AT_FILL (256 * KB)       /* cuMemsetD32, 256 KiB */
#define AT_KERNEL (512 * KB)     /* the fill kernel, 4096 ints (computed on a GPU only) */
#define AT_DTOD (768 * KB)       /* cuMemcpyDtoD from the opener's own memory, pattern 3 */
#define AT_REST (772 * KB)       /* untouched: still the exporter's pattern 1 */
#define FILL_WORD 0xabcdef01u
#define KERNEL_V 1000

static int write_every_way(CUdeviceptr p, const struct kernels *k)
{
    static unsigned char src[256 * KB];
    CUdeviceptr own;
    int v = KERNEL_V, n = 4096;
    CUdeviceptr at = p + AT_KERNEL;
    void *params[] = { &at, &v, &n };

    pattern(src, sizeof(src), 2);
    NEED(cuMemcpyHtoD(p + AT_COPY, src, sizeof(src)) == CUDA_SUCCESS, 20);
    NEED(cuMemsetD32(p + AT_FILL, FILL_WORD, 64 * KB) == CUDA_SUCCESS, 21);
    NEED(cuLaunchKernel(k->fill, 16, 1, 1, 256, 1, 1, 0, NULL, params, NULL) == CUDA_SUCCESS, 22);
    pattern(src, 4 * KB, 3);
    NEED(cuMemAlloc(&own, 4 * KB) == CUDA_SUCCESS, 23);
    NEED(cuMemcpyHtoD(own, src, 4 * KB) == CUDA_SUCCESS, 24);
    NEED(cuMemcpyDtoD(p + AT_DTOD, own, 4 * KB) == CUDA_SUCCESS, 25);
    NEED(cuCtxSynchronize() == CUDA_SUCCESS, 26);
    NEED(cuMemFree(own) == CUDA_SUCCESS, 27);
    return 0;
}

/* The opener: reads the exporter's bytes, writes its own, and closes. */
static int opener(int in, int out)
{
    static unsigned char back[N];
    CUipcMemHandle h;
    CUdeviceptr p, again, base;
    struct kernels k;
    size_t size;
    int rc;

    NEED(ds_test_connect() == CUDA_SUCCESS && load_kernels(&k) == CUDA_SUCCESS, 1);
    NEED(get(in, &h, sizeof(h)) == 0, 2);
    NEED(cuIpcOpenMemHandle(&p, h, LAZY) == CUDA_SUCCESS, 3);
    NEED(cuMemcpyDtoH(back, p, N) == CUDA_SUCCESS && is_pattern(back, 0, N, 1), 4);
    NEED(cuMemGetAddressRange(&base, &size, p + 4099) == CUDA_SUCCESS && base == p && size == N, 5);
    /* Opened again: the same address, one more reference. */
    NEED(cuIpcOpenMemHandle(&again, h, LAZY) == CUDA_SUCCESS && again == p, 6);
    /* Not the opener's to free, nor to export. */
    NEED(cuMemFree(p) == CUDA_ERROR_INVALID_VALUE, 7);
    NEED(cuIpcGetMemHandle(&h, p) == CUDA_ERROR_INVALID_VALUE, 8);
    if ((rc = write_every_way(p, &k)) != 0)
        return rc;
    NEED(put(out, "w", 1) == 0, 9);
    NEED(cuIpcCloseMemHandle(p) == CUDA_SUCCESS, 10);
    NEED(cuMemcpyDtoH(back, p + N - 16, 16) == CUDA_SUCCESS, 11); /* one reference left */
    NEED(cuIpcCloseMemHandle(p) == CUDA_SUCCESS, 12);
    NEED(cuMemcpyDtoH(back, p, 16) == CUDA_ERROR_INVALID_VALUE, 13);
    NEED(cuIpcCloseMemHandle(p) == CUDA_ERROR_INVALID_VALUE, 14);
    return 0;
}

static void check_written(CUdeviceptr d)
{
    static unsigned char back[N];
    const unsigned *words = (const unsigned *)(back + AT_FILL);
    const int *ints = (const int *)(back + AT_KERNEL);

    CU_OK(cuMemcpyDtoH(back, d, N));
    cr_assert(is_pattern(back + AT_COPY, 0, 256 * KB, 2), "the opener's copy");
    for (unsigned i = 0; i < 64 * KB; i++)
        cr_assert_eq(words[i], FILL_WORD, "the opener's fill, word %u", i);
    if (!ds_test_on_sim()) /* sim kernels compute nothing */
        for (int i = 0; i < 4096; i++)
            cr_assert_eq(ints[i], KERNEL_V + i, "the opener's kernel, int %d", i);
    cr_assert(is_pattern(back + AT_DTOD, 0, 4 * KB, 3), "the opener's device copy");
    cr_assert(is_pattern(back + AT_REST, AT_REST, N - AT_REST, 1), "the rest untouched");
}

Test(ipc, memory_written_by_one_tenant_is_read_by_the_other)
{
    static unsigned char src[N];
    CUipcMemHandle h, inner;
    struct peer b;
    CUdeviceptr d;
    char c;

    peer_start(&b, opener);
    ds_test_ctx();
    pattern(src, N, 1);
    CU_OK(cuMemAlloc(&d, N));
    CU_OK(cuMemcpyHtoD(d, src, N));
    CU_OK(cuIpcGetMemHandle(&h, d));
    /* From inside the allocation, and again: the same allocation, the same handle. */
    CU_OK(cuIpcGetMemHandle(&inner, d + 12345));
    cr_assert_arr_eq(inner.reserved, h.reserved, sizeof(h.reserved));
    cr_assert_eq(put(b.to, &h, sizeof(h)), 0);
    cr_assert_eq(get(b.from, &c, 1), 0, "the other tenant did not get as far as writing");
    check_written(d);
    peer_end(&b);
    CU_OK(cuMemFree(d));
}

/* ---- events ---- */

static int event_peer(int in, int out)
{
    CUipcEventHandle h, again;
    CUevent e, done;
    CUstream s;
    struct kernels k;
    double t0, t1;
    float ms;
    char c;

    NEED(ds_test_connect() == CUDA_SUCCESS && load_kernels(&k) == CUDA_SUCCESS, 1);
    NEED(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, 2);
    NEED(get(in, &h, sizeof(h)) == 0 && get(in, &t0, sizeof(t0)) == 0, 3);
    NEED(cuIpcOpenEventHandle(&e, h) == CUDA_SUCCESS, 4);
    /* The other tenant's BUSY_MS of work is still running... */
    NEED(cuEventQuery(e) == CUDA_ERROR_NOT_READY, 5);
    /* ...and work here waits for it. */
    NEED(cuStreamWaitEvent(s, e, 0) == CUDA_SUCCESS && cuEventCreate(&done, 0) == CUDA_SUCCESS &&
             cuEventRecord(done, s) == CUDA_SUCCESS && cuEventSynchronize(done) == CUDA_SUCCESS,
         6);
    NEED(now_ms() - t0 >= BUSY_MS * 0.8, 7);
    NEED(cuEventQuery(e) == CUDA_SUCCESS && cuEventSynchronize(e) == CUDA_SUCCESS, 8);
    /* An opened event is untimed, and exported by its maker only. */
    NEED(cuEventElapsedTime(&ms, e, e) == CUDA_ERROR_INVALID_HANDLE, 9);
    NEED(cuIpcGetEventHandle(&again, e) == CUDA_ERROR_INVALID_VALUE, 10);
    /* The other way: work here, recorded on the opened event, holds the other tenant. */
    t1 = now_ms();
    NEED(busy(&k, s) == CUDA_SUCCESS && cuEventRecord(e, s) == CUDA_SUCCESS, 11);
    NEED(put(out, &t1, sizeof(t1)) == 0, 12);
    NEED(read(in, &c, 1) == 0, 13); /* until the other tenant is done with it */
    NEED(cuEventDestroy(e) == CUDA_SUCCESS, 14);
    return 0;
}

Test(ipc, an_event_orders_work_across_tenants_both_ways)
{
    CUipcEventHandle h, again;
    CUevent e, plain, bad;
    CUdeviceptr big;
    struct kernels k;
    struct peer b;
    CUstream s;
    double t0, t1;

    peer_start(&b, event_peer);
    ds_test_ctx();
    CU_OK(load_kernels(&k));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_IS(cuEventCreate(&bad, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuEventCreate(&plain, 0));
    CU_IS(cuIpcGetEventHandle(&h, plain), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuIpcGetEventHandle(NULL, plain), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuIpcGetEventHandle(&h, NULL), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CU_OK(cuIpcGetEventHandle(&h, e));
    CU_OK(cuIpcGetEventHandle(&again, e));
    cr_assert_arr_eq(again.reserved, h.reserved, sizeof(h.reserved));

    /* The record comes after a fill that the sim's executor takes a while to apply (it
     * writes the bytes when the work is submitted): the record must still be in place
     * when cuEventRecord returns, as the other tenant may wait for it at once. */
    CU_OK(cuMemAlloc(&big, BIG));
    t0 = now_ms();
    CU_OK(busy(&k, s));
    CU_OK(cuMemsetD8Async(big, 7, BIG, s));
    CU_OK(cuEventRecord(e, s));
    cr_assert_eq(put(b.to, &h, sizeof(h)), 0);
    cr_assert_eq(put(b.to, &t0, sizeof(t0)), 0);

    cr_assert_eq(get(b.from, &t1, sizeof(t1)), 0, "the other tenant stopped before recording");
    CU_IS(cuEventQuery(e), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamWaitEvent(s, e, 0));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_geq(now_ms() - t1, BUSY_MS * 0.8, "the wait ended %.1f ms after the other "
                  "tenant's work of %d ms began", now_ms() - t1, BUSY_MS);
    CU_OK(cuEventQuery(e));
    peer_end(&b);
    CU_OK(cuEventDestroy(e));
    CU_OK(cuMemFree(big));
}

/* ---- lifetimes ---- */

/* Exports N bytes of pattern 1 and its handle, then stays until told to leave. */
static int exporter(int in, int out)
{
    static unsigned char src[N];
    CUipcMemHandle h;
    CUdeviceptr d;
    char c;

    NEED(ds_test_connect() == CUDA_SUCCESS, 1);
    pattern(src, N, 1);
    NEED(cuMemAlloc(&d, N) == CUDA_SUCCESS && cuMemcpyHtoD(d, src, N) == CUDA_SUCCESS, 2);
    NEED(cuIpcGetMemHandle(&h, d) == CUDA_SUCCESS, 3);
    NEED(put(out, &h, sizeof(h)) == 0, 4);
    NEED(read(in, &c, 1) == 0, 5);
    return 0;
}

static size_t free_mem(void)
{
    size_t free_bytes, total;

    CU_OK(cuMemGetInfo(&free_bytes, &total));
    return free_bytes;
}

Test(ipc, the_exporters_exit_makes_its_handles_stale)
{
    static unsigned char back[N];
    CUipcMemHandle h;
    CUdeviceptr p, q;
    struct peer b;
    size_t before, opened;
    int left = ds_test_log_count(&srv, " left: ");
    CUresult rc;

    peer_start(&b, exporter);
    ds_test_ctx();
    cr_assert_eq(get(b.from, &h, sizeof(h)), 0, "the exporter did not export");
    before = free_mem();
    CU_OK(cuIpcOpenMemHandle(&p, h, LAZY));
    opened = free_mem();
    if (ds_test_on_sim())
        cr_assert_eq(opened, before - N, "the sim counts an opened mapping to the opener");
    peer_end(&b);
    await_leave(left);
    CU_IS(cuIpcOpenMemHandle(&q, h, LAZY),
          CUDA_ERROR_INVALID_HANDLE);
    /* What was opened before stays the opener's until it closes it: on the sim the bytes
     * outlive their exporter; on a GPU the driver decides, but never gives other bytes. */
    rc = cuMemcpyDtoH(back, p, N);
    if (ds_test_on_sim())
        cr_assert_eq(rc, CUDA_SUCCESS);
    if (rc == CUDA_SUCCESS)
        cr_assert(is_pattern(back, 0, N, 1), "the mapping shows its own bytes");
    CU_OK(cuIpcCloseMemHandle(p));
    if (ds_test_on_sim())
        cr_assert_eq(free_mem(), before + N, "both tenants' shares are given back");
    cr_assert(ds_test_log_has(&srv, "names nothing exported now"));
}

/* Opens the handle it is given twice, says so, and leaves without closing it. */
static int careless_opener(int in, int out)
{
    CUipcMemHandle h;
    CUdeviceptr p, q;
    char c;

    NEED(ds_test_connect() == CUDA_SUCCESS && get(in, &h, sizeof(h)) == 0, 1);
    NEED(cuIpcOpenMemHandle(&p, h, LAZY) == CUDA_SUCCESS, 2);
    NEED(cuIpcOpenMemHandle(&q, h, LAZY) == CUDA_SUCCESS && q == p, 3);
    NEED(put(out, "o", 1) == 0 && read(in, &c, 1) == 0, 4);
    return 0;
}

Test(ipc, the_openers_exit_closes_what_it_left_open)
{
    CUipcMemHandle h;
    CUdeviceptr d;
    struct peer b;
    size_t before;
    int left = ds_test_log_count(&srv, " left: ");
    char c;

    peer_start(&b, careless_opener);
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, N));
    CU_OK(cuIpcGetMemHandle(&h, d));
    before = free_mem();
    cr_assert_eq(put(b.to, &h, sizeof(h)), 0);
    cr_assert_eq(get(b.from, &c, 1), 0);
    if (ds_test_on_sim())
        cr_assert_eq(free_mem(), before - N, "one mapping, however often opened");
    peer_end(&b);
    await_leave(left);
    if (ds_test_on_sim())
        cr_assert_eq(free_mem(), before);
    CU_OK(cuMemFree(d));
}

/* Opens the handle it is given, reads it, then after the exporter freed it tries the
 * old handle and the new one it is sent. */
static int opener_of_freed(int in, int out)
{
    static unsigned char back[N];
    CUipcMemHandle h, h2;
    CUdeviceptr p, p2;

    NEED(ds_test_connect() == CUDA_SUCCESS && get(in, &h, sizeof(h)) == 0, 1);
    NEED(cuIpcOpenMemHandle(&p, h, LAZY) == CUDA_SUCCESS, 2);
    NEED(cuMemcpyDtoH(back, p, N) == CUDA_SUCCESS && is_pattern(back, 0, N, 1), 3);
    NEED(put(out, "r", 1) == 0 && get(in, &h2, sizeof(h2)) == 0, 4);
    NEED(cuIpcOpenMemHandle(&p2, h, LAZY) == CUDA_ERROR_INVALID_HANDLE, 5);
    NEED(cuIpcOpenMemHandle(&p2, h2, LAZY) == CUDA_SUCCESS && p2 != p, 6);
    NEED(cuMemcpyDtoH(back, p2, N) == CUDA_SUCCESS && is_pattern(back, 0, N, 4), 7);
    /* Freeing exported memory that another tenant has open is undefined for the driver;
     * the sim keeps the pages for the opener, as a mapping holds them. */
    if (ds_test_on_sim())
        NEED(cuMemcpyDtoH(back, p, N) == CUDA_SUCCESS && is_pattern(back, 0, N, 1), 8);
    NEED(cuIpcCloseMemHandle(p) == CUDA_SUCCESS && cuIpcCloseMemHandle(p2) == CUDA_SUCCESS, 9);
    return 0;
}

Test(ipc, memory_freed_by_its_exporter_opens_no_more)
{
    static unsigned char src[N];
    CUipcMemHandle h, h2;
    CUdeviceptr d, d2;
    struct peer b;
    char c;

    peer_start(&b, opener_of_freed);
    ds_test_ctx();
    pattern(src, N, 1);
    CU_OK(cuMemAlloc(&d, N));
    CU_OK(cuMemcpyHtoD(d, src, N));
    CU_OK(cuIpcGetMemHandle(&h, d));
    cr_assert_eq(put(b.to, &h, sizeof(h)), 0);
    cr_assert_eq(get(b.from, &c, 1), 0);
    CU_OK(cuMemFree(d));
    /* New memory, maybe at the same address: a handle of its own. */
    pattern(src, N, 4);
    CU_OK(cuMemAlloc(&d2, N));
    CU_OK(cuMemcpyHtoD(d2, src, N));
    CU_OK(cuIpcGetMemHandle(&h2, d2));
    cr_assert(memcmp(h.reserved, h2.reserved, sizeof(h.reserved)) != 0);
    cr_assert_eq(put(b.to, &h2, sizeof(h2)), 0);
    peer_end(&b);
    CU_OK(cuMemFree(d2));
}

/* ---- what must open nothing ---- */

/* Exports memory and an event, hands both over, checks its bytes at the end. */
static int victim(int in, int out)
{
    static unsigned char src[N], back[N];
    CUipcMemHandle hm;
    CUipcEventHandle he;
    CUdeviceptr d;
    CUevent e;
    char c;

    NEED(ds_test_connect() == CUDA_SUCCESS, 1);
    pattern(src, N, 5);
    NEED(cuMemAlloc(&d, N) == CUDA_SUCCESS && cuMemcpyHtoD(d, src, N) == CUDA_SUCCESS, 2);
    NEED(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS, 3);
    NEED(cuIpcGetMemHandle(&hm, d) == CUDA_SUCCESS && cuIpcGetEventHandle(&he, e) == CUDA_SUCCESS,
         4);
    NEED(put(out, &hm, sizeof(hm)) == 0 && put(out, &he, sizeof(he)) == 0, 5);
    NEED(read(in, &c, 1) == 0, 6);
    NEED(cuMemcpyDtoH(back, d, N) == CUDA_SUCCESS && is_pattern(back, 0, N, 5), 7);
    return 0;
}

Test(ipc, forged_garbage_and_misused_handles_open_nothing)
{
    CUipcMemHandle hm, forged, mine;
    CUipcEventHandle he, ev_as;
    CUdeviceptr p, d;
    CUevent e;
    struct peer b;

    peer_start(&b, victim);
    ds_test_ctx();
    cr_assert_eq(get(b.from, &hm, sizeof(hm)), 0, "the other tenant did not export");
    cr_assert_eq(get(b.from, &he, sizeof(he)), 0);

    memset(&forged, 0, sizeof(forged));
    CU_IS(cuIpcOpenMemHandle(&p, forged, LAZY), CUDA_ERROR_INVALID_HANDLE);
    for (size_t i = 0; i < sizeof(forged.reserved); i++)
        forged.reserved[i] = (char)(rand() & 0xff);
    CU_IS(cuIpcOpenMemHandle(&p, forged, LAZY), CUDA_ERROR_INVALID_HANDLE);
    for (size_t i = 0; i < sizeof(hm.reserved); i++) {
        forged = hm;
        forged.reserved[i] ^= 0x10;
        CU_IS(cuIpcOpenMemHandle(&p, forged, LAZY), CUDA_ERROR_INVALID_HANDLE);
    }
    /* A memory handle is no event handle, and the other way round. */
    memcpy(ev_as.reserved, hm.reserved, sizeof(ev_as.reserved));
    CU_IS(cuIpcOpenEventHandle(&e, ev_as), CUDA_ERROR_INVALID_HANDLE);
    memcpy(forged.reserved, he.reserved, sizeof(forged.reserved));
    CU_IS(cuIpcOpenMemHandle(&p, forged, LAZY), CUDA_ERROR_INVALID_HANDLE);
    /* Arguments. */
    CU_IS(cuIpcOpenMemHandle(&p, hm, 2), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuIpcOpenMemHandle(NULL, hm, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuIpcOpenEventHandle(NULL, he), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuIpcGetMemHandle(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuIpcCloseMemHandle(0x1000), CUDA_ERROR_INVALID_VALUE);
    /* Not memory of this tenant's: its pointer, a made-up one. */
    CU_OK(cuMemAlloc(&d, 4 * KB));
    CU_IS(cuIpcGetMemHandle(&mine, d + 4 * KB), CUDA_ERROR_INVALID_VALUE);
    /* The driver opens no handle in the process that exported it. */
    CU_OK(cuIpcGetMemHandle(&mine, d));
    CU_IS(cuIpcOpenMemHandle(&p, mine, LAZY), CUDA_ERROR_INVALID_CONTEXT);

    /* All that left the real handles as they were. */
    CU_IS(cuIpcOpenMemHandle(&p, hm, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuIpcOpenMemHandle(&p, hm, LAZY));
    CU_OK(cuIpcOpenEventHandle(&e, he));
    CU_OK(cuEventDestroy(e));
    CU_OK(cuIpcCloseMemHandle(p));
    peer_end(&b);
    CU_OK(cuMemFree(d));
    cr_assert(ds_test_log_has(&srv, "refused (CUDA_ERROR_INVALID_HANDLE)"));
}

/* Over TCP: IPC is refused both ways. */
Test(ipc, a_tcp_tenant_may_not_use_ipc)
{
    CUipcMemHandle hm, h;
    CUipcEventHandle he;
    CUdeviceptr p, d;
    CUevent e;
    struct peer b;

    peer_start(&b, victim);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    ds_test_ctx();
    cr_assert_eq(get(b.from, &hm, sizeof(hm)), 0, "the other tenant did not export");
    cr_assert_eq(get(b.from, &he, sizeof(he)), 0);
    CU_IS(cuIpcOpenMemHandle(&p, hm, LAZY), CUDA_ERROR_NOT_SUPPORTED);
    CU_IS(cuIpcOpenEventHandle(&e, he), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuMemAlloc(&d, 4 * KB));
    CU_IS(cuIpcGetMemHandle(&h, d), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CU_IS(cuIpcGetEventHandle(&he, e), CUDA_ERROR_NOT_SUPPORTED);
    peer_end(&b);
    cr_assert(ds_test_log_has(&srv, "this one is over TCP"));
}

/* A tenant of another user: the nobody account, which only root can become. */
#define OTHER_UID 65534

static int other_user(int in, int out)
{
    CUipcMemHandle mine, theirs;
    CUdeviceptr d, p;
    char c;

    NEED(setgroups(0, NULL) == 0 && setgid(OTHER_UID) == 0 && setuid(OTHER_UID) == 0, 1);
    NEED(ds_test_connect() == CUDA_SUCCESS, 2);
    NEED(cuMemAlloc(&d, 4 * KB) == CUDA_SUCCESS && cuIpcGetMemHandle(&mine, d) == CUDA_SUCCESS, 3);
    NEED(put(out, &mine, sizeof(mine)) == 0 && get(in, &theirs, sizeof(theirs)) == 0, 4);
    NEED(cuIpcOpenMemHandle(&p, theirs, LAZY) == CUDA_ERROR_INVALID_HANDLE, 5);
    NEED(put(out, "t", 1) == 0 && read(in, &c, 1) == 0, 6);
    return 0;
}

Test(ipc, a_tenant_of_another_user_opens_nothing)
{
    CUipcMemHandle mine, theirs;
    CUdeviceptr d, p;
    struct peer b;
    char c;

    if (geteuid() != 0)
        cr_skip_test("needs root, to run a tenant as another user");
    /* Let the other user reach the socket. */
    cr_assert_eq(chmod(srv.dir, 0755), 0);
    cr_assert_eq(chmod(srv.sock, 0777), 0);
    peer_start(&b, other_user);
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 4 * KB));
    CU_OK(cuIpcGetMemHandle(&mine, d));
    cr_assert_eq(get(b.from, &theirs, sizeof(theirs)), 0, "the other user's tenant did not export");
    CU_IS(cuIpcOpenMemHandle(&p, theirs, LAZY), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(put(b.to, &mine, sizeof(mine)), 0);
    cr_assert_eq(get(b.from, &c, 1), 0, "the other user's tenant stopped early");
    peer_end(&b);
    cr_assert(ds_test_log_has(&srv, "exported by a tenant of another user"));
    cr_assert(ds_test_log_has(&srv, "of uid 65534"));
}

/* ---- the registry's limit ---- */

/* Exports one allocation of its own: another tenant's full table is not its concern. */
static int exports_one(int in, int out)
{
    CUipcMemHandle h;
    CUdeviceptr d;
    char c;

    NEED(ds_test_connect() == CUDA_SUCCESS && read(in, &c, 1) == 1, 1);
    NEED(cuMemAlloc(&d, 4 * KB) == CUDA_SUCCESS && cuIpcGetMemHandle(&h, d) == CUDA_SUCCESS, 2);
    NEED(put(out, "x", 1) == 0, 3);
    return 0;
}

Test(ipc, a_tenant_whose_exports_fill_its_table_is_refused_alone, .timeout = 300)
{
    /* Small on the sim, whose export copies; whole 2 MiB pages on a GPU. */
    const size_t size = ds_test_on_sim() ? 4 * KB : 2u << 20;
    static CUdeviceptr d[DS_SHM_IPC_MAX + 1];
    CUipcMemHandle h, first;
    CUipcEventHandle he;
    CUevent e;
    struct peer b;
    char c;

    peer_start(&b, exports_one);
    ds_test_ctx();
    CU_OK(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    for (int i = 0; i <= DS_SHM_IPC_MAX; i++)
        CU_OK(cuMemAlloc(&d[i], size));
    for (int i = 0; i < DS_SHM_IPC_MAX; i++)
        CU_OK(cuIpcGetMemHandle(i == 0 ? &first : &h, d[i]));
    CU_IS(cuIpcGetMemHandle(&h, d[DS_SHM_IPC_MAX]), CUDA_ERROR_OUT_OF_MEMORY);
    CU_IS(cuIpcGetEventHandle(&he, e), CUDA_ERROR_OUT_OF_MEMORY);
    /* What is exported already still is. */
    CU_OK(cuIpcGetMemHandle(&h, d[0]));
    cr_assert_arr_eq(h.reserved, first.reserved, sizeof(h.reserved));
    cr_assert_eq(put(b.to, "g", 1), 0);
    cr_assert_eq(get(b.from, &c, 1), 0, "another tenant could not export");
    /* Freeing exported memory makes room. */
    CU_OK(cuMemFree(d[0]));
    CU_OK(cuIpcGetMemHandle(&h, d[DS_SHM_IPC_MAX]));
    peer_end(&b);
    for (int i = 1; i <= DS_SHM_IPC_MAX; i++)
        CU_OK(cuMemFree(d[i]));
    cr_assert(ds_test_log_has(&srv, "all the registry keeps for one"));
}
