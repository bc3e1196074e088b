#define _GNU_SOURCE /* memfd_create */
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
#include "sim_core.h"

#include "cubin.h"
#include "ds_error.h"
#include "ds_image.h"
#include "ds_memtab.h"
#include "shm.h"
#include "ds_clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

void ds__sim_free_work(struct sim_work *w)
{
    while (w != NULL) {
        struct sim_work *next = w->next;

        if (w->kind == W_HTOD)
            free(w->host);
        free(w);
        w = next;
    }
}

/* Device time.  The device's clock stands still while the host copies bytes to apply a
 * piece of work's effects: a modelled 1.5 TB/s copy must not take as long as the host's
 * memmove of the same bytes, or the model would measure the host. */
static uint64_t now_ns(struct ds_backend *b)
{
    return ds_now_ns() - b->stalled_ns;
}

static void stall_from(struct ds_backend *b, uint64_t host_start)
{
    b->stalled_ns += ds_now_ns() - host_start;
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

struct ds_bstream *ds__sim_stream(struct ds_backend *b, struct ds_bstream *s)
{
    return stream_or_legacy(b, s);
}

uint64_t ds__sim_now(struct ds_backend *b)
{
    return now_ns(b);
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

uint64_t ds__sim_submit(struct ds_backend *b, struct ds_bstream *s, uint64_t duration_ns)
{
    s = stream_or_legacy(b, s);
    s->ready_ns = start_time(b, s) + duration_ns;
    return s->ready_ns;
}

static uint64_t cost(uint64_t bytes, uint64_t bytes_per_us)
{
    return SIM_OP_NS + bytes * 1000ull / bytes_per_us;
}

unsigned char *ds__sim_host_of(struct ds_backend *b, uint64_t addr)
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
    a[CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED] = 1;
    a[CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED] = 1;
}

int ds__sim_open(const struct ds_backend_config *cfg, struct ds_backend **out)
{
    struct ds_backend *b = calloc(1, sizeof(*b));

    if (b == NULL)
        return DS_ENOMEM;
    b->cfg = *cfg;
    ds_memtab_init(&b->mem);
    ds_memtab_init(&b->vmm_maps);
    ds_memtab_init(&b->ipc_out);
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
    ds_sim_sm_groups(cfg->sim_sms, &b->groups);
    b->sms = (unsigned)cfg->sim_sms;
    b->fault_kernel = getenv("DETSHARE_SIM_FAULT");
    b->domain_faults = atomic_load(&cfg->shm->shared_faults);
    b->hang_kernel = getenv("DETSHARE_SIM_HANG");
    ds__sim_pctx_init(b);
    *out = b;
    return 0;
}

void ds_sim_sm_groups(int sms, struct ds_sm_groups *out)
{
    out->sms = (unsigned)sms;
    out->size = sms < 8 ? (unsigned)sms : 8;
    out->count = out->sms / out->size > 64 ? 64 : out->sms / out->size;
}

/* The executor's own gate holds the sim's work: a modelled kernel never runs ahead of
 * its submission in a way another tenant could see. */
int ds__sim_gate(struct ds_backend *b, struct ds_bstream *s, const volatile unsigned *word)
{
    (void)b;
    (void)s;
    (void)word;
    return 0;
}

/* The sim knows when the work on s ends: the stamp carries that time, and the control
 * process counts it done from then on. */
int ds__sim_stamp(struct ds_backend *b, struct ds_bstream *s, struct ds_shm_stamp *st,
                  uint32_t seq)
{
    if (s != NULL && s->capturing)
        return DS_EBUSY;
    atomic_store_explicit(&st->at_ns, UINT64_MAX, memory_order_release);
    atomic_store_explicit(&st->seq, seq, memory_order_release);
    atomic_store_explicit(&st->at_ns, stream_or_legacy(b, s)->ready_ns + b->stalled_ns,
                          memory_order_release);
    return 0;
}

/* A context's teardown takes a while on a GPU (tens to hundreds of ms, more under MPS);
 * DETSHARE_SIM_CLOSE_MS makes the sim's take that long, for what happens meanwhile. */
static void close_delay(void)
{
    const char *env = getenv("DETSHARE_SIM_CLOSE_MS");
    unsigned long ms = env != NULL ? strtoul(env, NULL, 10) % 10000 : 0;
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

    nanosleep(&ts, NULL);
}

void ds__sim_close(struct ds_backend *b)
{
    close_delay();
    ds__sim_drop_parked(b, &b->legacy);
    while (b->streams.next != &b->streams) {
        struct ds_bstream *s = b->streams.next;

        ds__sim_drop_parked(b, s);
        s->prev->next = s->next;
        s->next->prev = s->prev;
        ds__sim_free_work(s->captured);
        free(s);
    }
    ds__sim_ipc_fini(b);
    /* Other tenants' memory opened here is counted to this tenant too (sim_ipc.c). */
    for (size_t i = 0; i < b->mem.n; i++) {
        if (b->mem.v[i].owner == SIM_HOST_PAGES)
            continue;
        munmap(b->mem.v[i].data, b->mem.v[i].size);
        /* A reservation is address space only: its allocations are counted apart. */
        if (b->mem.v[i].owner != SIM_VMM_VA)
            ds_shm_sim_release(b->cfg.shm, b->cfg.slot, b->mem.v[i].size);
    }
    ds_memtab_destroy(&b->mem);
    ds_memtab_destroy(&b->vmm_maps);
    ds__sim_pctx_fini(b);
    free(b);
}

static int shared_domain(const struct ds_backend *b)
{
    return atomic_load(&b->cfg.shm->slots[b->cfg.slot].isolation) != DS_ISO_OWN;
}

/* The sim models MPS (its tenants share SMs as MPS clients do), so its contexts say they
 * are MPS clients, except while the file DETSHARE_SIM_NO_MPS names exists: what executors
 * and the server do when MPS fails is tested that way. */
static int sim_mps_client(const struct ds_backend *b)
{
    const char *f = getenv("DETSHARE_SIM_NO_MPS");

    if (!shared_domain(b))
        return 0;
    return f == NULL || access(f, F_OK) != 0;
}

void ds__sim_describe(struct ds_backend *b, struct ds_device_view *v)
{
    memset(v, 0, sizeof(*v));
    snprintf(v->name, sizeof(v->name), "detshare sim device (H100-like, %d SMs)",
             b->cfg.sim_sms);
    memcpy(v->uuid, "detshare-sim-dev", 16);
    v->uuid[15] = (unsigned char)b->cfg.gpu;
    v->total_mem = b->cfg.shm->sim_mem_total;
    v->driver_version = CUDA_VERSION;
    fill_attrs(v->attrs, b->cfg.sim_sms);
    v->attrs[CU_DEVICE_ATTRIBUTE_MPS_ENABLED] = sim_mps_client(b);
}

/* First fit in this tenant's address region; allocations are few, so a scan is fine. */
static int find_va(struct ds_backend *b, uint64_t size, uint64_t *addr)
{
    return ds_memtab_first_fit(&b->mem, b->va_base, b->va_end, size, SIM_VA_ALIGN, addr);
}

int ds__sim_dev_alloc(struct ds_backend *b, uint64_t size, int capture_mode, uint64_t *addr)
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

/* Arena pages become device memory at their host address, as under unified addressing
 * on a GPU, or at an address of their own when that one is taken; the entry's owner
 * marks them as the tenant's (never unmapped or accounted here). */
int ds__sim_dev_alloc_pitch(struct ds_backend *b, uint64_t width, uint64_t height,
                            unsigned elem_size, int capture_mode, uint64_t *addr,
                            uint64_t *pitch)
{
    uint64_t p;

    (void)elem_size; /* the driver's hint for coalescing; the sim has none to make */
    if (width > UINT64_MAX - (SIM_PITCH_ALIGN - 1))
        return DS_EINVAL;
    p = (width + SIM_PITCH_ALIGN - 1) / SIM_PITCH_ALIGN * SIM_PITCH_ALIGN;
    if (height > UINT64_MAX / p)
        return DS_EINVAL;
    *pitch = p;
    return ds__sim_dev_alloc(b, p * height, capture_mode, addr);
}

int ds__sim_host_map(struct ds_backend *b, void *host, uint64_t size, uint64_t *addr)
{
    struct ds_memtab_entry e = { .base = (uint64_t)(uintptr_t)host, .size = size,
                                 .data = host, .owner = SIM_HOST_PAGES };
    int rc = ds_memtab_insert(&b->mem, &e);

    if (rc != 0 && (rc = find_va(b, size, &e.base)) == 0)
        rc = ds_memtab_insert(&b->mem, &e);
    if (rc == 0)
        *addr = e.base;
    return rc;
}

void ds__sim_host_unmap(struct ds_backend *b, uint64_t addr, void *host)
{
    (void)host;
    ds_memtab_remove(&b->mem, addr, NULL);
}

int ds__sim_dev_free(struct ds_backend *b, uint64_t addr)
{
    struct ds_memtab_entry e;
    int rc = ds_memtab_remove(&b->mem, addr, &e);

    if (rc != 0)
        return rc;
    ds__sim_ipc_unshare(b, addr);
    munmap(e.data, e.size);
    ds_shm_sim_release(b->cfg.shm, b->cfg.slot, e.size);
    return 0;
}

void ds__sim_dev_info(struct ds_backend *b, uint64_t *free_bytes, uint64_t *total)
{
    uint64_t used = ds_shm_sim_used(b->cfg.shm);

    *total = b->cfg.shm->sim_mem_total;
    *free_bytes = used < *total ? *total - used : 0;
}

/* A host copy behind a parked stream waits there with its bytes (sim_memop.c). */
static int park_host_copy(struct ds_backend *b, struct ds_bstream *s, int kind, uint64_t dev,
                          void *host, size_t n)
{
    struct sim_work w = { .kind = kind, .dst = dev, .n = n, .host = host };
    int rc;

    if (stream_or_legacy(b, s)->parked == NULL)
        return 0;
    if (kind == W_HTOD && (w.host = malloc(n ? n : 1)) == NULL)
        return DS_ENOMEM;
    if (kind == W_HTOD)
        memcpy(w.host, host, n);
    rc = ds__sim_park(b, s, &w);
    if (rc != 1 && kind == W_HTOD)
        free(w.host);
    return rc;
}

int ds__sim_memcpy_htod(struct ds_backend *b, uint64_t dst, const void *src, size_t n,
                        struct ds_bstream *s)
{
    uint64_t t0 = ds_now_ns();
    int rc = park_host_copy(b, s, W_HTOD, dst, (void *)src, n);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    memcpy(ds__sim_host_of(b, dst), src, n);
    stall_from(b, t0);
    ds__sim_submit(b, s, cost(n, SIM_PCIE_BYTES_PER_US));
    return 0;
}

void ds__sim_moved(struct ds_backend *b, struct ds_bstream *s, uint64_t t0, uint64_t bytes,
                   int pcie, int wait)
{
    uint64_t end;

    stall_from(b, t0);
    end = ds__sim_submit(b, s, cost(bytes, pcie ? SIM_PCIE_BYTES_PER_US : SIM_HBM_BYTES_PER_US));
    if (wait)
        sleep_until(b, end);
}

int ds__sim_memcpy_dtoh(struct ds_backend *b, void *dst, uint64_t src, size_t n,
                        struct ds_bstream *s)
{
    uint64_t t0 = ds_now_ns();

    /* The executor cannot be held inside a call while the tenant's other threads release
     * the stream: the sim refuses to wait for a parked stream here. */
    ds__sim_unpark(b);
    if (stream_or_legacy(b, s)->parked != NULL)
        return DS_ECU(CUDA_ERROR_NOT_READY);

    memcpy(dst, ds__sim_host_of(b, src), n);
    stall_from(b, t0);
    sleep_until(b, ds__sim_submit(b, s, cost(n, SIM_PCIE_BYTES_PER_US)));
    return 0;
}

/* The sim moves bytes when work is submitted (docs/sim-device.md); the copy's modelled
 * time goes on the stream without the executor waiting for it. */
int ds__sim_memcpy_dtoh_async(struct ds_backend *b, void *dst, uint64_t src, size_t n,
                              struct ds_bstream *s)
{
    uint64_t t0 = ds_now_ns();
    int rc = park_host_copy(b, s, W_DTOH, src, dst, n);

    if (rc != 0)
        return rc < 0 ? rc : 0;

    memcpy(dst, ds__sim_host_of(b, src), n);
    stall_from(b, t0);
    ds__sim_submit(b, s, cost(n, SIM_PCIE_BYTES_PER_US));
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

/* [addr, addr+n) lies in one allocation, or in one VMM reservation and mapped throughout
 * (an unmapped part of a reservation is PROT_NONE host memory). */
static int allocated(const struct ds_backend *b, uint64_t addr, uint64_t n)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&b->mem, addr, n);

    return e != NULL && (e->owner != SIM_VMM_VA || ds__sim_vmm_mapped(b, addr, n));
}

