#include "ops.h"

#include "ds_error.h"

#include <stdlib.h>

#define EVENT_FLAGS_ALLOWED \
    (CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)

CUresult ds__ops_event_create(struct ds_tenant *t, const ds_event_create_args *a,
                              ds_handle_res *r)
{
    struct ds_vevent *e;
    int rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((a->flags & ~(unsigned)EVENT_FLAGS_ALLOWED) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* An interprocess event (ops_ipc.c) is never timed, as CUDA requires. */
    if ((a->flags & CU_EVENT_INTERPROCESS) && !(a->flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    e = calloc(1, sizeof(*e));
    if (e == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->ctx = a->ctx;
    e->flags = a->flags;
    if ((rc = t->ops->event_create(t->be, a->flags, &e->real)) != 0) {
        free(e);
        return ds_error_to_cu(rc);
    }
    return ds__tenant_publish_event(t, e, &r->ds_handle_res_u.handle);
}

void ds__ops_event_free(struct ds_tenant *t, struct ds_vevent *e)
{
    ds__ops_ipc_event_gone(t, e);
    if (e->refs > 0) {
        e->gone = 1;
        return;
    }
    t->ops->event_destroy(t->be, e->real);
    free(e);
}

void ds__ops_event_release(struct ds_tenant *t, struct ds_vevent *e)
{
    if (--e->refs > 0 || !e->gone)
        return;
    t->ops->event_destroy(t->be, e->real);
    free(e);
}

CUresult ds__ops_event_destroy(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_vevent *e = ds_handles_remove(&t->h, *h, DS_H_EVENT);

    (void)r;
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    ds__ops_event_free(t, e);
    return CUDA_SUCCESS;
}

CUresult ds__ops_event_record(struct ds_tenant *t, const ds_record_args *a)
{
    struct ds_vevent *e = ds_handles_get(&t->h, a->event, DS_H_EVENT);
    struct ds_bstream *s;

    if (e == NULL || ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->flags != 0 && a->flags != CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    return ds_error_to_cu(t->ops->event_record(t->be, e->real, s));
}

static struct ds_vevent *event(struct ds_tenant *t, ds_handle h)
{
    return ds_handles_get(&t->h, h, DS_H_EVENT);
}

CUresult ds__ops_event_query(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_vevent *e = event(t, *h);

    (void)r;
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return ds_error_to_cu(t->ops->event_query(t->be, e->real));
}

CUresult ds__ops_event_synchronize(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_vevent *e = event(t, *h);

    (void)r;
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return ds__tenant_await(t, &(struct ds_fence_at){ .kind = DS_FENCE_EVENT, .event = e->real });
}

CUresult ds__ops_event_elapsed(struct ds_tenant *t, const ds_elapsed_args *a, ds_elapsed_res *r)
{
    struct ds_vevent *s = event(t, a->start), *e = event(t, a->end);

    if (s == NULL || e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return ds_error_to_cu(t->ops->event_elapsed(t->be, s->real, e->real, &r->ds_elapsed_res_u.ms));
}

void ds__ops_event_drop(struct ds_tenant *t, uint64_t ctx, int all)
{
    uint32_t cur = 0;
    uint64_t h;

    while ((h = ds_handles_next(&t->h, DS_H_EVENT, &cur)) != 0) {
        struct ds_vevent *e = ds_handles_get(&t->h, h, DS_H_EVENT);

        if (all || e->ctx == ctx) {
            ds_handles_remove(&t->h, h, DS_H_EVENT);
            ds__ops_event_free(t, e);
        }
    }
}
