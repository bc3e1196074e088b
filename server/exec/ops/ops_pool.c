/*
 * Memory pools and the stream-ordered allocator (cuMemAllocAsync, cuMemFreeAsync,
 * cuMemPool*), as cudaMallocAsync, PyTorch's cudaMallocAsync backend, CuPy's
 * MemoryAsyncPool and XLA's async allocator use them.
 *
 * Pools are behind handles (DS_H_POOL); the device's default pool gets one the first
 * time anything names it.  Every allocation of a pool is an entry in t->mem, marked as a
 * pool's and owned by its pool's handle, from the cuMemAllocAsync that made it to the
 * cuMemFreeAsync that gives it back: copies, fills and launches that name it are checked
 * as for any device memory, and nothing may name it once it is given back, even while
 * the device still runs work submitted before the free.
 *
 * What counts against the tenant's memory quota is what its pools hold of the device
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), live allocations and what a pool keeps for
 * reuse alike: it is device memory nobody else can have, and a pool's release threshold
 * lets a tenant keep any amount.  An allocation takes its size from the quota before the
 * device is asked; each pool call then counts what the pool really holds (the driver
 * rounds, reuses and releases).  Before an allocation of any kind is refused for the
 * quota, every pool of the tenant is trimmed (account.h, reclaim), as far as the work
 * still reading freed blocks allows.
 *
 * A pool destroyed while allocations of it are live stays, unusable, until the last one
 * is given back, as CUDA documents.  Export and import of pools between processes
 * (cuMemPoolExportToShareableHandle and the rest) are not served: the client refuses
 * them (docs/api-coverage.md).
 */
#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"

#include <limits.h>
#include <stdlib.h>

struct vpool {
    struct ds_bpool *real;
    int is_default;
    int destroyed;     /* cuMemPoolDestroy came while allocations were live */
    uint64_t live;     /* allocations not given back */
    uint64_t reserved; /* device bytes the pool held at its last call: counted */
};