/* Bytes from the first to the last byte of one side of a box (dst: 1): the executor
 * checked it does not overflow. */
static uint64_t box_extent(const struct ds_copy3d *c, int dst)
{
    uint64_t pitch = dst ? c->dst_pitch : c->src_pitch, rows = dst ? c->dst_rows : c->src_rows;

    return ((c->depth - 1) * rows + (c->height - 1)) * pitch + c->width;
}

/* Every row of a box, in order: rows of a side may overlap the other side's, which CUDA
 * leaves undefined, so memmove keeps each row whole at least. */
static void box_apply(struct ds_backend *b, const struct ds_copy3d *c)
{
    unsigned char *dst = ds__sim_host_of(b, c->dst);
    const unsigned char *src = ds__sim_host_of(b, c->src);

    for (uint64_t z = 0; z < c->depth; z++)
        for (uint64_t y = 0; y < c->height; y++)
            memmove(dst + (z * c->dst_rows + y) * c->dst_pitch,
                    src + (z * c->src_rows + y) * c->src_pitch, c->width);
}

/* Whether the memory a piece of work touches is still allocated.  Always so when it is
 * submitted (the executor checked); a graph replayed after a free or an unmap finds out
 * here. */
static int work_valid(const struct ds_backend *b, const struct sim_work *w)
{
    if (w->kind == W_COPY)
        return allocated(b, w->dst, w->n) && allocated(b, w->src, w->n);
    if (w->kind == W_FILL)
        return allocated(b, w->dst, w->pitch * (w->height - 1) + w->width * w->elem);
    if (w->kind == W_BOX)
        return allocated(b, w->box.dst, box_extent(&w->box, 1)) &&
               allocated(b, w->box.src, box_extent(&w->box, 0));
    if (w->kind == W_HTOD || w->kind == W_DTOH)
        return allocated(b, w->dst, w->n);
    if (w->kind == W_MEMOP && w->memop.addr != 0)
        return allocated(b, w->memop.addr, w->elem);
    return 1;
}

