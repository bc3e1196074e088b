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
#include "cuda_backend.h"

#include "ds_error.h"
#include "ds_log.h"
#include "ds_clock.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int ds__cuda_fault(struct ds_backend *b, int probe)
{
    if (probe && ds__cuda_sticky() == 0)
        ds__cuda_err(b->cu.cuStreamQuery(b->legacy.s));
    return ds__cuda_sticky();
}

/*
 * A device-to-host copy into the executor's own buffer (a TCP tenant's) is answered
 * once it is done, and the driver's blocking wait may wake a while after the GPU is;
 * so poll stream s for up to spin_us (the server's --spin-us) before blocking.  Every
 * other synchronisation waits on a fence (cuda_fence.c) without holding the executor.
 */
static CUresult wait_done(struct ds_backend *b, CUstream s)
{
    uint64_t until = ds_now_ns() + (uint64_t)b->spin_us * 1000u;
    CUresult r;

    do {
        if ((r = b->cu.cuStreamQuery(s)) != CUDA_ERROR_NOT_READY)
            return r;
    } while (ds_now_ns() < until);
    return b->cu.cuStreamSynchronize(s);
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
#define CU_LOAD(proto, base)                                                               \
    if (gpa(#base, (void **)&cu->proto, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) !=  \
            CUDA_SUCCESS ||                                                                 \
        cu->proto == NULL) {                                                                \
        ds_error("the CUDA driver lacks %s (CUDA %d)", #base, CUDA_VERSION);               \
        return DS_ENOTSUP;                                                                  \
    }
    CU_FNS(CU_LOAD)
#undef CU_LOAD
#define CU_LOAD_OPTIONAL(proto, base)                                                      \
    if (gpa(#base, (void **)&cu->proto, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) !=  \
        CUDA_SUCCESS)                                                                       \
        cu->proto = NULL;
    CU_FNS_OPTIONAL(CU_LOAD_OPTIONAL)
#undef CU_LOAD_OPTIONAL
    return 0;
}

/* How long a new context waits for an MPS server that is recovering from a fault: it
 * admits no client until every client of the faulted GPU has exited, which detshare's
 * executors do within a second of seeing it (server/exec/executor.c). */
#define MPS_RECOVERY_WAIT_MS 10000

static CUresult green_create(struct ds_backend *b, CUdevResourceDesc desc)
{
    CUresult r;

    for (int waited = 0;; waited += 50) {
        r = b->cu.cuGreenCtxCreate(&b->green, desc, b->dev, CU_GREEN_CTX_DEFAULT_STREAM);
        if (r != CUDA_ERROR_MPS_SERVER_NOT_READY || waited >= MPS_RECOVERY_WAIT_MS ||
            (b->stop != NULL && *b->stop))
            return r;
        if (waited == 0)
            ds_info("MPS is recovering from a fault on this GPU: waiting up to %d s for it",
                    MPS_RECOVERY_WAIT_MS / 1000);
        usleep(50 * 1000);
    }
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
        r = green_create(b, desc);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuCtxFromGreenCtx(&b->ctx, b->green);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuCtxSetCurrent(b->ctx);
    if (r != CUDA_SUCCESS)
        ds_error("cannot create a green context over the whole device (CUresult %d)", r);
    return ds__cuda_err(r);
}

static void fini_stream(struct ds_backend *b, struct ds_bstream *s)
{
    ds__cuda_unpark_all(b, s);
    b->cu.cuEventDestroy(s->tail);
    b->cu.cuStreamDestroy(s->s);
}

int ds__cuda_open(const struct ds_backend_config *cfg, struct ds_backend **out)
{
    struct ds_backend *b = calloc(1, sizeof(*b));
    int rc;

    if (b == NULL)
        return DS_ENOMEM;
    b->streams.next = b->streams.prev = &b->streams;
    rc = load_driver(&b->cu);
    if (rc == 0)
        rc = ds__cuda_err(b->cu.cuInit(0));
    if (rc == 0)
        rc = ds__cuda_err(b->cu.cuDeviceGet(&b->dev, cfg->gpu));
    b->spin_us = cfg->spin_us;
    b->stop = cfg->stop;
    if (rc == 0)
        rc = whole_device_pctx(b);
    if (rc == 0)
        rc = ds__cuda_pctx_init(b);
    if (rc == 0)
        rc = ds__cuda_stream_init(b, &b->legacy, 0, 0);
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
void ds__cuda_close(struct ds_backend *b)
{
    while (b->streams.next != &b->streams) {
        struct ds_bstream *s = b->streams.next;

        DS_RING_UNLINK(s);
        fini_stream(b, s);
        free(s);
    }
    fini_stream(b, &b->legacy);
    ds__cuda_waker_stop(b);
    ds__cuda_nvml_fini(b);
    ds__cuda_fence_fini(b);
    if (b->spill != NULL) {
        b->cu.cuEventDestroy(b->spill_done);
        b->cu.cuStreamDestroy(b->spill);
    }
    ds__cuda_shm_unmap(b);
    ds__cuda_pctx_fini(b);
    b->cu.cuGreenCtxDestroy(b->green);
    free(b);
}

void ds__cuda_describe(struct ds_backend *b, struct ds_device_view *v)
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
    /* VMM memory cannot be exported through detshare (server/exec/ops/ops_vmm.c): libraries
     * that would share it with another process (NCCL) must see that they cannot. */
    v->attrs[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED] = 0;
    v->attrs[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED] = 0;
    v->attrs[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED] = 0;
    v->attrs[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED] = 0;
    /* Nor can a pool be (server/exec/ops/ops_pool.c). */
    v->attrs[CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES] = 0;
    /* The device works in the executor's process, so a tenant's malloc'ed memory is out
     * of its reach whatever HMM or ATS give the executor; the memory a tenant shares with
     * it (managed, registered, page-locked) is host pages it reaches over the bus, never
     * device memory, and CPU and GPU atomics on them are not atomic together
     * (docs/memory.md). */
    v->attrs[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS] = 0;
    v->attrs[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES] = 0;
    v->attrs[CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED] = 0;
    v->attrs[CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST] = 0;
}

/* The executor's one thread acts for every tenant thread, so it takes on the calling
 * thread's capture mode for the allocation (PyTorch allocates in relaxed mode while a
 * global capture runs). */
int ds__cuda_dev_alloc(struct ds_backend *b, uint64_t size, int capture_mode, uint64_t *addr)
{
    CUstreamCaptureMode mode = (CUstreamCaptureMode)capture_mode;
    CUdeviceptr p;
    CUresult r;

    b->cu.cuThreadExchangeStreamCaptureMode(&mode);
    r = b->cu.cuMemAlloc(&p, size);
    b->cu.cuThreadExchangeStreamCaptureMode(&mode);

    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return DS_ENOMEM;
    *addr = p;
    return ds__cuda_err(r);
}

/* The driver's own cuMemAllocPitch, so that a tenant gets the pitch a native program
 * would. */
int ds__cuda_dev_alloc_pitch(struct ds_backend *b, uint64_t width, uint64_t height,
                             unsigned elem_size, int capture_mode, uint64_t *addr,
                             uint64_t *pitch)
{
    CUstreamCaptureMode mode = (CUstreamCaptureMode)capture_mode;
    CUdeviceptr p;
    size_t got;
    CUresult r;

    b->cu.cuThreadExchangeStreamCaptureMode(&mode);
    r = b->cu.cuMemAllocPitch(&p, &got, width, height, elem_size);
    b->cu.cuThreadExchangeStreamCaptureMode(&mode);

    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return DS_ENOMEM;
    *addr = p;
    *pitch = got;
    return ds__cuda_err(r);
}

/* The arena is this process's own shared mapping: register it, as page-locked memory the
 * device can reach, and hand out the device's address for it. */
int ds__cuda_host_map(struct ds_backend *b, void *host, uint64_t size, uint64_t *addr)
{
    CUdeviceptr d;
    CUresult r = b->cu.cuMemHostRegister(host, size,
                                         CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);

    if (r == CUDA_SUCCESS) {
        r = b->cu.cuMemHostGetDevicePointer(&d, host, 0);
        if (r != CUDA_SUCCESS)
            b->cu.cuMemHostUnregister(host);
    }
    if (r == CUDA_SUCCESS)
        *addr = d;
    return ds__cuda_err(r);
}

void ds__cuda_host_unmap(struct ds_backend *b, uint64_t addr, void *host)
{
    (void)addr;
    b->cu.cuMemHostUnregister(host);
}

int ds__cuda_dev_free(struct ds_backend *b, uint64_t addr)
{
    return ds__cuda_err(b->cu.cuMemFree(addr));
}

void ds__cuda_dev_info(struct ds_backend *b, uint64_t *free_bytes, uint64_t *total)
{
    size_t f = 0, t = 0;

    b->cu.cuMemGetInfo(&f, &t);
    *free_bytes = f;
    *total = t;
}

/* The source is the executor's pageable receive buffer, which the driver stages before
 * the call returns (so the buffer may go as soon as we return), or the tenant's arena,
 * registered with the driver, which the DMA reads in stream order. */
int ds__cuda_memcpy_htod(struct ds_backend *b, uint64_t dst, const void *src, size_t n,
                         struct ds_bstream *s)
{
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    return rc ? rc : ds__cuda_err(b->cu.cuMemcpyHtoDAsync(dst, src, n, s->s));
}

int ds__cuda_memcpy_dtoh(struct ds_backend *b, void *dst, uint64_t src, size_t n,
                         struct ds_bstream *s)
{
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    if (rc == 0)
        rc = ds__cuda_err(b->cu.cuMemcpyDtoHAsync(dst, src, n, s->s));
    return rc ? rc : ds__cuda_err(wait_done(b, s->s));
}

int ds__cuda_memcpy_dtoh_async(struct ds_backend *b, void *dst, uint64_t src, size_t n,
                               struct ds_bstream *s)
{
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    return rc ? rc : ds__cuda_err(b->cu.cuMemcpyDtoHAsync(dst, src, n, s->s));
}

int ds__cuda_memcpy_dtod(struct ds_backend *b, uint64_t dst, uint64_t src, size_t n,
                         struct ds_bstream *s)
{
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    return rc ? rc : ds__cuda_err(b->cu.cuMemcpyDtoDAsync(dst, src, n, s->s));
}

int ds__cuda_memcpy_3d(struct ds_backend *b, const struct ds_copy3d *c, struct ds_bstream *s)
{
    CUDA_MEMCPY3D m = {
        .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = c->src,
        .srcPitch = c->src_pitch, .srcHeight = c->src_rows,
        .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = c->dst,
        .dstPitch = c->dst_pitch, .dstHeight = c->dst_rows,
        .WidthInBytes = c->width, .Height = c->height, .Depth = c->depth,
    };
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    return rc ? rc : ds__cuda_err(b->cu.cuMemcpy3DAsync(&m, s->s));
}

int ds__cuda_memset(struct ds_backend *b, uint64_t dst, uint64_t pitch, uint32_t value,
                    unsigned elem_size, uint64_t width, uint64_t height,
                    struct ds_bstream *s)
{
    CUresult r;
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
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
    return ds__cuda_err(r);
}

int ds__cuda_stream_create(struct ds_backend *b, unsigned flags, int priority,
                           struct ds_bstream **out)
{
    struct ds_bstream *s = calloc(1, sizeof(*s));
    int rc;

    if (s == NULL)
        return DS_ENOMEM;
    rc = ds__cuda_stream_init(b, s, !(flags & CU_STREAM_NON_BLOCKING), priority);
    if (rc != 0) {
        free(s);
        return rc;
    }
    /* A new blocking stream starts behind the legacy stream's work so far. */
    s->legacy_seen = 0;
    DS_RING_PUSH(&b->streams, s);
    *out = s;
    return 0;
}

/* As in CUDA, work already submitted completes; the legacy stream stops waiting for a
 * stream that no longer exists. */
void ds__cuda_stream_destroy(struct ds_backend *b, struct ds_bstream *s)
{
    b->captures -= s->capturing;
    DS_RING_UNLINK(s);
    fini_stream(b, s);
    free(s);
}

int ds__cuda_stream_query(struct ds_backend *b, struct ds_bstream *s)
{
    CUresult r = b->cu.cuStreamQuery(ds__cuda_real(b, s)->s);

    return r == CUDA_ERROR_NOT_READY ? DS_ENOTREADY : ds__cuda_err(r);
}

int ds__cuda_stream_wait_event(struct ds_backend *b, struct ds_bstream *s,
                               struct ds_bevent *e)
{
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    return rc ? rc : ds__cuda_err(b->cu.cuStreamWaitEvent(s->s, e->e, 0));
}

int ds__cuda_event_create(struct ds_backend *b, unsigned flags, struct ds_bevent **out)
{
    struct ds_bevent *e = calloc(1, sizeof(*e));
    CUresult r;

    if (e == NULL)
        return DS_ENOMEM;
    r = b->cu.cuEventCreate(&e->e, flags);
    if (r != CUDA_SUCCESS) {
        free(e);
        return ds__cuda_err(r);
    }
    *out = e;
    return 0;
}

void ds__cuda_event_destroy(struct ds_backend *b, struct ds_bevent *e)
{
    b->cu.cuEventDestroy(e->e);
    free(e);
}

int ds__cuda_event_record(struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s)
{
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    return rc ? rc : ds__cuda_err(b->cu.cuEventRecord(e->e, s->s));
}

int ds__cuda_event_query(struct ds_backend *b, struct ds_bevent *e)
{
    CUresult r = b->cu.cuEventQuery(e->e);

    return r == CUDA_ERROR_NOT_READY ? DS_ENOTREADY : ds__cuda_err(r);
}

int ds__cuda_event_elapsed(struct ds_backend *b, struct ds_bevent *start,
                           struct ds_bevent *end, float *ms)
{
    CUresult r = b->cu.cuEventElapsedTime(ms, start->e, end->e);

    return r == CUDA_ERROR_NOT_READY ? DS_ENOTREADY : ds__cuda_err(r);
}

int ds__cuda_limit(struct ds_backend *b, int limit, int set, uint64_t *value)
{
    size_t v = *value;
    CUresult r = CUDA_SUCCESS;

    if (set)
        r = b->cu.cuCtxSetLimit((CUlimit)limit, v);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuCtxGetLimit(&v, (CUlimit)limit);
    *value = v;
    return r == CUDA_ERROR_UNSUPPORTED_LIMIT ? DS_EINVAL : ds__cuda_err(r);
}

/* CONTEXT_IDENTITY (21318c60...) slots 51 and 39, called as cuBLAS was seen to call them
 * on the real driver: slot 51 (ctx, stream, &obj), then slot 39 (ctx, obj, &value), for
 * the legacy stream (0) only: the tenant's other streams are numbered by the client.  The
 * driver refuses them on a green context (400, measured), so they are asked on the
 * device's primary context, retained for the question only, and the answer is kept: it
 * describes the device, and what a tenant sees of its device never changes. */
static int identity_value(struct ds_backend *b, CUcontext ctx, unsigned kind, uint64_t *value)
{
    static const CUuuid identity = { { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c,
                                       (char)0xa6, 0x41, (char)0xff, 0x73, 0x24, (char)0xc8,
                                       (char)0xf2 } };
    CUresult (*get_obj)(CUcontext, uintptr_t, void **);
    CUresult (*ask)(CUcontext, void *, uint64_t *);
    void *const *table;
    void *obj = NULL;
    CUresult r;

    if (b->cu.cuGetExportTable((const void **)&table, &identity) != CUDA_SUCCESS ||
        (uintptr_t)table[0] < 52 * sizeof(void *) || table[51] == NULL || table[39] == NULL)
        return DS_ENOTSUP;
    *(void **)&get_obj = table[51];
    *(void **)&ask = table[39];
    r = get_obj(ctx, kind, &obj);
    if (r == CUDA_SUCCESS)
        r = ask(ctx, obj, value);
    return ds__cuda_err(r);
}

int ds__cuda_ctx_query(struct ds_backend *b, unsigned query, uint64_t *value)
{
    CUcontext primary;
    int rc;

    if (b->identity_known) {
        *value = b->identity;
        return 0;
    }
    if (b->cu.cuDevicePrimaryCtxRetain(&primary, b->dev) != CUDA_SUCCESS)
        return DS_EDEVICE;
    b->cu.cuCtxSetCurrent(primary);
    rc = identity_value(b, primary, query, value);
    b->cu.cuCtxSetCurrent(b->ctx);
    b->cu.cuDevicePrimaryCtxRelease(b->dev);
    if (rc == 0) {
        b->identity = *value;
        b->identity_known = 1;
    }
    return rc;
}

#define CUDA_ENTRY(ret, op, args) .op = ds__cuda_##op,
const struct ds_backend_ops ds_cuda_backend = { .name = "cuda", DS_BACKEND_OPS(CUDA_ENTRY) };
#undef CUDA_ENTRY

/* Child side of the probe: exit status 0 when usable, else a code for the reason. */
enum { PROBE_OK, PROBE_NO_DRIVER, PROBE_INIT, PROBE_NO_GPU, PROBE_NO_GREEN };

/* What a usable GPU's probe writes back. */
struct probe_report {
    struct ds_sm_groups groups;
    uint64_t memory;
};

static int probe_child(int gpu, int report)
{
    struct probe_report r = { .memory = 0 };
    struct driver cu;
    CUdevResource sms;
    CUdevice dev;
    size_t total = 0;

    memset(&cu, 0, sizeof(cu));
    if (load_driver(&cu) != 0)
        return PROBE_NO_DRIVER;
    if (cu.cuInit(0) != CUDA_SUCCESS)
        return PROBE_INIT;
    if (cu.cuDeviceGet(&dev, gpu) != CUDA_SUCCESS)
        return PROBE_NO_GPU;
    if (ds__cuda_sm_groups(&cu, dev, &sms, &r.groups) != CUDA_SUCCESS)
        return PROBE_NO_GREEN;
    if (cu.cuDeviceTotalMem(&total, dev) == CUDA_SUCCESS)
        r.memory = total;
    if (write(report, &r, sizeof(r)) != (ssize_t)sizeof(r))
        return PROBE_NO_GREEN;
    return PROBE_OK;
}

int ds_cuda_probe(int gpu, struct ds_sm_groups *groups, uint64_t *memory, char *why,
                  size_t len)
{
    struct probe_report r;
    static const char *const reasons[] = {
        [PROBE_NO_DRIVER] = "no usable CUDA driver (libcuda.so.1)",
        [PROBE_INIT] = "cuInit failed: no GPU or driver problem",
        [PROBE_NO_GPU] = "no such GPU",
        [PROBE_NO_GREEN] = "green contexts are not supported",
    };
    int status, code, report[2];
    pid_t pid;

    if (pipe(report) != 0 || (pid = fork()) < 0) {
        snprintf(why, len, "cannot start the probe");
        return DS_EIO;
    }
    if (pid == 0) {
        /* Quiet: a missing driver is an expected answer, reported by the caller. */
        int null = open("/dev/null", O_WRONLY);

        if (null >= 0)
            dup2(null, STDERR_FILENO);
        close(report[0]);
        _exit(probe_child(gpu, report[1]));
    }
    close(report[1]);
    code = waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == PROBE_OK && read(report[0], &r, sizeof(r)) != sizeof(r))
        code = PROBE_NO_GREEN;
    close(report[0]);
    if (code < 0) {
        snprintf(why, len, "the probe crashed");
        return DS_EDEVICE;
    }
    if (code == PROBE_OK) {
        *groups = r.groups;
        *memory = r.memory;
        return 0;
    }
    snprintf(why, len, "%s", code < (int)(sizeof(reasons) / sizeof(reasons[0])) && reasons[code]
                                 ? reasons[code] : "unknown probe failure");
    return DS_ENOTSUP;
}
