#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"

#include <stdlib.h>

CUresult ds__ops_mem_alloc(struct ds_tenant *t, const ds_alloc_args *a, ds_alloc_res *r)
{
    struct ds_memtab_entry e = { .size = a->size, .owner = a->ctx, .kind = DS_RANGE_ALLOC };
    int rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (a->size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->capture_mode < CU_STREAM_CAPTURE_MODE_GLOBAL ||
        a->capture_mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__account_take(&t->acct, DS_MEM_DEVICE, a->size) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    rc = t->ops->dev_alloc(t->be, a->size, a->capture_mode, &e.base);
    if (rc == 0 && (rc = ds_memtab_insert(&t->mem, &e)) != 0) {
        t->ops->dev_free(t->be, e.base);
        rc = rc == DS_ENOMEM ? rc : DS_EDEVICE;
    }
    if (rc != 0) {
        ds__account_give(&t->acct, DS_MEM_DEVICE, a->size);
        return ds_error_to_cu(rc);
    }
    r->ds_alloc_res_u.ptr = e.base;
    return CUDA_SUCCESS;
}

CUresult ds__ops_mem_free(struct ds_tenant *t, const ds_dptr *p, ds_void_res *r)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&t->mem, *p, 0);

    (void)r;
    if (e != NULL && e->base == *p && e->kind == DS_RANGE_POOL)
        return ds__ops_pool_free_now(t, *p);
    /* Graph memory stays its allocation node's (ops_gmem.c). */
    if (e != NULL && e->base == *p && e->kind == DS_RANGE_GRAPH)
        return CUDA_SUCCESS;
    if (e != NULL && e->base == *p && e->kind == DS_RANGE_MANAGED) {
        ds__tenant_host_unmap(t, ds_memtab_find(&t->host_maps, e->owner, 0));
        return CUDA_SUCCESS;
    }
    /* Only what cuMemAlloc returned, not a module's global. */
    if (e == NULL || e->base != *p || e->kind != DS_RANGE_ALLOC)
        return CUDA_ERROR_INVALID_VALUE;
    ds__account_give(&t->acct, DS_MEM_DEVICE, e->size);
    if (ds_memtab_remove(&t->mem, *p, NULL) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    ds__ops_ipc_mem_gone(t, *p);
    return ds_error_to_cu(t->ops->dev_free(t->be, *p));
}

CUresult ds__ops_mem_get_info(struct ds_tenant *t, const ds_handle *ctx, ds_meminfo_res *r)
{
    if (ds__tenant_ctx(t, *ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    t->ops->dev_info(t->be, &r->ds_meminfo_res_u.info.free_bytes,
                     &r->ds_meminfo_res_u.info.total_bytes);
    ds__account_info(&t->acct, t->view.total_mem, &r->ds_meminfo_res_u.info.free_bytes,
                     &r->ds_meminfo_res_u.info.total_bytes);
    return CUDA_SUCCESS;
}

CUresult ds__ops_mem_get_range(struct ds_tenant *t, const ds_dptr *p, ds_range_res *r)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&t->mem, *p, 0);

    if (e == NULL)
        return CUDA_ERROR_NOT_FOUND;
    r->ds_range_res_u.range.base = e->base;
    r->ds_range_res_u.range.size = e->size;
    return CUDA_SUCCESS;
}

/* The common checks of a copy into device memory; 0-byte copies touch nothing. */
/* Host data crosses the connection and lives in the executor for the length of one call,
 * so a graph cannot keep a copy that replays it: refused while capturing, with the
 * error CUDA gives for what capture cannot hold. */
static CUresult uncapturable(struct ds_tenant *t, ds_handle stream)
{
    if (!ds__tenant_capturing(t, stream))
        return CUDA_SUCCESS;
    ds_warn("a host copy on a capturing stream cannot be captured through detshare");
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

static CUresult htod(struct ds_tenant *t, const ds_htod_args *a, int wait)
{
    struct ds_trace_mark m;
    struct ds_bstream *s;
    size_t n = a->data.data_len;
    CUresult rc;

    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = uncapturable(t, a->stream)) != CUDA_SUCCESS)
        return rc;
    if (n == 0)
        return CUDA_SUCCESS;
    if (ds__tenant_range(t, a->dst, n) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    ds__trace_begin(t, a->stream, s, &m);
    rc = ds_error_to_cu(t->ops->memcpy_htod(t->be, a->dst, a->data.data_val, n, s));
    ds__trace_end(t, s, &m, rc, DS_TRACE_HTOD, NULL, n);
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = ds_error_to_cu(ds__bulk_htod_queued(t, a->data.data_val, n, s))) != CUDA_SUCCESS)
        return rc;
    return wait ? ds__tenant_await_stream(t, s) : CUDA_SUCCESS;
}