/* Apply w's data effects now; returns its modelled duration. */
static uint64_t work_apply(struct ds_backend *b, const struct sim_work *w)
{
    uint64_t t0 = ds_now_ns();

    if (w->kind == W_COPY) {
        memmove(ds__sim_host_of(b, w->dst), ds__sim_host_of(b, w->src), w->n);
        stall_from(b, t0);
        return cost(2 * w->n, SIM_HBM_BYTES_PER_US);
    }
    if (w->kind == W_FILL) {
        unsigned char *p = ds__sim_host_of(b, w->dst);

        for (uint64_t row = 0; row < w->height; row++)
            fill_row(p + row * w->pitch, w->value, w->elem, w->width);
        stall_from(b, t0);
        return cost(w->width * w->elem * w->height, SIM_HBM_BYTES_PER_US);
    }
    if (w->kind == W_BOX) {
        box_apply(b, &w->box);
        stall_from(b, t0);
        return cost(2 * w->box.width * w->box.height * w->box.depth, SIM_HBM_BYTES_PER_US);
    }
    if (w->kind == W_HTOD || w->kind == W_DTOH) {
        if (w->kind == W_HTOD)
            memcpy(ds__sim_host_of(b, w->dst), w->host, w->n);
        else
            memcpy(w->host, ds__sim_host_of(b, w->dst), w->n);
        stall_from(b, t0);
        return cost(w->n, SIM_PCIE_BYTES_PER_US);
    }
    if (w->kind == W_MEMOP) {
        /* A write lands now; a wait that runs holds already (sim_memop.c). */
        if (w->memop.kind == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
            w->memop.kind == CU_STREAM_MEM_OP_WRITE_VALUE_64)
            memcpy(ds__sim_host_of(b, w->memop.addr), &w->memop.value, w->elem);
        return SIM_OP_NS;
    }
    return w->kernel_ns;
}

