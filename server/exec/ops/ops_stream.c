#include "ops.h"

#include "ds_error.h"

#include <stdlib.h>

/* As on an H100: 0 is the lowest priority, -5 the highest; CUDA clamps, so do we. */
#define PRIO_LEAST 0
#define PRIO_GREATEST (-5)

CUresult ds__ops_stream_create(struct ds_tenant *t, const ds_stream_create_args *a,
                               ds_handle_res *r)
{
    struct ds_vstream *s;
    int prio = a->priority;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((a->flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    prio = prio > PRIO_LEAST ? PRIO_LEAST : prio < PRIO_GREATEST ? PRIO_GREATEST : prio;
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = a->ctx;
    s->flags = a->flags;
    s->priority = prio;
    s->id = t->next_id++;
    if (t->ops->stream_create(t->be, a->flags, prio, &s->real) != 0) {
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->ds_handle_res_u.handle = ds_handles_add(&t->h, DS_H_STREAM, s);
    if (r->ds_handle_res_u.handle == 0) {
        t->ops->stream_destroy(t->be, s->real);
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

CUresult ds__ops_stream_destroy(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_vstream *s = ds_handles_remove(&t->h, *h, DS_H_STREAM);

    (void)r;
    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    ds__tenant_set_capturing(t, s, 0);
    ds__tenant_stream_gone(t, s->real);
    t->ops->stream_destroy(t->be, s->real);
    free(s->into_deps);
    free(s);
    return CUDA_SUCCESS;
}

CUresult ds__ops_stream_synchronize(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_bstream *s;

    (void)r;
    if (ds__tenant_stream(t, *h, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    return ds__tenant_await_stream(t, s);
}

CUresult ds__ops_stream_query(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_bstream *s;

    (void)r;
    if (ds__tenant_stream(t, *h, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    return ds_error_to_cu(t->ops->stream_query(t->be, s));
}

CUresult ds__ops_stream_wait_event(struct ds_tenant *t, const ds_wait_event_args *a)
{
    struct ds_vevent *e = ds_handles_get(&t->h, a->event, DS_H_EVENT);
    struct ds_bstream *s;

    if (e == NULL || ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->flags != 0 && a->flags != CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    return ds_error_to_cu(t->ops->stream_wait_event(t->be, s, e->real));
}

CUresult ds__ops_stream_get_info(struct ds_tenant *t, const ds_handle *h, ds_stream_info_res *r)
{
    struct ds_stream_info *info = &r->ds_stream_info_res_u.info;
    struct ds_bstream *real;
    struct ds_vstream *s;

    if (ds__tenant_stream(t, *h, &real) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    s = ds_handles_get(&t->h, *h, DS_H_STREAM);
    /* The default streams belong to the primary context and have fixed traits. */
    info->flags = s ? s->flags : 0;
    info->priority = s ? s->priority : 0;
    info->ctx = s ? s->ctx : t->primary;
    info->id = s ? s->id : 0;
    return CUDA_SUCCESS;
}

void ds__ops_stream_drop(struct ds_tenant *t, uint64_t ctx, int all)
{
    uint32_t cur = 0;
    uint64_t h;

    while ((h = ds_handles_next(&t->h, DS_H_STREAM, &cur)) != 0) {
        struct ds_vstream *s = ds_handles_get(&t->h, h, DS_H_STREAM);

        if (all || s->ctx == ctx) {
            ds_handles_remove(&t->h, h, DS_H_STREAM);
            ds__tenant_set_capturing(t, s, 0);
            ds__tenant_stream_gone(t, s->real);
            t->ops->stream_destroy(t->be, s->real);
            free(s->into_deps);
            free(s);
        }
    }
}
