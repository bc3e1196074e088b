/* cuCtxRecordEvent and cuCtxWaitEvent: an event recorded behind every stream of a
 * context, and every stream of a context made to wait for one.  The context's streams
 * are its own streams and the legacy default stream, which all contexts of a tenant
 * share here (a superset: never too little waiting).  Streams the context creates later
 * do not wait for an earlier cuCtxWaitEvent. */
#include "ops.h"

#include "ds_error.h"

/* Stream s of the context: the aux stream waits for the work submitted to s so far. */
static int join(struct ds_tenant *t, void *aux, struct ds_bstream *s)
{
    struct ds_bevent *tmp;
    int rc = t->ops->event_create(t->be, CU_EVENT_DISABLE_TIMING, &tmp);

    if (rc != 0)
        return rc;
    rc = t->ops->event_record(t->be, tmp, s);
    if (rc == 0)
        rc = t->ops->stream_wait_event(t->be, aux, tmp);
    t->ops->event_destroy(t->be, tmp);
    return rc;
}

/* Apply fn(t, arg, stream) to the context's streams: the legacy one, then each of its
 * own, up to the first failure. */
static int each_stream(struct ds_tenant *t, uint64_t ctx,
                       int (*fn)(struct ds_tenant *, void *, struct ds_bstream *), void *arg)
{
    uint32_t cur = 0;
    uint64_t h;
    int rc = fn(t, arg, NULL);

    while (rc == 0 && (h = ds_handles_next(&t->h, DS_H_STREAM, &cur)) != 0) {
        struct ds_vstream *s = ds_handles_get(&t->h, h, DS_H_STREAM);

        if (s->ctx == ctx)
            rc = fn(t, arg, s->real);
    }
    return rc;
}

static int record(struct ds_tenant *t, uint64_t ctx, struct ds_bevent *e)
{
    struct ds_bstream *aux;
    int rc = t->ops->stream_create(t->be, CU_STREAM_NON_BLOCKING, 0, &aux);

    if (rc != 0)
        return rc;
    rc = each_stream(t, ctx, join, aux);
    if (rc == 0)
        rc = t->ops->event_record(t->be, e, aux);
    t->ops->stream_destroy(t->be, aux);
    return rc;
}

static int wait_one(struct ds_tenant *t, void *e, struct ds_bstream *s)
{
    return t->ops->stream_wait_event(t->be, s, e);
}

CUresult ds__ops_ctx_event(struct ds_tenant *t, const ds_ctx_event_args *a)
{
    struct ds_vevent *e = ds_handles_get(&t->h, a->event, DS_H_EVENT);

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->wait)
        return ds_error_to_cu(record(t, a->ctx, e->real));
    return ds_error_to_cu(each_stream(t, a->ctx, wait_one, e->real));
}