/* Run w on s, or record it when s is being captured. */
int ds__sim_work_run(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w)
{
    struct sim_work *copy;
    int rc;

    /* A graph's event nodes run in the graph's place in its stream; a capturing stream
     * refuses them, as it refuses events. */
    if (w->kind == W_RECORD)
        return ds__sim_event_record(b, w->event, s);
    if (w->kind == W_WAIT)
        return ds__sim_stream_wait_event(b, s, w->event);

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
    rc = ds__sim_park(b, s, w);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    return ds__sim_work_now(b, s, w);
}

int ds__sim_work_now(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w)
{
    if (!work_valid(b, w))
        return DS_ECU(CUDA_ERROR_ILLEGAL_ADDRESS);
    ds__sim_submit(b, s, work_apply(b, w));
    /* What it wrote may be what a parked stream waits for. */
    if (b->nparked > 0)
        ds__sim_unpark(b);
    return 0;
}

int ds__sim_memcpy_dtod(struct ds_backend *b, uint64_t dst, uint64_t src, size_t n,
                        struct ds_bstream *s)
{
    struct sim_work w = { .kind = W_COPY, .dst = dst, .src = src, .n = n };

    return ds__sim_work_run(b, s, &w);
}

int ds__sim_memset(struct ds_backend *b, uint64_t dst, uint64_t pitch, uint32_t value,
                   unsigned elem_size, uint64_t width, uint64_t height,
                   struct ds_bstream *s)
{
    struct sim_work w = { .kind = W_FILL, .dst = dst, .pitch = pitch, .value = value,
                          .elem = elem_size, .width = width, .height = height };