CUresult ds__ops_memcpy_htod(struct ds_tenant *t, const ds_htod_args *a, ds_void_res *r)
{
    (void)r;
    return htod(t, a, 1);
}

CUresult ds__ops_memcpy_htod_async(struct ds_tenant *t, const ds_htod_args *a)
{
    return htod(t, a, 0);
}

CUresult ds__ops_memcpy_dtoh(struct ds_tenant *t, const ds_dtoh_args *a, ds_bytes_res *r)
{
    struct ds_trace_mark m = { 0 };
    struct ds_bstream *s;
    char *buf;
    int rc;

    if (a->size > DS_CHUNK_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ds__tenant_capturing(t, a->stream))
        return uncapturable(t, a->stream);
    if (a->size > 0 && ds__tenant_range(t, a->src, a->size) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* The reply owns the buffer, unless it is the tenant's reply buffer (bulk.h); the
     * dispatcher frees it with xdr_free after sending. */
    buf = ds__bulk_dtoh_buf(t, a->size);
    if (buf == NULL)
        buf = malloc(a->size ? a->size : 1);
    if (buf == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (a->size > 0)
        ds__trace_begin(t, a->stream, s, &m);
    rc = a->size > 0 ? t->ops->memcpy_dtoh(t->be, buf, a->src, a->size, s) : 0;
    ds__trace_end(t, s, &m, rc, DS_TRACE_DTOH, NULL, a->size);
    if (rc != 0) {
        if (!ds__bulk_owns(t, buf))
            free(buf);
        return ds_error_to_cu(rc);
    }
    r->ds_bytes_res_u.data.data_val = buf;
    r->ds_bytes_res_u.data.data_len = a->size;
    return CUDA_SUCCESS;
}

static CUresult dtod(struct ds_tenant *t, const ds_dtod_args *a, int wait)
{
    struct ds_trace_mark m;
    struct ds_bstream *s;
    CUresult rc;

    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->size == 0)
        return CUDA_SUCCESS;
    if (ds__tenant_range(t, a->dst, a->size) != 0 || ds__tenant_range(t, a->src, a->size) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    ds__trace_begin(t, a->stream, s, &m);
    rc = ds_error_to_cu(t->ops->memcpy_dtod(t->be, a->dst, a->src, a->size, s));
    ds__trace_end(t, s, &m, rc, DS_TRACE_DTOD, NULL, a->size);
    if (rc != CUDA_SUCCESS)
        return rc;
    return wait ? ds__tenant_await_stream(t, s) : CUDA_SUCCESS;
}

CUresult ds__ops_memcpy_dtod(struct ds_tenant *t, const ds_dtod_args *a, ds_void_res *r)
{
    (void)r;
    return dtod(t, a, 1);
}

CUresult ds__ops_memcpy_dtod_async(struct ds_tenant *t, const ds_dtod_args *a)
{
    return dtod(t, a, 0);
}

uint64_t ds__ops_memset_extent(uint64_t width, unsigned elem_size, uint64_t pitch,
                               uint64_t height)
{
    uint64_t row = width * elem_size;

    if (width > UINT64_MAX / 4)
        return 0;
    if (height == 1)
        return row;
    if (pitch < row || height - 1 > (UINT64_MAX - row) / pitch)
        return 0;
    return pitch * (height - 1) + row;
}

static CUresult fill(struct ds_tenant *t, const ds_memset_args *a, int wait)
{
    struct ds_trace_mark m;
    struct ds_bstream *s;
    uint64_t extent;
    int rc;

    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->elem_size != 1 && a->elem_size != 2 && a->elem_size != 4)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->width == 0 || a->height == 0)
        return CUDA_SUCCESS;
    if ((a->dst % a->elem_size) != 0 || (a->height > 1 && a->pitch % a->elem_size) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    extent = ds__ops_memset_extent(a->width, a->elem_size, a->pitch, a->height);
    if (extent == 0 || ds__tenant_range(t, a->dst, extent) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    ds__trace_begin(t, a->stream, s, &m);
    rc = t->ops->memset(t->be, a->dst, a->pitch, a->value, a->elem_size, a->width, a->height, s);
    ds__trace_end(t, s, &m, rc, DS_TRACE_MEMSET, NULL, a->width * a->elem_size * a->height);
    if (rc != 0)
        return CUDA_ERROR_UNKNOWN;
    return wait ? ds__tenant_await_stream(t, s) : CUDA_SUCCESS;
}

CUresult ds__ops_memset(struct ds_tenant *t, const ds_memset_args *a, ds_void_res *r)
{
    (void)r;
    return fill(t, a, 1);
}

CUresult ds__ops_memset_async(struct ds_tenant *t, const ds_memset_args *a)
{
    return fill(t, a, 0);
}

/* The arena part a copy names, or NULL when it is not wholly inside the arena.  Pages
 * registered at the tenant's address (ops_hostreg.c) are registered with the driver at
 * that view only, so copies use it: DMA, not the driver's staging of pageable memory. */
static unsigned char *arena_part(const struct ds_tenant *t, const ds_arena_copy_args *a)
{
    const struct ds_memtab_entry *m;

    if (t->arena == NULL || a->offset > t->arena_len || a->size > t->arena_len - a->offset)
        return NULL;
    m = a->size > 0 ? ds_memtab_find(&t->host_maps, a->offset, a->size) : NULL;
    if (m != NULL && m->data != NULL)
        return (unsigned char *)m->data + (a->offset - m->base);
    return t->arena + a->offset;
}

/* The checks common to both directions; *host is the tenant's arena bytes. */
static CUresult arena_copy(struct ds_tenant *t, const ds_arena_copy_args *a,
                           struct ds_bstream **s, unsigned char **host)
{
    CUresult rc;

    if (ds__tenant_stream(t, a->stream, s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = uncapturable(t, a->stream)) != CUDA_SUCCESS)
        return rc;
    if (t->arena == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    if ((*host = arena_part(t, a)) == NULL || ds__tenant_range(t, a->dev, a->size) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult arena_submit(struct ds_tenant *t, const ds_arena_copy_args *a, int to_device)
{
    struct ds_trace_mark m;
    struct ds_bstream *s;
    unsigned char *host;
    CUresult rc;
    int brc;

    if (a->size == 0)
        return CUDA_SUCCESS;
    if ((rc = arena_copy(t, a, &s, &host)) != CUDA_SUCCESS)
        return rc;
    ds__trace_begin(t, a->stream, s, &m);
    brc = to_device ? t->ops->memcpy_htod(t->be, a->dev, host, a->size, s)
                    : t->ops->memcpy_dtoh_async(t->be, host, a->dev, a->size, s);
    ds__trace_end(t, s, &m, brc, to_device ? DS_TRACE_HTOD : DS_TRACE_DTOH, NULL, a->size);
    return ds_error_to_cu(brc);
}

CUresult ds__ops_memcpy_htod_arena(struct ds_tenant *t, const ds_arena_copy_args *a)
{
    return arena_submit(t, a, 1);
}

CUresult ds__ops_memcpy_dtoh_arena(struct ds_tenant *t, const ds_arena_copy_args *a)
{
    return arena_submit(t, a, 0);
}

static int bad_arena_part(const struct ds_tenant *t, const ds_host_map_args *a)
{
    return t->arena == NULL || a->size == 0 || (a->offset | a->size) % 4096 != 0 ||
           a->offset > t->arena_len || a->size > t->arena_len - a->offset;
}

CUresult ds__ops_host_map(struct ds_tenant *t, const ds_host_map_args *a, ds_alloc_res *r)
{
    struct ds_memtab_entry map = { .base = a->offset, .size = a->size };
    struct ds_memtab_entry dev = { .size = a->size, .kind = DS_RANGE_HOST };
    int rc;

    if (t->arena == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (bad_arena_part(t, a) || ds_memtab_overlap(&t->host_maps, a->offset, a->size) != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = t->ops->host_map(t->be, t->arena + a->offset, a->size, &dev.base);
    if (rc != 0)
        return ds_error_to_cu(rc);
    map.owner = dev.base;
    if (ds_memtab_insert(&t->host_maps, &map) != 0 || ds_memtab_insert(&t->mem, &dev) != 0) {
        ds_memtab_remove(&t->host_maps, a->offset, NULL);
        t->ops->host_unmap(t->be, dev.base, t->arena + a->offset);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->ds_alloc_res_u.ptr = dev.base;
    return CUDA_SUCCESS;
}

CUresult ds__ops_host_unmap(struct ds_tenant *t, const ds_host_map_args *a, ds_void_res *r)
{
    const struct ds_memtab_entry *map = ds_memtab_find(&t->host_maps, a->offset, 0);

    (void)r;
    if (map == NULL || map->base != a->offset || map->size != a->size ||
        map->kind == DS_HOST_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    ds__tenant_host_unmap(t, map);
    return CUDA_SUCCESS;
}

void ds__ops_mem_drop(struct ds_tenant *t, uint64_t ctx, int all)
{
    for (size_t i = t->mem.n; i-- > 0;) {
        if (t->mem.v[i].kind == DS_RANGE_ALLOC && (all || t->mem.v[i].owner == ctx)) {
            uint64_t base = t->mem.v[i].base;

            ds__account_give(&t->acct, DS_MEM_DEVICE, t->mem.v[i].size);
            ds__ops_ipc_mem_gone(t, base);
            t->ops->dev_free(t->be, base);
            ds_memtab_remove(&t->mem, base, NULL);
        }
    }
}
