#include "ops.h"

#include "ds_error.h"

#include <stdlib.h>

/* Only the device this server was started for exists, as ordinal 0. */
static int bad_device(int dev)
{
    return dev != 0;
}

static struct ds_vctx *new_ctx(struct ds_tenant *t, int primary, unsigned flags, uint64_t *h)
{
    struct ds_vctx *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->primary = primary;
    c->flags = flags;
    c->id = t->next_id++;
    *h = ds_handles_add(&t->h, DS_H_CTX, c);
    if (*h == 0) {
        free(c);
        return NULL;
    }
    return c;
}

static struct ds_vctx *primary_ctx(struct ds_tenant *t)
{
    return t->primary ? ds_handles_get(&t->h, t->primary, DS_H_CTX) : NULL;
}

int ds__ops_make_primary(struct ds_tenant *t)
{
    return new_ctx(t, 1, 0, &t->primary) != NULL ? 0 : DS_ENOMEM;
}

CUresult ds__ops_primary_retain(struct ds_tenant *t, const int *dev, ds_handle_res *r)
{
    struct ds_vctx *c = primary_ctx(t);

    if (bad_device(*dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (c == NULL && (c = new_ctx(t, 1, 0, &t->primary)) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->refcount++;
    c->active = 1;
    r->ds_handle_res_u.handle = t->primary;
    return CUDA_SUCCESS;
}

/* The primary context's resources go when its last reference does, as in CUDA. */
static void deactivate(struct ds_tenant *t, struct ds_vctx *c)
{
    ds__tenant_drop_ctx(t, t->primary);
    c->active = 0;
    c->refcount = 0;
}

CUresult ds__ops_primary_release(struct ds_tenant *t, const int *dev, ds_void_res *r)
{
    struct ds_vctx *c = primary_ctx(t);

    (void)r;
    if (bad_device(*dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (c == NULL || c->refcount == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--c->refcount == 0)
        deactivate(t, c);
    return CUDA_SUCCESS;
}

CUresult ds__ops_primary_get_state(struct ds_tenant *t, const int *dev, ds_pstate_res *r)
{
    struct ds_vctx *c = primary_ctx(t);

    if (bad_device(*dev))
        return CUDA_ERROR_INVALID_DEVICE;
    r->ds_pstate_res_u.state.flags = c ? c->flags : 0;
    r->ds_pstate_res_u.state.active = c ? c->active : 0;
    return CUDA_SUCCESS;
}

#define CTX_FLAGS_ALLOWED                                                                  \
    (CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_COREDUMP_ENABLE | \
     CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS)

CUresult ds__ops_primary_set_flags(struct ds_tenant *t, const ds_pflags_args *a, ds_void_res *r)
{
    struct ds_vctx *c;

    (void)r;
    if (bad_device(a->dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if ((a->flags & ~(unsigned)CTX_FLAGS_ALLOWED) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    c = primary_ctx(t);
    if (c == NULL && (c = new_ctx(t, 1, 0, &t->primary)) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->flags = a->flags;
    return CUDA_SUCCESS;
}

CUresult ds__ops_ctx_set_flags(struct ds_tenant *t, const ds_ctx_flags_args *a, ds_void_res *r)
{
    struct ds_vctx *c = ds__tenant_ctx(t, a->ctx);

    (void)r;
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((a->flags & ~(unsigned)CTX_FLAGS_ALLOWED) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    c->flags = a->flags;
    return CUDA_SUCCESS;
}

CUresult ds__ops_primary_reset(struct ds_tenant *t, const int *dev, ds_void_res *r)
{
    struct ds_vctx *c = primary_ctx(t);

    (void)r;
    if (bad_device(*dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (c != NULL) {
        deactivate(t, c);
        c->flags = 0;
    }
    return CUDA_SUCCESS;
}

CUresult ds__ops_ctx_create(struct ds_tenant *t, const ds_ctx_create_args *a, ds_handle_res *r)
{
    struct ds_vctx *c;

    if (bad_device(a->dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if ((a->flags & ~(unsigned)CTX_FLAGS_ALLOWED) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    c = new_ctx(t, 0, a->flags, &r->ds_handle_res_u.handle);
    if (c == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->active = 1;
    return CUDA_SUCCESS;
}

CUresult ds__ops_ctx_destroy(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_vctx *c = ds_handles_get(&t->h, *h, DS_H_CTX);

    (void)r;
    if (c == NULL || c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    ds__tenant_drop_ctx(t, *h);
    free(ds_handles_remove(&t->h, *h, DS_H_CTX));
    return CUDA_SUCCESS;
}

CUresult ds__ops_ctx_synchronize(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    (void)r;
    if (ds__tenant_ctx(t, *h) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* All of the tenant's work, a superset of this context's: never too little. */
    return ds__tenant_await(t, &(struct ds_fence_at){ .kind = DS_FENCE_ALL });
}

CUresult ds__ops_ctx_limit(struct ds_tenant *t, const ds_limit_args *a, ds_hyper_res *r)
{
    uint64_t v = a->value;
    int rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (a->limit < 0 || a->limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    rc = t->ops->limit(t->be, a->limit, a->set != 0, &v);
    r->ds_hyper_res_u.value = v;
    return rc == DS_EINVAL ? CUDA_ERROR_UNSUPPORTED_LIMIT : ds_error_to_cu(rc);
}

CUresult ds__ops_ctx_query(struct ds_tenant *t, const ds_ctx_query_args *a, ds_hyper_res *r)
{
    uint64_t v = 0;
    int rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* Only the legacy stream's number is asked (the client numbers the tenant's other
     * streams itself), and nothing else reaches the driver's undocumented slots. */
    if (a->query != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    rc = t->ops->ctx_query(t->be, a->query, &v);
    r->ds_hyper_res_u.value = v;
    return ds_error_to_cu(rc);
}

CUresult ds__ops_ctx_get_info(struct ds_tenant *t, const ds_handle *h, ds_ctx_info_res *r)
{
    struct ds_vctx *c = ds__tenant_ctx(t, *h);

    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    r->ds_ctx_info_res_u.info.dev = 0;
    r->ds_ctx_info_res_u.info.flags = c->flags;
    r->ds_ctx_info_res_u.info.api_version = 3020;
    r->ds_ctx_info_res_u.info.id = c->id;
    return CUDA_SUCCESS;
}
