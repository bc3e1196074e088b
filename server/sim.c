/*
 * The sim device: a software GPU for machines without one.  Device memory is host
 * memory behind device-like addresses; work on streams takes modelled time.
 *
 * Time model.  Each stream keeps the time at which its last piece of work completes.
 * New work starts when the host submits it, the stream is free and (legacy default
 * stream rules) the streams it must wait for are free; it ends after a duration given
 * by the cost model below.  Queries and synchronisation compare against the monotonic
 * clock and sleep until the modelled end, so ordering, overlap and event timings are
 * observable exactly as on a device.  Data effects are applied when work is submitted:
 * the executor sees a tenant's calls in order, so for any program that synchronises
 * correctly the bytes it reads are the bytes a device would give it.
 */
#include "backend.h"

#include "cubin.h"
#include "ds_error.h"
#include "ds_image.h"
#include "ds_memtab.h"
#include "shm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* Cost model, loosely an H100 on PCIe 5: enough to make timings plausible, not a
 * performance model. */
#define SIM_OP_NS 2000ull          /* fixed cost of any piece of work */
#define SIM_PCIE_BYTES_PER_US 25000ull   /* host<->device, 25 GB/s */
#define SIM_HBM_BYTES_PER_US 1500000ull  /* device->device copy and fill, 1.5 TB/s */

/* A kernel: a fixed launch cost, then waves of blocks, each block-wave 1 us per 256
 * threads of a block.  Kernels compute nothing; only their time is modelled. */
#define SIM_LAUNCH_NS 3000ull
#define SIM_WAVE_NS 1000ull
#define SIM_BLOCKS_PER_SM 2ull
#define SIM_ARCH 90 /* the cubins the sim accepts: what an H100 runs */

#define SIM_VA_REGION (1ull << 40)
#define SIM_HOST_PAGES 1 /* memtab owner of host arena pages mapped for the device */  /* each tenant's addresses live in their own TiB */
#define SIM_VA_ALIGN 4096ull

/* A piece of device work with data effects or modelled time: what a stream runs, and
 * what capture records into a graph to run later. */
struct sim_work {
    enum { W_COPY, W_FILL, W_KERNEL } kind;
    uint64_t dst, src, n;              /* W_COPY */
    uint64_t pitch, width, height;     /* W_FILL, at dst */
    uint32_t value;
    unsigned elem;
    uint64_t kernel_ns;                /* W_KERNEL */
    struct sim_work *next;
};

struct ds_bstream {
    uint64_t ready_ns; /* when the last submitted work ends */
    unsigned flags;
    int priority;
    int capturing;
    uint64_t capture_id;
    struct sim_work *captured, **captured_tail;
    struct ds_bstream *prev, *next;
};

/* A captured graph and an instantiated one: both an ordered list of work. */
struct ds_bgraph {
    struct sim_work *work;
};

struct ds_bgexec {
    struct sim_work *work;
};

struct ds_bevent {
    unsigned flags;
    int recorded;
    uint64_t at_ns;
};

struct ds_bfunc {
    const struct ds_kernel *k;
    int attrs[CU_FUNC_ATTRIBUTE_MAX]; /* the settable ones, as last set */
    struct ds_bfunc *next;
};

/* A module variable, placed in the tenant's sim memory the first time it is asked for. */
struct sim_global {
    char *name;
    uint64_t addr;
    struct sim_global *next;
};

/* A module owns the functions handed out of it and its variables' memory. */
struct ds_bmodule {
    struct ds_cubin cubin;
    void *elf; /* the cubin, kept for its variables */
    size_t elf_len;
    struct ds_bfunc *funcs;
    struct sim_global *globals;
};

static void free_work(struct sim_work *w)
{
    while (w != NULL) {
        struct sim_work *next = w->next;

        free(w);
        w = next;
    }
}

struct ds_backend {
    struct ds_backend_config cfg;
    uint64_t next_capture_id;
    uint64_t limits[CU_LIMIT_MAX];
    uint64_t stalled_ns; /* host time spent applying data effects: not device time */
    struct ds_memtab mem; /* data = host mapping */
    uint64_t va_base, va_end;
    struct ds_bstream legacy;
    struct ds_bstream streams; /* list head of created streams */
};

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Device time.  The device's clock stands still while the host copies bytes to apply a
 * piece of work's effects: a modelled 1.5 TB/s copy must not take as long as the host's
 * memmove of the same bytes, or the model would measure the host. */