    return ds__sim_work_run(b, s, &w);
}

int ds__sim_memcpy_3d(struct ds_backend *b, const struct ds_copy3d *c, struct ds_bstream *s)
{
    struct sim_work w = { .kind = W_BOX, .box = *c };

    return ds__sim_work_run(b, s, &w);
}

int ds__sim_stream_create(struct ds_backend *b, unsigned flags, int priority,
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
void ds__sim_stream_destroy(struct ds_backend *b, struct ds_bstream *s)
{
    (void)b;
    ds__sim_free_work(s->captured);
    s->captured = NULL;
    /* Parked work still runs once its wait holds, as a destroyed stream's work does. */
    if (s->parked != NULL || s->refs > 0) {
        s->dead = 1;
        return;
    }
    s->prev->next = s->next;
    s->next->prev = s->prev;
    free(s);
}

int ds__sim_stream_query(struct ds_backend *b, struct ds_bstream *s)
{
    if (s != NULL && s->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ds__sim_unpark(b);
    if (stream_or_legacy(b, s)->parked != NULL)
        return DS_ENOTREADY;
    return stream_or_legacy(b, s)->ready_ns <= now_ns(b) ? 0 : DS_ENOTREADY;
}

/* Whether e was recorded, with the device time its recorded work ends at in *at.  An
 * interprocess event's record is in host time, shared with other executors, whose device
 * clocks stand still at other times than this one's. */
int ds__sim_event_at(const struct ds_backend *b, const struct ds_bevent *e, uint64_t *at)
{
    uint64_t host;

    if (e->shared == NULL) {
        *at = e->at_ns;
        return e->recorded;
    }
    host = atomic_load(e->shared);
    *at = host > b->stalled_ns ? host - b->stalled_ns : 0;
    return host != 0;
}

void ds__sim_wait_now(struct ds_backend *b, struct ds_bstream *s, struct ds_bevent *e)
{
    uint64_t at;

    s = stream_or_legacy(b, s);
    if (ds__sim_event_at(b, e, &at))
        s->ready_ns = max_u64(s->ready_ns, at);
}

/* A wait for a record still behind a parked stream parks this stream too. */
int ds__sim_stream_wait_event(struct ds_backend *b, struct ds_bstream *s,
                              struct ds_bevent *e)
{
    struct sim_work w = { .kind = W_WAIT, .event = e };
    int rc;

    if (s != NULL && s->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    rc = ds__sim_park(b, s, &w);
    if (rc == 0)
        ds__sim_wait_now(b, s, e);
    return rc < 0 ? rc : 0;
}

int ds__sim_event_create(struct ds_backend *b, unsigned flags, struct ds_bevent **out)
{
    struct ds_bevent *e = calloc(1, sizeof(*e));
    int rc;

    (void)b;
    if (e == NULL)
        return DS_ENOMEM;
    e->flags = flags;
    if ((flags & CU_EVENT_INTERPROCESS) && (rc = ds__sim_ipc_event_init(e)) != 0) {
        free(e);
        return rc;
    }
    *out = e;
    return 0;
}

void ds__sim_event_destroy(struct ds_backend *b, struct ds_bevent *e)
{
    (void)b;
    if (e->refs > 0) {
        e->dead = 1;
        return;
    }
    ds__sim_ipc_event_fini(e);
    free(e);
}

int ds__sim_event_record(struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s)
{
    struct sim_work w = { .kind = W_RECORD, .event = e };
    int rc;

    if (s != NULL && s->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    rc = ds__sim_park(b, s, &w);
    if (rc == 0)
        ds__sim_record_now(b, e, s);
    return rc < 0 ? rc : 0;
}

void ds__sim_record_now(struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s)
{
    uint64_t at = ds__sim_submit(b, s, 0);

    if (e->shared != NULL)
        atomic_store(e->shared, at + b->stalled_ns);
    e->at_ns = at;
    e->recorded = 1;
}

/* An event never recorded counts as complete, as in CUDA. */
int ds__sim_event_query(struct ds_backend *b, struct ds_bevent *e)
{
    uint64_t at;

    ds__sim_unpark(b);
    if (e->pending > 0)
        return DS_ENOTREADY;
    return !ds__sim_event_at(b, e, &at) || at <= now_ns(b) ? 0 : DS_ENOTREADY;
}

int ds__sim_event_elapsed(struct ds_backend *b, struct ds_bevent *start,
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

int ds__sim_limit(struct ds_backend *b, int limit, int set, uint64_t *value)
{
    if (limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH)
        return DS_EINVAL; /* not on compute capability 9.0 */
    if (set)
        b->limits[limit] = *value;
    *value = b->limits[limit];
    return 0;
}

int ds__sim_memfd(const char *name)
{
    struct rlimit lim;
    int fd = memfd_create(name, MFD_CLOEXEC);

    if (fd < 0 && errno == EMFILE && getrlimit(RLIMIT_NOFILE, &lim) == 0 &&
        lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &lim) == 0)
            fd = memfd_create(name, MFD_CLOEXEC);
    }
    return fd;
}

/* The one value measured so far: kind 0 read 7 on an H100 (docs/export-tables.md). */
int ds__sim_ctx_query(struct ds_backend *b, unsigned query, uint64_t *value)
{
    (void)b;
    if (query != 0)
        return DS_ENOTSUP;
    *value = 7;
    return 0;
}

void ds__sim_own_fault(struct ds_backend *b)
{
    struct ds_shm *shm = b->cfg.shm;
    struct ds_shm_slot *s = &shm->slots[b->cfg.slot];

    if (b->fault != 0)
        return;
    b->fault = CUDA_ERROR_ILLEGAL_ADDRESS;
    atomic_store(&s->fault_origin, DS_FAULT_OWN);
    if (!shared_domain(b))
        return;
    atomic_store(&shm->shared_fault_by, s->id);
    memcpy(shm->shared_fault_name, s->tenant, sizeof(shm->shared_fault_name));
    b->domain_faults = atomic_fetch_add_explicit(&shm->shared_faults, 1,
                                                 memory_order_release) + 1;
}

int ds__sim_fault_now(struct ds_backend *b)
{
    struct ds_shm *shm = b->cfg.shm;
    struct ds_shm_slot *s = &shm->slots[b->cfg.slot];

    if (b->fault == 0 && shared_domain(b) &&
        atomic_load_explicit(&shm->shared_faults, memory_order_acquire) != b->domain_faults) {
        b->fault = CUDA_ERROR_ILLEGAL_ADDRESS;
        atomic_store(&s->lost_to, atomic_load(&shm->shared_fault_by));
        atomic_store(&s->fault_origin, DS_FAULT_NEIGHBOUR);
    }
    return b->fault;
}

int ds__sim_fault(struct ds_backend *b, int probe)
{
    (void)probe;
    return ds__sim_fault_now(b);
}

#define SIM_ENTRY(ret, op, args) .op = ds__sim_##op,
const struct ds_backend_ops ds_sim_backend = { .name = "sim", DS_BACKEND_OPS(SIM_ENTRY) };
#undef SIM_ENTRY
