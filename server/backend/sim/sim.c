/*
 * The sim device: a software GPU for machines without one.  Device memory is host
 * memory behind device-like addresses (sim_mem.c); work on streams takes modelled time
 * (sim_core.c) and has its effects when submitted (sim_work.c).  Here: the backend's
 * table of operations, its opening and closing, which reach every area, and the
 * device's copies, streams and events.
 */
#include "sim_core.h"

#include "ds_error.h"
#include "shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
    if (ds__sim_mem_open(b) != 0) {
        free(b);
        return DS_ENOMEM;
    }
    b->streams.next = b->streams.prev = &b->streams;
    ds_sim_sm_groups(cfg->sim_sms, &b->groups);
    b->sms = (unsigned)cfg->sim_sms;
    b->fault_kernel = getenv("DETSHARE_SIM_FAULT");
    b->anonymous = getenv("DETSHARE_SIM_ANONYMOUS_FAULTS") != NULL;
    /* A context made after a fault of its domain is a new MPS client: that fault is
     * not its. */
    b->domain = ds_shm_domain_of(cfg->shm, &cfg->shm->slots[cfg->slot]);
    b->domain_faults = b->domain != NULL ? atomic_load(&b->domain->faults) : 0;
    b->hang_kernel = getenv("DETSHARE_SIM_HANG");
    ds__sim_pctx_init(b);
    *out = b;
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
        DS_RING_UNLINK(s);
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
    ds__sim_mem_close(b);
    ds__sim_pctx_fini(b);
    free(b);
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
    /* What the cuda backend tells every tenant (ds__cuda_describe): no reach into its
     * pageable memory, no atomics shared with the host, managed memory on the host. */
    a[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS] = 0;
    a[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES] = 0;
    a[CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED] = 0;
    a[CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST] = 0;
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

/* The executor's own gate holds the sim's work: a modelled kernel never runs ahead of
 * its submission in a way another tenant could see. */
int ds__sim_gate(struct ds_backend *b, struct ds_bstream *s, const volatile unsigned *word)
{
    (void)b;
    (void)s;
    (void)word;
    return 0;
}

/* The sim's device reads the control block where it is. */
int ds__sim_shm_map(struct ds_backend *b, const volatile void *word)
{
    (void)b;
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

/* The sim models MPS (its tenants share SMs as MPS clients do), so its contexts say they
 * are MPS clients, except while the file DETSHARE_SIM_NO_MPS names exists: what executors
 * and the server do when MPS fails is tested that way. */
static int sim_mps_client(const struct ds_backend *b)
{
    const char *f = getenv("DETSHARE_SIM_NO_MPS");

    if (b->domain == NULL)
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
    /* Each sim GPU on a bus of its own, as GPUs of one host are (GPU 0's is 0x19): a
     * tenant of several sim servers finds each by its bus id. */
    v->attrs[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] += b->cfg.gpu % 0xe0;
    v->attrs[CU_DEVICE_ATTRIBUTE_MPS_ENABLED] = sim_mps_client(b);
}

/* A host copy behind a parked stream waits there with its bytes (sim_work.c). */
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
    DS_RING_PUSH(&b->streams, s);
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
    DS_RING_UNLINK(s);
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

/* An event never recorded counts as complete, as in CUDA. */
int ds__sim_event_query(struct ds_backend *b, struct ds_bevent *e)
{
    uint64_t at;

    ds__sim_unpark(b);
    if (ds__sim_event_pending(e))
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

/* The one value measured so far: the legacy stream read 7 on an H100
 * (docs/export-tables.md, 4.9). */
int ds__sim_ctx_query(struct ds_backend *b, unsigned query, uint64_t *value)
{
    (void)b;
    if (query != 0)
        return DS_ENOTSUP;
    *value = 7;
    return 0;
}

int ds__sim_fault(struct ds_backend *b, int probe)
{
    (void)probe;
    return ds__sim_fault_now(b);
}
#define SIM_ENTRY(ret, op, args) .op = ds__sim_##op,
const struct ds_backend_ops ds_sim_backend = { .name = "sim", DS_BACKEND_OPS(SIM_ENTRY) };
#undef SIM_ENTRY