static uint64_t now_ns(struct ds_backend *b)
{
    return mono_ns() - b->stalled_ns;
}

static void stall_from(struct ds_backend *b, uint64_t host_start)
{
    b->stalled_ns += mono_ns() - host_start;
}

static void sleep_until(struct ds_backend *b, uint64_t t)
{
    uint64_t real = t + b->stalled_ns;
    struct timespec ts = { .tv_sec = (time_t)(real / 1000000000ull),
                           .tv_nsec = (long)(real % 1000000000ull) };

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static struct ds_bstream *stream_or_legacy(struct ds_backend *b, struct ds_bstream *s)
{
    return s ? s : &b->legacy;
}

/* When work submitted now to s may start, under the legacy default stream's rules. */
static uint64_t start_time(struct ds_backend *b, struct ds_bstream *s)
{
    uint64_t t = max_u64(now_ns(b), s->ready_ns);

    if (s == &b->legacy) {
        for (struct ds_bstream *o = b->streams.next; o != &b->streams; o = o->next)
            if (!(o->flags & CU_STREAM_NON_BLOCKING))
                t = max_u64(t, o->ready_ns);
    } else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
        t = max_u64(t, b->legacy.ready_ns);
    }
    return t;
}

static uint64_t submit(struct ds_backend *b, struct ds_bstream *s, uint64_t duration_ns)
{
    s = stream_or_legacy(b, s);
    s->ready_ns = start_time(b, s) + duration_ns;
    return s->ready_ns;
}

static uint64_t cost(uint64_t bytes, uint64_t bytes_per_us)
{
    return SIM_OP_NS + bytes * 1000ull / bytes_per_us;
}

static unsigned char *host_of(struct ds_backend *b, uint64_t addr)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&b->mem, addr, 0);

    return (unsigned char *)e->data + (addr - e->base);
}

static void fill_attrs(int *a, int sms)
{
    a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024;
    a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] = 1024;
    a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] = 1024;
    a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z] = 64;
    a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] = 2147483647;
    a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] = 65535;
    a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z] = 65535;
    a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK] = 49152;
    a[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY] = 65536;
    a[CU_DEVICE_ATTRIBUTE_WARP_SIZE] = 32;
    a[CU_DEVICE_ATTRIBUTE_MAX_PITCH] = 2147483647;
    a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK] = 65536;
    a[CU_DEVICE_ATTRIBUTE_CLOCK_RATE] = 1980000;
    a[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT] = 512;
    a[CU_DEVICE_ATTRIBUTE_GPU_OVERLAP] = 1;
    a[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = sms;
    a[CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY] = 1;
    a[CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS] = 1;
    a[CU_DEVICE_ATTRIBUTE_ECC_ENABLED] = 1;
    a[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] = 0x19;
    a[CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE] = 2619000;
    a[CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH] = 5120;
    a[CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE] = 52428800;
    a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR] = 2048;
    a[CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT] = 3;
    a[CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING] = 1;
    a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] = 9;
    a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR] = 0;
    a[CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED] = 1;
    a[CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED] = 1;
    a[CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED] = 1;
    a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] = 233472;
    a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR] = 65536;
    a[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY] = 1;
    a[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS] = 1;
    a[CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED] = 1;
    a[CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM] = 1;
    a[CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH] = 1;
    a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] = 232448;
    a[CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR] = 32;
    a[CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK] = 1024;
    a[CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED] = 1;
    a[CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 1;
    a[CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH] = 1;
}

static int sim_open(const struct ds_backend_config *cfg, struct ds_backend **out)
{
    struct ds_backend *b = calloc(1, sizeof(*b));

    if (b == NULL)
        return DS_ENOMEM;
    b->cfg = *cfg;
    ds_memtab_init(&b->mem);
    /* An H100's defaults. */
    b->limits[CU_LIMIT_STACK_SIZE] = 1024;
    b->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
    b->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
    b->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
    b->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 32;
    /* Distinct regions per tenant: a pointer leaked from one tenant never names memory
     * of another, even by coincidence. */
    b->va_base = SIM_VA_REGION * (uint64_t)(cfg->slot + 1);
    b->va_end = b->va_base + SIM_VA_REGION;
    b->streams.next = b->streams.prev = &b->streams;
    *out = b;
    return 0;
}

