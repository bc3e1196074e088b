#include "tenant.h"

#include "ds_arena.h"
#include "ds_error.h"
#include "ds_log.h"
#include "ds_groups.h"
#include "ds_vamap.h"
#include "shm.h"
#include "ds_clock.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void ds__tenant_init(struct ds_tenant *t, const struct ds_backend_ops *ops,
                     const struct ds_backend_config *cfg, const struct ds_tenant_areas *areas)
{
    memset(t, 0, sizeof(*t));
    t->ops = ops;
    t->areas = areas;
    t->cfg = *cfg;
    t->shm = cfg->shm;
    t->slot = cfg->slot;
    t->next_id = 1;
    t->arena_fd = -1;
    ds_handles_init(&t->h);
    ds_memtab_init(&t->mem);
    ds_memtab_init(&t->host_maps);
    ds_memtab_init(&t->vmm_va);
    ds_memtab_init(&t->vmm_maps);
    ds_memtab_init(&t->ipc_out);
    ds_memtab_init(&t->ipc_in);
    ds_memtab_init(&t->texobjs);
    ds__account_init(&t->acct, t->shm, t->slot, t->name);
    for (size_t i = 0; i < areas->n; i++)
        if (areas->v[i].init != NULL)
            areas->v[i].init(t);
}

CUresult ds__tenant_await(struct ds_tenant *t, const struct ds_fence_at *at)
{
    return ds_error_to_cu(t->ops->fence_create(t->be, at, &t->await));
}

CUresult ds__tenant_await_stream(struct ds_tenant *t, struct ds_bstream *s)
{
    return ds__tenant_await(t, &(struct ds_fence_at){ .kind = DS_FENCE_STREAM, .stream = s });
}

/* Whether the device context reached the server's MPS daemon: the driver silently runs
 * without MPS when it cannot.  On an H100 that happened to executors started 0.4 s after
 * another daemon on the same GPU had quit (bench/coloc, runs 99-101). */
static void log_sharing(const struct ds_tenant *t)
{
    if (t->view.attrs[CU_DEVICE_ATTRIBUTE_MPS_ENABLED])
        ds_debug("MPS client: kernels run beside other tenants' kernels");
    else if (t->shm != NULL && atomic_load(&t->shm->slots[t->slot].isolation) == DS_ISO_OWN)
        ds_info("a fault domain of its own: no MPS client, its kernels take turns with the "
                "shared domain's");
    else if (t->shm != NULL && atomic_load(&t->shm->mps_expected) != DS_SHM_MPS_NONE)
        ds_warn("not an MPS client although the server runs MPS: this tenant's kernels take "
                "turns with other tenants' instead of sharing SMs (is another MPS server "
                "running on this GPU, or one still exiting?)");
    else
        ds_info("not an MPS client: kernels take turns with other tenants' kernels");
}

int ds__tenant_open(struct ds_tenant *t)
{
    int rc = t->ops->open(&t->cfg, &t->be);

    if (rc != 0) {
        t->be = NULL;
        return rc;
    }
    t->ops->describe(t->be, &t->view);
    log_sharing(t);
    if (ds_binder_start(&t->binder, t) != 0)
        ds_warn("cannot start the binder thread: moves will make their own contexts");
    return 0;
}

/* Every area's objects of context ctx (all: of every context). */
static void drop_if(struct ds_tenant *t, uint64_t ctx, int all)
{
    for (size_t i = 0; i < t->areas->n; i++)
        if (t->areas->v[i].drop != NULL)
            t->areas->v[i].drop(t, ctx, all);
}

void ds__tenant_drop_ctx(struct ds_tenant *t, uint64_t h)
{
    drop_if(t, h, 0);
}

int ds__tenant_arena(struct ds_tenant *t, int fd)
{
    struct stat st;

    if (t->arena_fd >= 0 || t->arena != NULL || fstat(fd, &st) != 0 || st.st_size <= 0 ||
        (uint64_t)st.st_size > DS_ARENA_SIZE) {
        close(fd);
        return DS_EINVAL;
    }
    t->arena_fd = fd;
    t->arena_len = (uint64_t)st.st_size;
    return 0;
}

int ds__tenant_map_arena(struct ds_tenant *t, uint64_t base)
{
    void *p = MAP_FAILED;

    if (t->arena_fd < 0 || t->arena != NULL)
        return 0;
    if (base != 0 && base % 4096 == 0 && base <= UINTPTR_MAX - t->arena_len)
        p = ds_vamap_at(base, (size_t)t->arena_len, PROT_READ | PROT_WRITE, MAP_SHARED,
                        t->arena_fd, 0);
    if (p == MAP_FAILED) {
        if (base != 0)
            ds_debug("the tenant's host arena is mapped at another address here: its "
                     "pinned pointers are not device pointers");
        p = mmap(NULL, (size_t)t->arena_len, PROT_READ | PROT_WRITE, MAP_SHARED, t->arena_fd, 0);
    }
    if (p == MAP_FAILED) {
        close(t->arena_fd);
        t->arena_fd = -1;
        return DS_ENOMEM;
    }
    t->arena = p;
    return 0;
}

