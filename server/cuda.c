/*
 * The cuda backend: a tenant's work on the real GPU.
 *
 * The driver is loaded with dlopen, in the executor only, so that the control process
 * never initialises CUDA (a process that forks after cuInit cannot use CUDA in the
 * child) and the server still starts on machines without a driver.
 *
 * Each tenant gets a green context covering the whole device as its physical context
 * (pCtx), and every tenant stream — the legacy default stream included — is a real
 * stream created on it.  Later, migration rebinds these to green contexts with fewer SMs
 * without the tenant noticing.  Green-context streams are always non-blocking, so the
 * legacy default stream's rules (it waits for every blocking stream, and they wait for
 * it) are kept here with events recorded at the tail of each stream, only when the other
 * side has new work since the last time.
 */
#include "backend.h"

#include "ds_error.h"
#include "ds_log.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Every driver function used here: base name, and the CUDA version whose variant we
 * want (the one cuda.h's prototype describes). */
#define CU_FNS(X)                                   \
    X(cuInit, 2000)                                 \
    X(cuDriverGetVersion, 2020)                     \
    X(cuDeviceGet, 2000)                            \
    X(cuDeviceGetName, 2000)                        \
    X(cuDeviceGetAttribute, 2000)                   \
    X(cuDeviceTotalMem, 3020)                       \
    X(cuDeviceGetUuid, 11040)                       \
    X(cuDeviceGetDevResource, 12040)                \
    X(cuDevResourceGenerateDesc, 12040)             \
    X(cuGreenCtxCreate, 12040)                      \
    X(cuGreenCtxDestroy, 12040)                     \
    X(cuCtxFromGreenCtx, 12040)                     \
    X(cuGreenCtxStreamCreate, 12050)                \
    X(cuCtxSetCurrent, 4000)                        \
    X(cuCtxSynchronize, 2000)                       \
    X(cuMemAlloc, 3020)                             \
    X(cuMemFree, 3020)                              \
    X(cuMemGetInfo, 3020)                           \
    X(cuMemcpyHtoDAsync, 3020)                      \
    X(cuMemcpyDtoHAsync, 3020)                      \
    X(cuMemcpyDtoDAsync, 3020)                      \
    X(cuMemsetD2D8Async, 3020)                      \
    X(cuMemsetD2D16Async, 3020)                     \
    X(cuMemsetD2D32Async, 3020)                     \
    X(cuStreamDestroy, 4000)                        \
    X(cuStreamQuery, 2000)                          \
    X(cuStreamSynchronize, 2000)                    \
    X(cuStreamWaitEvent, 3020)                      \
    X(cuEventCreate, 2000)                          \
    X(cuEventDestroy, 4000)                         \
    X(cuEventRecord, 2000)                          \
    X(cuEventQuery, 2000)                           \
    X(cuEventSynchronize, 2000)                     \
    X(cuEventElapsedTime, 12080)

struct driver {
    void *dl;
#define CU_FIELD(name, ver) __typeof__(name) *name;
    CU_FNS(CU_FIELD)
#undef CU_FIELD
};

struct ds_bstream {
    CUstream s;
    int blocking;       /* a tenant stream created without CU_STREAM_NON_BLOCKING */
    uint64_t seq;       /* pieces of work submitted */
    CUevent tail;       /* recorded on demand after the last piece of work */
    uint64_t tail_seq;  /* seq at which tail was last recorded */
    uint64_t legacy_seen;  /* blocking: legacy seq this stream already waits for */
    uint64_t legacy_given; /* blocking: own seq the legacy stream already waits for */
    struct ds_bstream *prev, *next;
};

struct ds_bevent {
    CUevent e;
};

struct ds_backend {
    struct driver cu;
    CUdevice dev;
    CUgreenCtx green;
    CUcontext ctx; /* the green context as a CUcontext, current in this executor */
    struct ds_bstream legacy;
    struct ds_bstream streams; /* list head */
};

static int cu_err(CUresult r)
{
    return r == CUDA_SUCCESS ? 0 : DS_ECU(r);
}

static int load_driver(struct driver *cu)
{
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    CUdriverProcAddressQueryResult st;

    cu->dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cu->dl == NULL) {
        ds_error("cannot load the CUDA driver: %s", dlerror());
        return DS_ENOTSUP;
    }
    *(void **)&gpa = dlsym(cu->dl, "cuGetProcAddress_v2");
    if (gpa == NULL) {
        ds_error("the CUDA driver has no cuGetProcAddress_v2: too old");
        return DS_ENOTSUP;
    }
#define CU_LOAD(name, ver)                                                       \
    if (gpa(#name, (void **)&cu->name, ver, CU_GET_PROC_ADDRESS_DEFAULT, &st) != \
            CUDA_SUCCESS ||                                                      \
        cu->name == NULL) {                                                      \
        ds_error("the CUDA driver lacks %s (CUDA %d)", #name, ver);             \
        return DS_ENOTSUP;                                                       \
    }
    CU_FNS(CU_LOAD)
#undef CU_LOAD
    return 0;
}

static int whole_device_pctx(struct ds_backend *b)
{
    CUdevResourceDesc desc;
    CUdevResource sms;
    CUresult r;

    r = b->cu.cuDeviceGetDevResource(b->dev, &sms, CU_DEV_RESOURCE_TYPE_SM);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuDevResourceGenerateDesc(&desc, &sms, 1);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuGreenCtxCreate(&b->green, desc, b->dev, CU_GREEN_CTX_DEFAULT_STREAM);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuCtxFromGreenCtx(&b->ctx, b->green);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuCtxSetCurrent(b->ctx);
    if (r != CUDA_SUCCESS)
        ds_error("cannot create a green context over the whole device (CUresult %d)", r);
    return cu_err(r);
}

static int init_stream(struct ds_backend *b, struct ds_bstream *s, int blocking, int prio)
{
    CUresult r = b->cu.cuGreenCtxStreamCreate(&s->s, b->green, CU_STREAM_NON_BLOCKING, prio);

    if (r == CUDA_SUCCESS)
        r = b->cu.cuEventCreate(&s->tail, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS && s->s != NULL) {
        b->cu.cuStreamDestroy(s->s);
        s->s = NULL;
    }
    s->blocking = blocking;
    return cu_err(r);
}

static void fini_stream(struct ds_backend *b, struct ds_bstream *s)
{
    b->cu.cuEventDestroy(s->tail);
    b->cu.cuStreamDestroy(s->s);
}

static int cuda_open(const struct ds_backend_config *cfg, struct ds_backend **out)
{
    struct ds_backend *b = calloc(1, sizeof(*b));
    int rc;

    if (b == NULL)
        return DS_ENOMEM;
    b->streams.next = b->streams.prev = &b->streams;
    rc = load_driver(&b->cu);
    if (rc == 0)
        rc = cu_err(b->cu.cuInit(0));
    if (rc == 0)
        rc = cu_err(b->cu.cuDeviceGet(&b->dev, cfg->gpu));
    if (rc == 0)
        rc = whole_device_pctx(b);
    if (rc == 0)
        rc = init_stream(b, &b->legacy, 0, 0);
    if (rc != 0) {
        if (b->green != NULL)
            b->cu.cuGreenCtxDestroy(b->green);
        if (b->cu.dl != NULL)
            dlclose(b->cu.dl);
        free(b);
        return rc;
    }
    *out = b;
    return 0;
}

/* Exit frees the device resources of this process; destroying the green context (which
 * owns the streams and events) releases them while the process lives on. */
static void cuda_close(struct ds_backend *b)
{
    while (b->streams.next != &b->streams) {
        struct ds_bstream *s = b->streams.next;

        s->prev->next = s->next;
        s->next->prev = s->prev;
        fini_stream(b, s);
        free(s);
    }
    fini_stream(b, &b->legacy);
    b->cu.cuGreenCtxDestroy(b->green);
    free(b);
}

static void cuda_describe(struct ds_backend *b, struct ds_device_view *v)
{
    CUuuid u;
    size_t total = 0;

    memset(v, 0, sizeof(*v));
    b->cu.cuDeviceGetName(v->name, sizeof(v->name), b->dev);
    if (b->cu.cuDeviceGetUuid(&u, b->dev) == CUDA_SUCCESS)
        memcpy(v->uuid, u.bytes, sizeof(v->uuid));
    b->cu.cuDeviceTotalMem(&total, b->dev);
    v->total_mem = total;
    b->cu.cuDriverGetVersion(&v->driver_version);
    /* The whole device, whatever SMs the tenant is bound to: libraries choose kernels
     * from this view, so it must never change. */
    for (int a = 1; a < DS_ATTR_COUNT; a++)
        if (b->cu.cuDeviceGetAttribute(&v->attrs[a], (CUdevice_attribute)a, b->dev) != CUDA_SUCCESS)
            v->attrs[a] = 0;
}

static struct ds_bstream *real(struct ds_backend *b, struct ds_bstream *s)
{
    return s ? s : &b->legacy;
}

static int record_tail(struct ds_backend *b, struct ds_bstream *s)
{
    CUresult r = CUDA_SUCCESS;

    if (s->tail_seq != s->seq) {
        r = b->cu.cuEventRecord(s->tail, s->s);
        s->tail_seq = s->seq;
    }
    return cu_err(r);
}

/* Before new work on s: the legacy default stream's ordering rules. */
static int order(struct ds_backend *b, struct ds_bstream *s)
{
    int rc = 0;

    if (s == &b->legacy) {
        for (struct ds_bstream *o = b->streams.next; o != &b->streams && rc == 0; o = o->next) {
            if (!o->blocking || o->legacy_given == o->seq)
                continue;
            rc = record_tail(b, o);
            if (rc == 0)
                rc = cu_err(b->cu.cuStreamWaitEvent(s->s, o->tail, 0));
            o->legacy_given = o->seq;
        }
    } else if (s->blocking && s->legacy_seen != b->legacy.seq) {
        rc = record_tail(b, &b->legacy);
        if (rc == 0)
            rc = cu_err(b->cu.cuStreamWaitEvent(s->s, b->legacy.tail, 0));
        s->legacy_seen = b->legacy.seq;
    }
    s->seq++;
    return rc;
}

static int cuda_mem_alloc(struct ds_backend *b, uint64_t size, uint64_t *addr)
{
    CUdeviceptr p;
    CUresult r = b->cu.cuMemAlloc(&p, size);

    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return DS_ENOMEM;
    *addr = p;
    return cu_err(r);
}

static int cuda_mem_free(struct ds_backend *b, uint64_t addr)
{
    return cu_err(b->cu.cuMemFree(addr));
}

static void cuda_mem_info(struct ds_backend *b, uint64_t *free_bytes, uint64_t *total)
{
    size_t f = 0, t = 0;

    b->cu.cuMemGetInfo(&f, &t);
    *free_bytes = f;
    *total = t;
}

/* The source is the executor's pageable receive buffer: the driver stages pageable
 * memory before the call returns, so the buffer may go as soon as we return. */
static int cuda_memcpy_htod(struct ds_backend *b, uint64_t dst, const void *src, size_t n,
                            struct ds_bstream *s)
{
    int rc;

    s = real(b, s);
    rc = order(b, s);
    return rc ? rc : cu_err(b->cu.cuMemcpyHtoDAsync(dst, src, n, s->s));
}

static int cuda_memcpy_dtoh(struct ds_backend *b, void *dst, uint64_t src, size_t n,
                            struct ds_bstream *s)
{
    int rc;

    s = real(b, s);
    rc = order(b, s);
    if (rc == 0)
        rc = cu_err(b->cu.cuMemcpyDtoHAsync(dst, src, n, s->s));
    return rc ? rc : cu_err(b->cu.cuStreamSynchronize(s->s));
}

static int cuda_memcpy_dtod(struct ds_backend *b, uint64_t dst, uint64_t src, size_t n,
                            struct ds_bstream *s)
{
    int rc;

    s = real(b, s);
    rc = order(b, s);
    return rc ? rc : cu_err(b->cu.cuMemcpyDtoDAsync(dst, src, n, s->s));
}

static int cuda_memset(struct ds_backend *b, uint64_t dst, uint64_t pitch, uint32_t value,
                       unsigned elem_size, uint64_t width, uint64_t height,
                       struct ds_bstream *s)
{
    CUresult r;
    int rc;

    s = real(b, s);
    rc = order(b, s);
    if (rc != 0)
        return rc;
    /* One call shape for 1-D and 2-D: a 1-D fill is one row whose pitch is its width. */
    if (height == 1)
        pitch = width * elem_size;
    if (elem_size == 1)
        r = b->cu.cuMemsetD2D8Async(dst, pitch, (unsigned char)value, width, height, s->s);
    else if (elem_size == 2)
        r = b->cu.cuMemsetD2D16Async(dst, pitch, (unsigned short)value, width, height, s->s);
    else
        r = b->cu.cuMemsetD2D32Async(dst, pitch, value, width, height, s->s);
    return cu_err(r);
}

static int cuda_stream_create(struct ds_backend *b, unsigned flags, int priority,
                              struct ds_bstream **out)
{
    struct ds_bstream *s = calloc(1, sizeof(*s));
    int rc;

    if (s == NULL)
        return DS_ENOMEM;
    rc = init_stream(b, s, !(flags & CU_STREAM_NON_BLOCKING), priority);
    if (rc != 0) {
        free(s);
        return rc;
    }
    /* A new blocking stream starts behind the legacy stream's work so far. */
    s->legacy_seen = 0;
    s->next = b->streams.next;
    s->prev = &b->streams;
    b->streams.next->prev = s;
    b->streams.next = s;
    *out = s;
    return 0;
}

/* As in CUDA, work already submitted completes; the legacy stream stops waiting for a
 * stream that no longer exists. */
static void cuda_stream_destroy(struct ds_backend *b, struct ds_bstream *s)
{
    s->prev->next = s->next;
    s->next->prev = s->prev;
    fini_stream(b, s);
    free(s);
}

static int cuda_stream_query(struct ds_backend *b, struct ds_bstream *s)
{
    CUresult r = b->cu.cuStreamQuery(real(b, s)->s);

    return r == CUDA_ERROR_NOT_READY ? DS_ENOTREADY : cu_err(r);
}

static int cuda_stream_synchronize(struct ds_backend *b, struct ds_bstream *s)
{
    return cu_err(b->cu.cuStreamSynchronize(real(b, s)->s));
}

static int cuda_stream_wait_event(struct ds_backend *b, struct ds_bstream *s,
                                  struct ds_bevent *e)
{
    int rc;

    s = real(b, s);
    rc = order(b, s);
    return rc ? rc : cu_err(b->cu.cuStreamWaitEvent(s->s, e->e, 0));
}

static int cuda_event_create(struct ds_backend *b, unsigned flags, struct ds_bevent **out)
{
    struct ds_bevent *e = calloc(1, sizeof(*e));
    CUresult r;

    if (e == NULL)
        return DS_ENOMEM;
    r = b->cu.cuEventCreate(&e->e, flags);
    if (r != CUDA_SUCCESS) {
        free(e);
        return cu_err(r);
    }
    *out = e;
    return 0;
}

static void cuda_event_destroy(struct ds_backend *b, struct ds_bevent *e)
{
    b->cu.cuEventDestroy(e->e);
    free(e);
}

static int cuda_event_record(struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s)
{
    int rc;

    s = real(b, s);
    rc = order(b, s);
    return rc ? rc : cu_err(b->cu.cuEventRecord(e->e, s->s));
}

static int cuda_event_query(struct ds_backend *b, struct ds_bevent *e)
{
    CUresult r = b->cu.cuEventQuery(e->e);

    return r == CUDA_ERROR_NOT_READY ? DS_ENOTREADY : cu_err(r);
}

static int cuda_event_synchronize(struct ds_backend *b, struct ds_bevent *e)
{
    return cu_err(b->cu.cuEventSynchronize(e->e));
}

static int cuda_event_elapsed(struct ds_backend *b, struct ds_bevent *start,
                              struct ds_bevent *end, float *ms)
{
    CUresult r = b->cu.cuEventElapsedTime(ms, start->e, end->e);

    return r == CUDA_ERROR_NOT_READY ? DS_ENOTREADY : cu_err(r);
}

static int cuda_synchronize(struct ds_backend *b)
{
    return cu_err(b->cu.cuCtxSynchronize());
}

const struct ds_backend_ops ds_cuda_backend = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .describe = cuda_describe,
    .dev_alloc = cuda_mem_alloc,
    .dev_free = cuda_mem_free,
    .dev_info = cuda_mem_info,
    .memcpy_htod = cuda_memcpy_htod,
    .memcpy_dtoh = cuda_memcpy_dtoh,
    .memcpy_dtod = cuda_memcpy_dtod,
    .memset = cuda_memset,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_query = cuda_stream_query,
    .stream_synchronize = cuda_stream_synchronize,
    .stream_wait_event = cuda_stream_wait_event,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .event_synchronize = cuda_event_synchronize,
    .event_elapsed = cuda_event_elapsed,
    .synchronize = cuda_synchronize,
};

/* Child side of the probe: exit status 0 when usable, else a code for the reason. */
enum { PROBE_OK, PROBE_NO_DRIVER, PROBE_INIT, PROBE_NO_GPU, PROBE_NO_GREEN };

static int probe_child(int gpu)
{
    struct driver cu;
    CUdevResource sms;
    CUdevice dev;

    memset(&cu, 0, sizeof(cu));
    if (load_driver(&cu) != 0)
        return PROBE_NO_DRIVER;
    if (cu.cuInit(0) != CUDA_SUCCESS)
        return PROBE_INIT;
    if (cu.cuDeviceGet(&dev, gpu) != CUDA_SUCCESS)
        return PROBE_NO_GPU;
    if (cu.cuDeviceGetDevResource(dev, &sms, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS)
        return PROBE_NO_GREEN;
    return PROBE_OK;
}

int ds_cuda_probe(int gpu, char *why, size_t len)
{
    static const char *const reasons[] = {
        [PROBE_NO_DRIVER] = "no usable CUDA driver (libcuda.so.1)",
        [PROBE_INIT] = "cuInit failed: no GPU or driver problem",
        [PROBE_NO_GPU] = "no such GPU",
        [PROBE_NO_GREEN] = "green contexts are not supported",
    };
    int status, code;
    pid_t pid = fork();

    if (pid < 0) {
        snprintf(why, len, "cannot fork the probe");
        return DS_EIO;
    }
    if (pid == 0) {
        /* Quiet: a missing driver is an expected answer, reported by the caller. */
        int null = open("/dev/null", O_WRONLY);

        if (null >= 0)
            dup2(null, STDERR_FILENO);
        _exit(probe_child(gpu));
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        snprintf(why, len, "the probe crashed");
        return DS_EDEVICE;
    }
    code = WEXITSTATUS(status);
    if (code == PROBE_OK)
        return 0;
    snprintf(why, len, "%s", code < (int)(sizeof(reasons) / sizeof(reasons[0])) && reasons[code]
                                 ? reasons[code] : "unknown probe failure");
    return DS_ENOTSUP;
}