static void sim_close(struct ds_backend *b)
{
    while (b->streams.next != &b->streams) {
        struct ds_bstream *s = b->streams.next;

        s->prev->next = s->next;
        s->next->prev = s->prev;
        free_work(s->captured);
        free(s);
    }
    for (size_t i = 0; i < b->mem.n; i++) {
        if (b->mem.v[i].owner == SIM_HOST_PAGES)
            continue;
        munmap(b->mem.v[i].data, b->mem.v[i].size);
        ds_shm_sim_release(b->cfg.shm, b->cfg.slot, b->mem.v[i].size);
    }
    ds_memtab_destroy(&b->mem);
    free(b);
}

static void sim_describe(struct ds_backend *b, struct ds_device_view *v)
{
    memset(v, 0, sizeof(*v));
    snprintf(v->name, sizeof(v->name), "detshare sim device (H100-like, %d SMs)",
             b->cfg.sim_sms);
    memcpy(v->uuid, "detshare-sim-dev", 16);
    v->uuid[15] = (unsigned char)b->cfg.gpu;
    v->total_mem = b->cfg.shm->sim_mem_total;
    v->driver_version = CUDA_VERSION;
    fill_attrs(v->attrs, b->cfg.sim_sms);
}

/* First fit in this tenant's address region; allocations are few, so a scan is fine. */
static int find_va(struct ds_backend *b, uint64_t size, uint64_t *addr)
{
    uint64_t cand = b->va_base;

    for (size_t i = 0; i < b->mem.n; i++) {
        const struct ds_memtab_entry *e = &b->mem.v[i];

        if (cand + size <= e->base)
            break;
        cand = (e->base + e->size + SIM_VA_ALIGN - 1) & ~(SIM_VA_ALIGN - 1);
    }
    if (size > b->va_end - cand)
        return DS_ENOMEM;
    *addr = cand;
    return 0;
}