void ds__tenant_host_unmap(struct ds_tenant *t, const struct ds_memtab_entry *map)
{
    struct ds_memtab_entry m = *map;

    ds_memtab_remove(&t->mem, m.owner, NULL);
    t->ops->host_unmap(t->be, m.owner, m.data != NULL ? m.data : t->arena + m.base);
    if (m.data != NULL)
        munmap(m.data, m.size);
    if (m.kind == DS_HOST_MANAGED)
        ds__account_give(&t->acct, DS_MEM_MANAGED, m.size);
    ds_memtab_remove(&t->host_maps, m.base, NULL);
}

void ds__tenant_fini(struct ds_tenant *t)
{
    uint32_t cur = 0;
    uint64_t h;

    ds_binder_stop(&t->binder);
    if (t->be != NULL) {
        while (t->host_maps.n > 0)
            ds__tenant_host_unmap(t, &t->host_maps.v[0]);
        for (size_t i = 0; i < t->areas->n; i++)
            if (t->areas->v[i].fini != NULL)
                t->areas->v[i].fini(t);
        drop_if(t, 0, 1);
        t->ops->close(t->be);
        t->be = NULL;
    }
    while ((h = ds_handles_next(&t->h, DS_H_CTX, &cur)) != 0)
        free(ds_handles_remove(&t->h, h, DS_H_CTX));
    ds_handles_destroy(&t->h);
    ds_memtab_destroy(&t->mem);
    ds_memtab_destroy(&t->host_maps);
    ds_memtab_destroy(&t->vmm_va);
    ds_memtab_destroy(&t->vmm_maps);
    ds_memtab_destroy(&t->ipc_out);
    ds_memtab_destroy(&t->ipc_in);
    ds_memtab_destroy(&t->texobjs);
    if (t->arena != NULL)
        munmap(t->arena, t->arena_len);
    t->arena = NULL;
    if (t->arena_fd >= 0)
        close(t->arena_fd);
    t->arena_fd = -1;
}

/* Whether moving from SM groups `from` to `to` leaves some SMs (0: the whole device). */
static int gives_up(uint64_t from, uint64_t to)
{
    return to != 0 && (from == 0 || (from & ~to) != 0);
}

static void follow_binding(struct ds_tenant *t)
{
    struct ds_shm_slot *s = &t->shm->slots[t->slot];
    unsigned gen = atomic_load_explicit(&s->bind_gen, memory_order_acquire);
    uint64_t want;
    char what[200];
    uint64_t t0, now;
    int rc, must;

    if (gen == t->bind_gen)
        return;
    want = atomic_load(&s->groups);
    if (want == atomic_load(&s->bound_groups)) {
        t->bind_gen = gen;
        return;
    }
    t0 = ds_now_ns();
    /* A tenant that must give SMs up waits for its new context (the binder thread is
     * making it, or has): its kernels meanwhile would run on SMs now a neighbour's, and
     * one that launches all its work at once would never leave them (an H100 took 170 ms
     * to make one, run 82).  One that only gains SMs runs where it ran until the binder
     * has made the context.  Without the binder thread, the move is made here. */
    must = gives_up(atomic_load(&s->bound_groups), want);
    if (!t->binder.running || must)
        t->ops->prepare(t->be, want);
    rc = t->ops->bind(t->be, want);
    /* bind only tries the pool's lock, which the binder thread may hold for a moment;
     * a move that must happen tries again (while a stream captures, it waits for a later
     * kernel). */
    for (int i = 0; rc == DS_EBUSY && must && i < 3; i++) {
        t->ops->prepare(t->be, want);
        rc = t->ops->bind(t->be, want);
    }
    if (rc == DS_EBUSY)
        return;
    t->bind_gen = gen;
    ds_groups_format(want, t->shm->sm_group_size, what, sizeof(what));
    if (rc != 0) {
        ds_warn("cannot move to %s: %s; staying where it runs", what, ds_strerror(rc));
        return;
    }
    atomic_store(&s->bound_groups, want);
    atomic_fetch_add(&s->migrations, 1);
    ds__trace_move(t, want);
    /* The time since the decision includes the wait for this kernel boundary: what a
     * policy's move costs the tenant, not only the executor's part. */
    now = ds_now_ns();
    ds_info("now runs on %s (moved in %.0f us, %.0f us after the decision)", what,
            (double)(now - t0) / 1e3, (double)(now - atomic_load(&s->bind_at_ns)) / 1e3);
}

void ds__tenant_kernel_boundary(struct ds_tenant *t, struct ds_bstream *s)
{
    struct ds_shm_slot *slot = &t->shm->slots[t->slot];

    follow_binding(t);
    if ((atomic_load_explicit(&t->shm->gating, memory_order_relaxed) ||
         atomic_load_explicit(&slot->metered, memory_order_relaxed)) &&
        !t->gate_failed && t->ops->gate(t->be, s, (const volatile unsigned *)&slot->gate) != 0)
        t->gate_failed = 1;
}

