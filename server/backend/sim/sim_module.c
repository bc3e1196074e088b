/* The sim device's modules and kernels: images read for their kernels' parameter
 * layouts and their variables, launches that take modelled time. */
#include "sim_core.h"

#include "ds_error.h"
#include "ds_image.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the driver reports for a kernel that was compiled without saying: 48 KiB of
 * dynamic shared memory before the kernel opts in to more, and (where the cubin records
 * no register count) 32 registers a thread. */
#define SIM_DEFAULT_DYNAMIC_SMEM 49152
#define SIM_DEFAULT_REGS 32u
#define SIM_MAX_REGS 255u

int ds__sim_cubin_of(const void *image, size_t len, void **elf, size_t *elf_len)
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

int ds__sim_module_load(struct ds_backend *b, const void *image, size_t len,
                        struct ds_bmodule **out)
{
    struct ds_bmodule *m = calloc(1, sizeof(*m));
    int rc;

    (void)b;
    if (m == NULL)
        return DS_ENOMEM;
    rc = ds__sim_cubin_of(image, len, &m->elf, &m->elf_len);
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

void ds__sim_module_unload(struct ds_backend *b, struct ds_bmodule *m)
{
    while (m->globals != NULL) {
        struct sim_global *g = m->globals;

        m->globals = g->next;
        ds__sim_dev_free(b, g->addr);
        free(g->name);
        free(g);
    }
    free(m->elf);
    DS_LIST_FREE(struct ds_bfunc, m->funcs, free);
    ds_cubin_free(&m->cubin);
    free(m);
}

int ds__sim_module_get_function(struct ds_backend *b, struct ds_bmodule *m, const char *name,
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
    f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] = SIM_DEFAULT_DYNAMIC_SMEM;
    f->attrs[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = (int)k->cluster[0];
    f->attrs[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT] = (int)k->cluster[1];
    f->attrs[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH] = (int)k->cluster[2];
    f->next = m->funcs;
    m->funcs = f;
    *out = f;
    return 0;
}

int ds__sim_module_kernels(struct ds_backend *b, struct ds_bmodule *m, const char ***names,
                           uint32_t *n)
{
    (void)b;
    *n = m->cubin.nkernels;
    *names = calloc(*n ? *n : 1, sizeof(**names));
    if (*names == NULL)
        return DS_ENOMEM;
    for (uint32_t i = 0; i < *n; i++)
        (*names)[i] = m->cubin.kernels[i].name;
    return 0;
}

/* A variable gets device memory, holding its initial bytes, when first asked for; later
 * requests return the same memory, as a loaded module's variables have one address. */
int ds__sim_module_get_global(struct ds_backend *b, struct ds_bmodule *m, const char *name,
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
    rc = ds__sim_dev_alloc(b, *size, CU_STREAM_CAPTURE_MODE_RELAXED, &g->addr);
    if (rc != 0) {
        free(g->name);
        free(g);
        return rc;
    }
    if (init != NULL)
        memcpy(ds__sim_host_of(b, g->addr), init, *size);
    g->next = m->globals;
    m->globals = g;
    *addr = g->addr;
    return 0;
}

/* The block size an H100 can give kernel k: its launch bounds, and as many warps as
 * the 64K registers of an SM hold, each warp's share allocated in units of 256. */
static int max_threads(const struct ds_kernel *k)
{
    uint32_t regs = k->regs == 0 ? SIM_DEFAULT_REGS : k->regs > SIM_MAX_REGS ? SIM_MAX_REGS : k->regs;
    uint32_t per_warp = (regs * 32 + 255) / 256 * 256;
    uint32_t threads = 65536 / per_warp * 32;

    if (threads > 1024)
        threads = 1024;
    if (k->max_threads != 0 && k->max_threads < threads)
        threads = k->max_threads;
    return (int)threads;
}

int ds__sim_func_get_attribute(struct ds_backend *b, struct ds_bfunc *f, int attr,
                               int *value)
{
    (void)b;
    switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *value = max_threads(f->k);
        break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *value = (int)(f->k->regs ? f->k->regs : SIM_DEFAULT_REGS);
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
int ds__sim_func_set_attribute(struct ds_backend *b, struct ds_bfunc *f, int attr, int value)
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

int ds__sim_occupancy(struct ds_backend *b, struct ds_bfunc *f, int block_size,
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
int ds__sim_occupancy_smem(struct ds_backend *b, struct ds_bfunc *f, int num_blocks,
                           int block_size, size_t *smem)
{
    size_t per = 233472 / (size_t)num_blocks;

    (void)b;
    (void)f;
    if ((int64_t)num_blocks * block_size > 2048)
        return DS_EINVAL;
    per = per > 1024 ? per - 1024 : 0;
    *smem = per > 232448 ? 232448 : per;
    return 0;
}

int ds__sim_occupancy_clusters(struct ds_backend *b, struct ds_bfunc *f,
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
    ds__sim_occupancy(b, f, threads, l->shared_mem, 0, &per_sm);
    *clusters = (int)((uint64_t)b->cfg.sim_sms * (uint64_t)per_sm / size);
    return 0;
}

/* An H100's portable limit of 8 blocks, 16 when the kernel opts in, as long as one
 * block of the launch fits on an SM at all. */
int ds__sim_occupancy_cluster_size(struct ds_backend *b, struct ds_bfunc *f,
                                   const struct ds_launch *l, int *size)
{
    int threads = (int)(l->block[0] * l->block[1] * l->block[2]), per_sm = 0;

    /* A block too large for any SM is an answer (no cluster), not an error, as with the
     * driver (H100, run 80). */
    if (threads <= 0)
        return DS_EINVAL;
    if (threads <= 1024)
        ds__sim_occupancy(b, f, threads, l->shared_mem, 0, &per_sm);
    *size = per_sm == 0 ? 0 : f->attrs[CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED] ? 16 : 8;
    return 0;
}

static uint64_t waves(uint64_t blocks, unsigned sms)
{
    uint64_t per_wave = (uint64_t)sms * SIM_BLOCKS_PER_SM;

    return (blocks + per_wave - 1) / per_wave;
}

/* A kernel arriving where other tenants' kernels run: on its free SMs at once, on the
 * others once their running kernels' blocks are done (an LC request launched into a
 * flood under MPS waits so, on a GPU for each of its kernels). */
static uint64_t arriving_ns(uint64_t blocks, uint64_t wave_ns, const struct sim_share *sh)
{
    uint64_t early = sh->wait_ns / wave_ns * sh->free * SIM_BLOCKS_PER_SM;

    if (sh->free > 0 && blocks <= early)
        return waves(blocks, sh->free) * wave_ns;
    return sh->wait_ns + waves(blocks - early, sh->sms) * wave_ns;
}

void ds__sim_kernel_work(struct ds_backend *b, const struct ds_launch *l, int arriving,
                         struct sim_work *w)
{
    uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
    uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    uint64_t wave_ns = SIM_WAVE_NS * ((threads + 255) / 256);
    struct sim_share sh;

    ds__sim_share_now(b, &sh);
    memset(w, 0, sizeof(*w));
    w->kind = W_KERNEL;
    w->kernel_ns = SIM_LAUNCH_NS + (arriving ? arriving_ns(blocks, wave_ns, &sh)
                                             : waves(blocks, sh.sms) * wave_ns);
}

static uint64_t at_least_1(unsigned n)
{
    return n == 0 ? 1 : n;
}

/* Blocks in one of launch l's thread-block clusters: its launch attribute's size, else
 * the kernel's own required size; 1 without clusters. */
static uint64_t cluster_blocks(const struct ds_bfunc *f, const struct ds_launch *l)
{
    const int *a = f->attrs;

    for (unsigned i = 0; i < l->nattrs; i++)
        if (l->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            return at_least_1(l->attrs[i].value.clusterDim.x) *
                   at_least_1(l->attrs[i].value.clusterDim.y) *
                   at_least_1(l->attrs[i].value.clusterDim.z);
    return at_least_1((unsigned)a[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH]) *
           at_least_1((unsigned)a[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT]) *
           at_least_1((unsigned)a[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH]);
}

/* A partition holds clusters of at most one SM group's SMs in blocks: its groups need
 * not lie in one GPC, which a cluster must (on an H100, cuDNN's clusters did not fit a
 * partition of two groups).  A kernel whose clusters are larger runs on the whole
 * device, as the cuda backend runs it when the driver refuses it on the partition
 * (docs/sim-device.md). */
static int escapes(const struct ds_backend *b, const struct ds_bfunc *f,
                   const struct ds_launch *l, const struct ds_bstream *s)
{
    return b->bound != 0 && (s == NULL || !s->capturing) &&
           cluster_blocks(f, l) > b->groups.size;
}

/* The work of an escaping kernel: timed on every SM. */
static void whole_device_work(struct ds_backend *b, const struct ds_launch *l, int arriving,
                              struct sim_work *w)
{
    uint64_t bound = b->bound;
    unsigned sms = b->sms;

    b->bound = 0;
    b->sms = b->groups.sms;
    ds__sim_kernel_work(b, l, arriving, w);
    b->bound = bound;
    b->sms = sms;
}

/* Whether a kernel launched on s now arrives at the device rather than following work
 * of the tenant's own on its SMs (a captured one never runs now). */
static int idle(struct ds_backend *b, struct ds_bstream *s)
{
    return (s == NULL || !s->capturing) && ds__sim_stream(b, s)->ready_ns <= ds__sim_now(b);
}

int ds__sim_launch(struct ds_backend *b, struct ds_bfunc *f, const struct ds_launch *l,
                   struct ds_bstream *s)
{
    int escaped = escapes(b, f, l, s);
    struct sim_work w;
    int rc;

    if (l->param_bytes != f->k->param_bytes)
        return DS_EINVAL;
    /* A kernel that writes through a wild pointer, as the GPU reports it: the launch
     * goes in, and the context fails for good (docs/sim-device.md). */
    if (b->fault_kernel != NULL && strcmp(f->k->name, b->fault_kernel) == 0 &&
        (s == NULL || !s->capturing))
        ds__sim_own_fault(b);
    /* A driver call that never returns, as a driver bug can make one: the executor's
     * serving thread stays here for good (exec/watchdog.h). */
    if (b->hang_kernel != NULL && strcmp(f->k->name, b->hang_kernel) == 0)
        for (;;)
            pause();
    if (escaped)
        whole_device_work(b, l, idle(b, s), &w);
    else
        ds__sim_kernel_work(b, l, idle(b, s), &w);
    rc = ds__sim_work_run(b, s, &w);
    if (rc == 0 && (s == NULL || !s->capturing))
        ds__sim_busy_until(b, s, w.kernel_ns);
    return rc == 0 && escaped ? DS_LAUNCH_ESCAPED : rc;
}