static int sim_mem_alloc(struct ds_backend *b, uint64_t size, int capture_mode, uint64_t *addr)
{
    struct ds_memtab_entry e = { .size = size };
    int rc;

    (void)capture_mode; /* the sim captures one stream's work and never refuses these */
    if (ds_shm_sim_reserve(b->cfg.shm, b->cfg.slot, size) != 0)
        return DS_ENOMEM;
    rc = find_va(b, size, &e.base);
    if (rc == 0) {
        /* NORESERVE: untouched device memory costs the host nothing. */
        e.data = mmap(NULL, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        rc = e.data == MAP_FAILED ? DS_ENOMEM : ds_memtab_insert(&b->mem, &e);
        if (rc != 0 && e.data != MAP_FAILED)
            munmap(e.data, size);
    }
    if (rc != 0) {
        ds_shm_sim_release(b->cfg.shm, b->cfg.slot, size);
        return rc;
    }
    *addr = e.base;
    return 0;
}

/* Arena pages become device memory at an address of their own; the entry's owner marks
 * them as the tenant's (never unmapped or accounted here). */
static int sim_host_map(struct ds_backend *b, void *host, uint64_t size, uint64_t *addr)
{
    struct ds_memtab_entry e = { .size = size, .data = host, .owner = SIM_HOST_PAGES };
    int rc = find_va(b, size, &e.base);

    if (rc == 0)
        rc = ds_memtab_insert(&b->mem, &e);
    if (rc == 0)
        *addr = e.base;
    return rc;
}

static void sim_host_unmap(struct ds_backend *b, uint64_t addr, void *host)
{
    (void)host;
    ds_memtab_remove(&b->mem, addr, NULL);
}

static int sim_mem_free(struct ds_backend *b, uint64_t addr)
{
    struct ds_memtab_entry e;
    int rc = ds_memtab_remove(&b->mem, addr, &e);

    if (rc != 0)
        return rc;
    munmap(e.data, e.size);
    ds_shm_sim_release(b->cfg.shm, b->cfg.slot, e.size);
    return 0;
}

static void sim_mem_info(struct ds_backend *b, uint64_t *free_bytes, uint64_t *total)
{
    uint64_t used = ds_shm_sim_used(b->cfg.shm);

    *total = b->cfg.shm->sim_mem_total;
    *free_bytes = used < *total ? *total - used : 0;
}

static int sim_memcpy_htod(struct ds_backend *b, uint64_t dst, const void *src, size_t n,
                           struct ds_bstream *s)
{
    uint64_t t0 = mono_ns();

    memcpy(host_of(b, dst), src, n);
    stall_from(b, t0);
    submit(b, s, cost(n, SIM_PCIE_BYTES_PER_US));
    return 0;
}

static int sim_memcpy_dtoh(struct ds_backend *b, void *dst, uint64_t src, size_t n,
                           struct ds_bstream *s)
{
    uint64_t t0 = mono_ns();

    memcpy(dst, host_of(b, src), n);
    stall_from(b, t0);
    sleep_until(b, submit(b, s, cost(n, SIM_PCIE_BYTES_PER_US)));
    return 0;
}


static void fill_row(unsigned char *p, uint32_t value, unsigned elem, uint64_t count)
{
    if (elem == 1) {
        memset(p, (int)(value & 0xff), count);
        return;
    }
    for (uint64_t i = 0; i < count; i++) {
        if (elem == 2) {
            uint16_t v = (uint16_t)value;

            memcpy(p + i * 2, &v, 2);
        } else {
            memcpy(p + i * 4, &value, 4);
        }
    }
}

/* Whether the memory a piece of work touches is still allocated.  Always so when it is
 * submitted (the executor checked); a graph replayed after a free finds out here. */
static int work_valid(const struct ds_backend *b, const struct sim_work *w)
{
    if (w->kind == W_COPY)
        return ds_memtab_find(&b->mem, w->dst, w->n) != NULL &&
               ds_memtab_find(&b->mem, w->src, w->n) != NULL;
    if (w->kind == W_FILL)
        return ds_memtab_find(&b->mem, w->dst,
                              w->pitch * (w->height - 1) + w->width * w->elem) != NULL;
    return 1;
}

/* Apply w's data effects now; returns its modelled duration. */
static uint64_t work_apply(struct ds_backend *b, const struct sim_work *w)
{
    uint64_t t0 = mono_ns();

    if (w->kind == W_COPY) {
        memmove(host_of(b, w->dst), host_of(b, w->src), w->n);
        stall_from(b, t0);
        return cost(2 * w->n, SIM_HBM_BYTES_PER_US);
    }
    if (w->kind == W_FILL) {
        unsigned char *p = host_of(b, w->dst);

        for (uint64_t row = 0; row < w->height; row++)
            fill_row(p + row * w->pitch, w->value, w->elem, w->width);
        stall_from(b, t0);
        return cost(w->width * w->elem * w->height, SIM_HBM_BYTES_PER_US);
    }
    return w->kernel_ns;
}

/* Run w on s, or record it when s is being captured. */
static int work_run(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w)
{
    struct sim_work *copy;

    if (s != NULL && s->capturing) {
        copy = malloc(sizeof(*copy));
        if (copy == NULL)
            return DS_ENOMEM;
        *copy = *w;
        copy->next = NULL;
        *s->captured_tail = copy;
        s->captured_tail = &copy->next;
        return 0;
    }
    if (!work_valid(b, w))
        return DS_ECU(CUDA_ERROR_ILLEGAL_ADDRESS);
    submit(b, s, work_apply(b, w));
    return 0;
}

static int sim_memcpy_dtod(struct ds_backend *b, uint64_t dst, uint64_t src, size_t n,
                           struct ds_bstream *s)
{
    struct sim_work w = { .kind = W_COPY, .dst = dst, .src = src, .n = n };

    return work_run(b, s, &w);
}

static int sim_memset(struct ds_backend *b, uint64_t dst, uint64_t pitch, uint32_t value,
                      unsigned elem_size, uint64_t width, uint64_t height,
                      struct ds_bstream *s)
{
    struct sim_work w = { .kind = W_FILL, .dst = dst, .pitch = pitch, .value = value,
                          .elem = elem_size, .width = width, .height = height };

    return work_run(b, s, &w);
}

static int sim_stream_create(struct ds_backend *b, unsigned flags, int priority,
                             struct ds_bstream **out)
{
    struct ds_bstream *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return DS_ENOMEM;
    s->flags = flags;
    s->priority = priority;
    s->next = b->streams.next;
    s->prev = &b->streams;
    b->streams.next->prev = s;
    b->streams.next = s;
    *out = s;
    return 0;
}

/* Work already submitted keeps its modelled times; nothing waits on a destroyed stream. */
static void sim_stream_destroy(struct ds_backend *b, struct ds_bstream *s)
{
    (void)b;
    free_work(s->captured);
    s->prev->next = s->next;
    s->next->prev = s->prev;
    free(s);
}

static int sim_stream_query(struct ds_backend *b, struct ds_bstream *s)
{
    if (s != NULL && s->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    return stream_or_legacy(b, s)->ready_ns <= now_ns(b) ? 0 : DS_ENOTREADY;
}

static int sim_stream_synchronize(struct ds_backend *b, struct ds_bstream *s)
{
    if (s != NULL && s->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    sleep_until(b, stream_or_legacy(b, s)->ready_ns);
    return 0;
}

static int sim_stream_wait_event(struct ds_backend *b, struct ds_bstream *s,
                                 struct ds_bevent *e)
{
    if (s != NULL && s->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    s = stream_or_legacy(b, s);
    if (e->recorded)
        s->ready_ns = max_u64(s->ready_ns, e->at_ns);
    return 0;
}

static int sim_event_create(struct ds_backend *b, unsigned flags, struct ds_bevent **out)
{
    struct ds_bevent *e = calloc(1, sizeof(*e));

    (void)b;
    if (e == NULL)
        return DS_ENOMEM;
    e->flags = flags;
    *out = e;
    return 0;
}

static void sim_event_destroy(struct ds_backend *b, struct ds_bevent *e)
{
    (void)b;
    free(e);
}

static int sim_event_record(struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s)
{
    if (s != NULL && s->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    e->at_ns = submit(b, s, 0);
    e->recorded = 1;
    return 0;
}

/* An event never recorded counts as complete, as in CUDA. */
static int sim_event_query(struct ds_backend *b, struct ds_bevent *e)
{
    return !e->recorded || e->at_ns <= now_ns(b) ? 0 : DS_ENOTREADY;
}

static int sim_event_synchronize(struct ds_backend *b, struct ds_bevent *e)
{
    if (e->recorded)
        sleep_until(b, e->at_ns);
    return 0;
}

static int sim_event_elapsed(struct ds_backend *b, struct ds_bevent *start,
                             struct ds_bevent *end, float *ms)
{
    if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING)
        return DS_EHANDLE;
    if (!start->recorded || !end->recorded)
        return DS_EHANDLE;
    if (start->at_ns > now_ns(b) || end->at_ns > now_ns(b))
        return DS_ENOTREADY;
    *ms = (float)((double)((int64_t)end->at_ns - (int64_t)start->at_ns) / 1e6);
    return 0;
}

static int sim_limit(struct ds_backend *b, int limit, int set, uint64_t *value)
{
    if (limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH)
        return DS_EINVAL; /* not on compute capability 9.0 */
    if (set)
        b->limits[limit] = *value;
    *value = b->limits[limit];
    return 0;
}

/* The one value measured so far: kind 0 read 7 on an H100 (docs/export-tables.md). */
static int sim_ctx_query(struct ds_backend *b, unsigned query, uint64_t *value)
{
    (void)b;
    if (query != 0)
        return DS_ENOTSUP;
    *value = 7;
    return 0;
}

static int sim_synchronize(struct ds_backend *b)
{
    uint64_t t = b->legacy.ready_ns;

    for (struct ds_bstream *s = b->streams.next; s != &b->streams; s = s->next)
        t = max_u64(t, s->ready_ns);
    sleep_until(b, t);
    return 0;
}

/* A malloc'd copy of the sm_90 cubin of an image: the image itself, or its fatbin's
 * entry, decompressed. */
static int sim_cubin_of(const void *image, size_t len, void **elf, size_t *elf_len)
{
    struct ds_fatbin_entry e;
    enum ds_image_kind kind;
    size_t size;
    int rc;

    rc = ds_image_identify(image, len, &kind, NULL, &size);
    if (rc != 0)
        return rc;
    /* PTX would need a JIT; the sim reads kernels from cubins only. */
    if (kind == DS_IMAGE_PTX)
        return DS_ENOTSUP;
    if (kind == DS_IMAGE_ELF) {
        e = (struct ds_fatbin_entry){ .kind = DS_IMAGE_ELF, .codec = DS_FATBIN_RAW,
                                      .data = image, .len = size, .raw_len = size };
    } else if ((rc = ds_fatbin_find(image, size, SIM_ARCH, DS_IMAGE_ELF, &e)) != 0) {
        return rc;
    }
    return ds_fatbin_extract(&e, elf, elf_len);
}

static int sim_module_load(struct ds_backend *b, const void *image, size_t len,
                           struct ds_bmodule **out)
{
    struct ds_bmodule *m = calloc(1, sizeof(*m));
    int rc;

    (void)b;
    if (m == NULL)
        return DS_ENOMEM;
    rc = sim_cubin_of(image, len, &m->elf, &m->elf_len);
    if (rc == 0)
        rc = ds_cubin_parse(m->elf, m->elf_len, &m->cubin);
    if (rc != 0) {
        free(m->elf);
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

static void sim_module_unload(struct ds_backend *b, struct ds_bmodule *m)
{
    while (m->globals != NULL) {
        struct sim_global *g = m->globals;

        m->globals = g->next;
        sim_mem_free(b, g->addr);
        free(g->name);
        free(g);
    }
    free(m->elf);
    while (m->funcs != NULL) {
        struct ds_bfunc *f = m->funcs;

        m->funcs = f->next;
        free(f);
    }
    ds_cubin_free(&m->cubin);
    free(m);
}

static int sim_module_get_function(struct ds_backend *b, struct ds_bmodule *m, const char *name,
                                   struct ds_bfunc **out, struct ds_param_layout *layout)
{
    const struct ds_kernel *k = ds_cubin_kernel(&m->cubin, name);
    struct ds_bfunc *f;
    uint32_t n;

    (void)b;
    if (k == NULL)
        return DS_EHANDLE;
    n = k->nparams;
    f = calloc(1, sizeof(*f));
    layout->offset = calloc(n ? n : 1, sizeof(uint32_t));
    layout->size = calloc(n ? n : 1, sizeof(uint32_t));
    if (f == NULL || layout->offset == NULL || layout->size == NULL) {
        free(f);
        free(layout->offset);
        free(layout->size);
        return DS_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        layout->offset[i] = k->params[i].offset;
        layout->size[i] = k->params[i].size;
    }
    layout->n = n;
    layout->bytes = k->param_bytes;
    f->k = k;
    f->attrs[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT] = -1;
    f->next = m->funcs;
    m->funcs = f;
    *out = f;
    return 0;
}

/* A variable gets device memory, holding its initial bytes, when first asked for; later
 * requests return the same memory, as a loaded module's variables have one address. */
static int sim_module_get_global(struct ds_backend *b, struct ds_bmodule *m, const char *name,
                                 uint64_t *addr, uint64_t *size)
{
    struct sim_global *g;
    const void *init;
    int rc = ds_cubin_global(m->elf, m->elf_len, name, size, &init);

    if (rc != 0)
        return rc;
    for (g = m->globals; g != NULL; g = g->next)
        if (strcmp(g->name, name) == 0) {
            *addr = g->addr;
            return 0;
        }
    g = calloc(1, sizeof(*g));
    if (g == NULL || (g->name = strdup(name)) == NULL) {
        free(g);
        return DS_ENOMEM;
    }
    rc = sim_mem_alloc(b, *size, CU_STREAM_CAPTURE_MODE_RELAXED, &g->addr);
    if (rc != 0) {
        free(g->name);
        free(g);
        return rc;
    }
    if (init != NULL)
        memcpy(host_of(b, g->addr), init, *size);
    g->next = m->globals;
    m->globals = g;
    *addr = g->addr;
    return 0;
}

static int sim_func_get_attribute(struct ds_backend *b, struct ds_bfunc *f, int attr,
                                  int *value)
{
    (void)b;
    switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *value = 1024;
        break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *value = 32;
        break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *value = SIM_ARCH;
        break;
    default:
        *value = f->attrs[attr];
        break;
    }
    return 0;
}

/* The attributes CUDA lets a program set, with the ranges an H100 accepts. */
static int sim_func_set_attribute(struct ds_backend *b, struct ds_bfunc *f, int attr, int value)
{
    int ok;

    (void)b;
    switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        ok = value >= 0 && value <= 232448;
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        ok = value >= -1 && value <= 100;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        ok = value >= 0 && value <= 16;
        break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        ok = value == 0 || value == 1;
        break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        ok = value >= 0 && value <= 2;
        break;
    default:
        ok = 0;
        break;
    }
    if (!ok)
        return DS_EINVAL;
    f->attrs[attr] = value;
    return 0;
}

static int sim_occupancy(struct ds_backend *b, struct ds_bfunc *f, int block_size,
                         size_t dynamic_smem, unsigned flags, int *blocks)
{
    int n = 2048 / block_size;

    (void)b;
    (void)f;
    (void)flags;
    if (n > 32)
        n = 32;
    if (dynamic_smem > 0 && (size_t)n > 233472 / dynamic_smem)
        n = (int)(233472 / dynamic_smem);
    *blocks = n;
    return 0;
}

/* What is left of an SM's shared memory per block when num_blocks share it. */
static int sim_occupancy_smem(struct ds_backend *b, struct ds_bfunc *f, int num_blocks,
                              int block_size, size_t *smem)
{
    size_t per = 233472 / (size_t)num_blocks;

    (void)b;
    (void)f;
    if (num_blocks * block_size > 2048)
        return DS_EINVAL;
    per = per > 1024 ? per - 1024 : 0;
    *smem = per > 232448 ? 232448 : per;
    return 0;
}

static int sim_occupancy_clusters(struct ds_backend *b, struct ds_bfunc *f,
                                  const struct ds_launch *l, const unsigned cluster[3],
                                  int *clusters)
{
    uint64_t size = (uint64_t)cluster[0] * cluster[1] * cluster[2];
    int threads = (int)(l->block[0] * l->block[1] * l->block[2]), per_sm;
    int max = f->attrs[CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED] ? 16 : 8;

    if (size == 0 || threads <= 0 || threads > 1024)
        return DS_EINVAL;
    /* An H100 co-schedules at most 8 blocks in a cluster, 16 when the kernel opts in:
     * larger clusters can never be active, which is an answer, not an error. */
    if (size > (uint64_t)max) {
        *clusters = 0;
        return 0;
    }
    sim_occupancy(b, f, threads, l->shared_mem, 0, &per_sm);
    *clusters = (int)((uint64_t)b->cfg.sim_sms * (uint64_t)per_sm / size);
    return 0;
}

static int sim_launch(struct ds_backend *b, struct ds_bfunc *f, const struct ds_launch *l,
                      struct ds_bstream *s)
{
    uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
    uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    uint64_t per_wave = (uint64_t)b->cfg.sim_sms * SIM_BLOCKS_PER_SM;
    uint64_t waves = (blocks + per_wave - 1) / per_wave;

    struct sim_work w = { .kind = W_KERNEL };

    if (l->param_bytes != f->k->param_bytes)
        return DS_EINVAL;
    w.kernel_ns = SIM_LAUNCH_NS + waves * SIM_WAVE_NS * ((threads + 255) / 256);
    return work_run(b, s, &w);
}

/* Capture on the sim covers work on the one stream: fork and join through events would
 * need graph edges it does not model, so events on a capturing stream are refused. */
#define CAPTURE_UNSUPPORTED DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)

static int sim_capture_begin(struct ds_backend *b, struct ds_bstream *s, int mode)
{
    (void)mode;
    s->capturing = 1;
    s->capture_id = ++b->next_capture_id;
    s->captured = NULL;
    s->captured_tail = &s->captured;
    return 0;
}

static int sim_capture_end(struct ds_backend *b, struct ds_bstream *s, struct ds_bgraph **out)
{
    struct ds_bgraph *g = calloc(1, sizeof(*g));

    (void)b;
    s->capturing = 0;
    if (g == NULL) {
        free_work(s->captured);
        s->captured = NULL;
        return DS_ENOMEM;
    }
    g->work = s->captured;
    s->captured = NULL;
    *out = g;
    return 0;
}

static int sim_capture_info(struct ds_backend *b, struct ds_bstream *s, int *status,
                            uint64_t *id)
{
    (void)b;
    *status = s->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    *id = s->capturing ? s->capture_id : 0;
    return 0;
}

static int sim_graph_instantiate(struct ds_backend *b, struct ds_bgraph *g, uint64_t flags,
                                 struct ds_bgexec **out)
{
    struct ds_bgexec *e = calloc(1, sizeof(*e));
    struct sim_work **tail;

    (void)b;
    (void)flags;
    if (e == NULL)
        return DS_ENOMEM;
    tail = &e->work;
    for (const struct sim_work *w = g->work; w != NULL; w = w->next) {
        *tail = malloc(sizeof(**tail));
        if (*tail == NULL) {
            free_work(e->work);
            free(e);
            return DS_ENOMEM;
        }
        **tail = *w;
        (*tail)->next = NULL;
        tail = &(*tail)->next;
    }
    *out = e;
    return 0;
}

static int sim_graph_launch(struct ds_backend *b, struct ds_bgexec *e, struct ds_bstream *s)
{
    if (s != NULL && s->capturing)
        return CAPTURE_UNSUPPORTED;
    for (const struct sim_work *w = e->work; w != NULL; w = w->next) {
        int rc = work_run(b, s, w);

        if (rc != 0)
            return rc;
    }
    return 0;
}

static int sim_graph_node_count(struct ds_backend *b, struct ds_bgraph *g, uint64_t *n)
{
    (void)b;
    *n = 0;
    for (const struct sim_work *w = g->work; w != NULL; w = w->next)
        (*n)++;
    return 0;
}

static void sim_graph_destroy(struct ds_backend *b, struct ds_bgraph *g)
{
    (void)b;
    free_work(g->work);
    free(g);
}

static void sim_graph_exec_destroy(struct ds_backend *b, struct ds_bgexec *e)
{
    (void)b;
    free_work(e->work);
    free(e);
}

const struct ds_backend_ops ds_sim_backend = {
    .name = "sim",
    .open = sim_open,
    .close = sim_close,
    .describe = sim_describe,
    .dev_alloc = sim_mem_alloc,
    .dev_free = sim_mem_free,
    .dev_info = sim_mem_info,
    .host_map = sim_host_map,
    .host_unmap = sim_host_unmap,
    .memcpy_htod = sim_memcpy_htod,
    .memcpy_dtoh = sim_memcpy_dtoh,
    .memcpy_dtod = sim_memcpy_dtod,
    .memset = sim_memset,
    .stream_create = sim_stream_create,
    .stream_destroy = sim_stream_destroy,
    .stream_query = sim_stream_query,
    .stream_synchronize = sim_stream_synchronize,
    .stream_wait_event = sim_stream_wait_event,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_record = sim_event_record,
    .event_query = sim_event_query,
    .event_synchronize = sim_event_synchronize,
    .event_elapsed = sim_event_elapsed,
    .synchronize = sim_synchronize,
    .limit = sim_limit,
    .ctx_query = sim_ctx_query,
    .module_load = sim_module_load,
    .module_unload = sim_module_unload,
    .module_get_function = sim_module_get_function,
    .module_get_global = sim_module_get_global,
    .func_get_attribute = sim_func_get_attribute,
    .func_set_attribute = sim_func_set_attribute,
    .occupancy = sim_occupancy,
    .occupancy_smem = sim_occupancy_smem,
    .occupancy_clusters = sim_occupancy_clusters,
    .launch = sim_launch,
    .capture_begin = sim_capture_begin,
    .capture_end = sim_capture_end,
    .capture_info = sim_capture_info,
    .graph_instantiate = sim_graph_instantiate,
    .graph_launch = sim_graph_launch,
    .graph_destroy = sim_graph_destroy,
    .graph_node_count = sim_graph_node_count,
    .graph_exec_destroy = sim_graph_exec_destroy,
};