void ds__tenant_map_control(struct ds_tenant *t)
{
    struct ds_shm_slot *slot = &t->shm->slots[t->slot];
    int rc = t->ops->shm_map(t->be, &slot->gate);

    /* A failure is the backend's to tell; gates and stamps then try again as they come. */
    for (unsigned i = 0; i < DS_SHM_STAMPS && rc == 0; i++)
        rc = t->ops->shm_map(t->be, &slot->stamps[i].seq);
}

/* Have the device stamp launch n, the last on stream s, when the work before it there is done. */
static void stamp(struct ds_tenant *t, struct ds_bstream *s, uint64_t n)
{
    struct ds_shm_slot *slot = &t->shm->slots[t->slot];
    int rc = t->ops->stamp(t->be, s, &slot->stamps[t->nstamps % DS_SHM_STAMPS], (uint32_t)n);

    if (rc == 0) {
        t->stamped = n;
        t->nstamps++;
        t->stamp_ns = ds_now_ns();
    }
    /* A stream being captured takes no stamp; its next launch or pause tries again. */
    if (rc == 0 || rc == DS_EBUSY)
        return;
    ds_warn("cannot stamp progress: %s; the scheduler no longer sees completions",
            ds_strerror(rc));
    t->stamps_off = 1;
    atomic_store(&slot->stamps_off, 1);
}

void ds__tenant_set_capturing(struct ds_tenant *t, struct ds_vstream *s, int on)
{
    t->captures += (on != 0) - (s->capturing != 0);
    s->capturing = on != 0;
}

void ds__tenant_launched(struct ds_tenant *t, struct ds_bstream *s, int capturing)
{
    uint64_t n = t->launches + 1;

    if (capturing)
        return;
    /* The executor is the only writer: a plain store, no locked add on every launch. */
    t->launches = n;
    t->last = s;
    atomic_store_explicit(&t->shm->slots[t->slot].launches, n, memory_order_release);
    if (t->stamps_off)
        return;
    if (n - t->stamped >= DS_STAMP_EVERY || ds_now_ns() - t->stamp_ns >= DS_STAMP_NS)
        stamp(t, s, n);
}

void ds__tenant_stamp_tail(struct ds_tenant *t)
{
    if (t->launches != t->stamped && !t->stamps_off)
        stamp(t, t->last, t->launches);
}

void ds__tenant_stream_gone(struct ds_tenant *t, struct ds_bstream *s)
{
    if (t->last != s)
        return;
    ds__tenant_stamp_tail(t);
    t->last = NULL;
}

struct ds_vctx *ds__tenant_ctx(struct ds_tenant *t, uint64_t h)
{
    struct ds_vctx *c = ds_handles_get(&t->h, h, DS_H_CTX);

    return c != NULL && c->active ? c : NULL;
}

int ds__tenant_stream(struct ds_tenant *t, uint64_t h, struct ds_bstream **out)
{
    struct ds_vstream *s;

    /* The per-thread default stream is served as the legacy stream for now: every
     * ordering the program relies on still holds, with more waiting than CUDA does. */
    if (h == 0 || h == (uint64_t)(uintptr_t)CU_STREAM_LEGACY ||
        h == (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD) {
        *out = NULL;
        return 0;
    }
    s = ds_handles_get(&t->h, h, DS_H_STREAM);
    if (s == NULL)
        return DS_EHANDLE;
    *out = s->real;
    return 0;
}

static int is_vmm(const struct ds_memtab_entry *e)
{
    return e->kind == DS_RANGE_VMM_READ || e->kind == DS_RANGE_VMM_RW;
}

/* Contiguous accessible mappings inside one reservation count as one range, so a copy
 * may cross from one physical allocation into the next, as it does on a GPU. */
static int vmm_range(const struct ds_tenant *t, uint64_t addr, uint64_t len)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&t->mem, addr, 0);
    uint64_t reach;

    /* One reservation: the sim's host memory behind it is contiguous too. */
    if (ds_memtab_find(&t->vmm_va, addr, len) == NULL)
        return DS_ERANGE;
    while (e != NULL && is_vmm(e)) {
        reach = e->base + e->size;
        if (len <= reach - addr)
            return 0;
        /* Only here is the table known not to be empty: NULL + 0 is undefined. */
        e = e + 1 < t->mem.v + t->mem.n && e[1].base == reach ? e + 1 : NULL;
    }
    return DS_ERANGE;
}

int ds__tenant_range(const struct ds_tenant *t, uint64_t addr, uint64_t len)
{
    return ds_memtab_find(&t->mem, addr, len) != NULL ? 0 : vmm_range(t, addr, len);
}

CUresult ds__tenant_publish_event(struct ds_tenant *t, struct ds_vevent *e, ds_handle *out)
{
    *out = ds_handles_add(&t->h, DS_H_EVENT, e);
    if (*out != 0)
        return CUDA_SUCCESS;
    t->ops->event_destroy(t->be, e->real);
    free(e);
    return CUDA_ERROR_OUT_OF_MEMORY;
}