static CUresult not_served(const char *what, int *once)
{
    if (!*once) {
        *once = 1;
        ds_warn("%s: not served through detshare (CUDA_ERROR_NOT_SUPPORTED)", what);
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* The pool behind h while the tenant may use it, else NULL. */
static struct vpool *pool_of(struct ds_tenant *t, uint64_t h)
{
    struct vpool *p = ds_handles_get(&t->h, h, DS_H_POOL);

    return p != NULL && !p->destroyed ? p : NULL;
}

/* Count what pool p holds of the device now, in place of its last count and of `asked`,
 * what the quota was asked for ahead of the call.  A pool whose size cannot be read
 * keeps its last count.  The sum stays in the account: no walk over the tenant's
 * handles on the allocation path. */
static void recount(struct ds_tenant *t, struct vpool *p, uint64_t asked)
{
    uint64_t now = p->reserved;

    if (t->ops->pool_attr(t->be, p->real, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, 0, &now) != 0)
        now = p->reserved;
    ds__account_set(&t->acct, DS_MEM_POOL,
                    t->acct.used[DS_MEM_POOL] - asked - p->reserved + now);
    p->reserved = now;
}

static void drop(struct ds_tenant *t, uint64_t h)
{
    struct vpool *p = ds_handles_remove(&t->h, h, DS_H_POOL);

    t->ops->pool_destroy(t->be, p->real);
    ds__account_set(&t->acct, DS_MEM_POOL, t->acct.used[DS_MEM_POOL] - p->reserved);
    free(p);
}

/* The tenant's account's reclaim (account.h): trim every pool of tenant (a struct
 * ds_tenant) to what its live allocations need, and count what they hold then. */
static void reclaim(void *tenant)
{
    struct ds_tenant *t = tenant;
    uint32_t cur = 0;
    uint64_t h;

    while ((h = ds_handles_next(&t->h, DS_H_POOL, &cur)) != 0) {
        struct vpool *p = ds_handles_get(&t->h, h, DS_H_POOL);

        if (p->reserved == 0)
            continue;
        t->ops->pool_trim(t->be, p->real, 0);
        recount(t, p, 0);
    }
}

void ds__ops_pool_init(struct ds_tenant *t)
{
    t->acct.reclaim = reclaim;
    t->acct.reclaim_ctx = t;
}

static CUresult publish(struct ds_tenant *t, struct vpool *p, uint64_t *h)
{
    *h = ds_handles_add(&t->h, DS_H_POOL, p);
    if (*h != 0)
        return CUDA_SUCCESS;
    t->ops->pool_destroy(t->be, p->real);
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* The default pool's handle into *h, made the first time. */
static CUresult default_pool(struct ds_tenant *t, uint64_t *h)
{
    struct vpool *p;
    CUresult rc;
    int err;

    if (t->pool_default != 0) {
        *h = t->pool_default;
        return CUDA_SUCCESS;
    }
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->is_default = 1;
    if ((err = t->ops->pool_default(t->be, &p->real)) != 0) {
        free(p);
        return ds_error_to_cu(err);
    }
    if ((rc = publish(t, p, h)) == CUDA_SUCCESS)
        t->pool_default = *h;
    return rc;
}

/* The tenant sees one device, ordinal 0. */
static CUresult check_dev(int dev)
{
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult ds__ops_pool_default(struct ds_tenant *t, const int *dev, ds_handle_res *r)
{
    CUresult rc = check_dev(*dev);

    return rc != CUDA_SUCCESS ? rc : default_pool(t, &r->ds_handle_res_u.handle);
}

CUresult ds__ops_pool_current(struct ds_tenant *t, const int *dev, ds_handle_res *r)
{
    CUresult rc = check_dev(*dev);

    if (rc != CUDA_SUCCESS)
        return rc;
    if (t->pool_current == 0)
        return default_pool(t, &r->ds_handle_res_u.handle);
    r->ds_handle_res_u.handle = t->pool_current;
    return CUDA_SUCCESS;
}

CUresult ds__ops_pool_set_current(struct ds_tenant *t, const ds_pool_set_args *a,
                                  ds_void_res *r)
{
    CUresult rc = check_dev(a->dev);

    (void)r;
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pool_of(t, a->pool) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    t->pool_current = a->pool;
    return CUDA_SUCCESS;
}

/* Where a pool's memory may live: the tenant's device only. */
static CUresult check_location(const ds_pool_props *p)
{
    static int host_once;

    if (p->loc_type == CU_MEM_LOCATION_TYPE_HOST || p->loc_type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
        return not_served("cuMemPoolCreate of host memory", &host_once);
    if (p->loc_type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    return check_dev(p->loc_id);
}

/*
 * A pool's properties.  As with cuMemCreate (ops_vmm.c), shareable handle types that
 * Linux knows are accepted and the pool made without them, since exporting it would hand
 * the tenant's memory to another process through the executor.
 */
static CUresult check_props(const ds_pool_props *p)
{
    static int managed_once, win32_once, export_once;
    const unsigned linux_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC;
    const unsigned win32_types = CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT;
    unsigned types = (unsigned)p->handle_types;
    CUresult rc;

    if (p->alloc_type == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return not_served("cuMemPoolCreate of managed memory", &managed_once);
    if (p->alloc_type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = check_location(p)) != CUDA_SUCCESS)
        return rc;
    if ((types & win32_types) != 0)
        return not_served("cuMemPoolCreate with Windows handle types", &win32_once);
    if ((types & ~linux_types) != 0 || (p->usage & ~(unsigned)CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (types != 0 && !export_once) {
        export_once = 1;
        ds_info("cuMemPoolCreate with shareable handle types: the pool is made, exporting "
                "it is not served through detshare");
    }
    return CUDA_SUCCESS;
}

CUresult ds__ops_pool_create(struct ds_tenant *t, const ds_pool_props *a, ds_handle_res *r)
{
    struct vpool *p;
    CUresult rc;
    int err;

    if ((rc = check_props(a)) != CUDA_SUCCESS)
        return rc;
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((err = t->ops->pool_create(t->be, a->max_size, a->usage, &p->real)) != 0) {
        free(p);
        return ds_error_to_cu(err);
    }
    return publish(t, p, &r->ds_handle_res_u.handle);
}

/* Destroying the current pool makes the default one current again. */
CUresult ds__ops_pool_destroy(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct vpool *p = pool_of(t, *h);

    (void)r;
    if (p == NULL || p->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    if (t->pool_current == *h)
        t->pool_current = 0;
    if (p->live == 0)
        drop(t, *h);
    else
        p->destroyed = 1;
    return CUDA_SUCCESS;
}

/* Which attributes a tenant may set, and to what: the reuse flags to an int, the
 * threshold to anything, the high watermarks only back to 0; the current amounts are
 * read-only. */
static CUresult check_attr(const ds_pool_attr_args *a)
{
    if (a->attr < CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES || a->attr > CU_MEMPOOL_ATTR_USED_MEM_HIGH)
        return CUDA_ERROR_INVALID_VALUE;
    if (!a->set)
        return CUDA_SUCCESS;
    switch (a->attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        return a->value <= INT_MAX ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        return a->value == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult ds__ops_pool_attr(struct ds_tenant *t, const ds_pool_attr_args *a, ds_hyper_res *r)
{
    struct vpool *p = pool_of(t, a->pool);
    CUresult rc;

    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = check_attr(a)) != CUDA_SUCCESS)
        return rc;
    r->ds_hyper_res_u.value = a->value;
    rc = ds_error_to_cu(t->ops->pool_attr(t->be, p->real, a->attr, a->set != 0,
                                          &r->ds_hyper_res_u.value));
    recount(t, p, 0);
    return rc;
}

CUresult ds__ops_pool_trim(struct ds_tenant *t, const ds_pool_trim_args *a, ds_void_res *r)
{
    struct vpool *p = pool_of(t, a->pool);
    CUresult rc;

    (void)r;
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_error_to_cu(t->ops->pool_trim(t->be, p->real, a->keep));
    recount(t, p, 0);
    return rc;
}

/* A location of cuMemPoolSetAccess or cuMemPoolGetAccess: CUDA_SUCCESS for the tenant's
 * device, else the CUresult that refuses it. */
static CUresult check_access(int loc_type, int loc_id)
{
    if (loc_type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    return check_dev(loc_id);
}

/* The tenant's one device is the pool's own, which always reads and writes it: access
 * can be granted again, never taken away.  No other device exists to grant it to. */
CUresult ds__ops_pool_set_access(struct ds_tenant *t, const ds_pool_set_access_args *a,
                                 ds_void_res *r)
{
    CUresult rc;

    (void)r;
    if (pool_of(t, a->pool) == NULL || a->desc.desc_len == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (u_int i = 0; i < a->desc.desc_len; i++) {
        const ds_vmm_access *d = &a->desc.desc_val[i];

        if ((rc = check_access(d->loc_type, d->loc_id)) != CUDA_SUCCESS)
            return rc;
        if (d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult ds__ops_pool_get_access(struct ds_tenant *t, const ds_pool_get_access_args *a,
                                 ds_hyper_res *r)
{
    CUresult rc;

    if (pool_of(t, a->pool) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = check_access(a->loc_type, a->loc_id)) != CUDA_SUCCESS)
        return rc;
    r->ds_hyper_res_u.value = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return CUDA_SUCCESS;
}

/* Freeing pool memory in a capture would make a graph free memory it does not own. */
static CUresult uncapturable(struct ds_tenant *t, ds_handle stream)
{
    static int once;

    if (!ds__tenant_capturing(t, stream))
        return CUDA_SUCCESS;
    if (!once) {
        once = 1;
        ds_warn("cuMemFreeAsync of pool memory on a capturing stream is not served");
    }
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/*
 * The one place an allocation reaches the device (the submission path takes it over at
 * merge): size bytes of pool h's, usable by work on s from now on, as a t->mem entry.
 * The quota is asked for size bytes, as if the pool had to grow by all of them, which
 * it may; the pool's real growth (none when it reuses a block, a little more when the
 * driver rounds) replaces them once it is known.
 */
static CUresult alloc_submit(struct ds_tenant *t, uint64_t h, struct vpool *p, uint64_t size,
                             struct ds_bstream *s, uint64_t *addr)
{
    struct ds_memtab_entry e = { .size = size, .owner = h, .kind = DS_RANGE_POOL };
    int err;

    if (ds__account_take(&t->acct, DS_MEM_POOL, size) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    err = t->ops->pool_alloc(t->be, p->real, size, s, &e.base);
    if (err == 0 && (err = ds_memtab_insert(&t->mem, &e)) != 0) {
        t->ops->pool_free(t->be, p->real, e.base, s);
        err = err == DS_ENOMEM ? err : DS_EDEVICE;
    }
    recount(t, p, size);
    if (err != 0)
        return ds_error_to_cu(err);
    p->live++;
    *addr = e.base;
    return CUDA_SUCCESS;
}

/*
 * The one place an allocation goes back (the submission path takes it over at merge):
 * pool allocation e, in s's order.  The tenant can no longer name it from here on.
 */
static CUresult free_submit(struct ds_tenant *t, const struct ds_memtab_entry *e,
                            struct ds_bstream *s)
{
    struct ds_memtab_entry gone = *e;
    struct vpool *p = ds_handles_get(&t->h, gone.owner, DS_H_POOL);
    int err;

    ds_memtab_remove(&t->mem, gone.base, NULL);
    err = t->ops->pool_free(t->be, p->real, gone.base, s);
    if (--p->live == 0 && p->destroyed)
        drop(t, gone.owner);
    else
        recount(t, p, 0);
    return ds_error_to_cu(err);
}

CUresult ds__ops_mem_alloc_async(struct ds_tenant *t, const ds_alloc_async_args *a,
                                 ds_pool_alloc_res *r)
{
    struct ds_bstream *s;
    struct vpool *p;
    uint64_t h = a->pool;
    CUresult rc;

    if (a->size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    /* In a capture, the allocation is the graph's: a memory allocation node's (ops_gmem.c). */
    if (ds__tenant_capturing(t, a->stream)) {
        r->ds_pool_alloc_res_u.alloc.pool = 0;
        return ds__ops_gmem_capture(t, a->stream, a->size, &r->ds_pool_alloc_res_u.alloc.ptr);
    }
    if (h == 0 && (h = t->pool_current) == 0 && (rc = default_pool(t, &h)) != CUDA_SUCCESS)
        return rc;
    if ((p = pool_of(t, h)) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    r->ds_pool_alloc_res_u.alloc.pool = h;
    return alloc_submit(t, h, p, a->size, s, &r->ds_pool_alloc_res_u.alloc.ptr);
}

CUresult ds__ops_mem_free_async(struct ds_tenant *t, const ds_free_async_args *a)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&t->mem, a->ptr, 0);
    struct ds_bstream *s;
    CUresult rc;

    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    /* Graph memory stays its allocation node's (ops_gmem.c), in a capture or not. */
    if (e != NULL && e->base == a->ptr && e->kind == DS_RANGE_GRAPH)
        return CUDA_SUCCESS;
    if ((rc = uncapturable(t, a->stream)) != CUDA_SUCCESS)
        return rc;
    if (e == NULL || e->base != a->ptr || e->kind != DS_RANGE_POOL)
        return CUDA_ERROR_INVALID_VALUE;
    return free_submit(t, e, s);
}

CUresult ds__ops_pool_free_now(struct ds_tenant *t, uint64_t ptr)
{
    CUresult rc = free_submit(t, ds_memtab_find(&t->mem, ptr, 0), NULL);

    if (rc != CUDA_SUCCESS)
        return rc;
    return ds__tenant_await(t, &(struct ds_fence_at){ .kind = DS_FENCE_ALL });
}

void ds__ops_pool_fini(struct ds_tenant *t)
{
    uint32_t cur = 0;
    uint64_t h;

    for (size_t i = t->mem.n; i-- > 0;)
        if (t->mem.v[i].kind == DS_RANGE_POOL)
            free_submit(t, &t->mem.v[i], NULL);
    while ((h = ds_handles_next(&t->h, DS_H_POOL, &cur)) != 0)
        drop(t, h);
    t->pool_default = t->pool_current = 0;
}
