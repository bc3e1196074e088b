/*
 * Large in-band copies whose chunks travel over the tenant's data connections
 * (stripes.h), announced by a call on the first connection so that they keep its
 * order.  Host to device: a batched call, as an asynchronous in-band chunk is, whose
 * chunks are all read when it is served (or held, executor.c); a copy the call's checks
 * refused is still read and dropped (its error held for the next synchronous call, as
 * CUDA holds an asynchronous copy's), so that the data
 * connections stay in step with the calls.  Device to host: the call is checked and
 * answered first, and the chunks follow it (ds__ops_dtoh_striped_send) before the next
 * call is served, so that a refused copy sends none.  A data connection that fails or
 * sends a chunk out of place ends the session.
 */
#include "ops.h"
#include "stripes.h"

#include "ds_error.h"
#include "ds_log.h"

struct striped {
    struct ds_tenant *t;
    const ds_striped_args *a;
    struct ds_bstream *s;
};

static int put(void *h, uint64_t off, const char *bytes, size_t len)
{
    struct striped *c = h;
    int rc = c->t->ops->memcpy_htod(c->t->be, c->a->dev + off, bytes, len, c->s);

    return rc != 0 ? rc : ds__bulk_htod_queued(c->t, bytes, len, c->s);
}

static int get(void *h, uint64_t off, char *buf, size_t len)
{
    struct striped *c = h;

    return c->t->ops->memcpy_dtoh(c->t->be, buf, c->a->dev + off, len, c->s);
}

/* The call's checks: CUDA_SUCCESS, or the error to answer. */
static CUresult check(struct ds_tenant *t, const ds_striped_args *a, struct ds_bstream **s)
{
    if (ds__tenant_stream(t, a->stream, s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ds__tenant_capturing(t, a->stream))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (a->size == 0 || ds__tenant_range(t, a->dev, a->size) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult ds__ops_memcpy_htod_striped(struct ds_tenant *t, const ds_striped_args *a)
{
    struct striped c = { .t = t, .a = a };
    struct ds_trace_mark m = { 0 };
    CUresult rc = check(t, a, &c.s);
    int err;

    /* Traced as one copy, as the tenant made it. */
    if (rc == CUDA_SUCCESS)
        ds__trace_begin(t, a->stream, c.s, &m);
    err = ds__stripes_recv(t, a->copy, a->size, a->conns, rc == CUDA_SUCCESS ? put : NULL, &c);
    if (rc == CUDA_SUCCESS)
        ds__trace_end(t, c.s, &m, err, DS_TRACE_HTOD, NULL, a->size);
    if (err == DS_EIO || err == DS_EPROTO) {
        ds_error("striped copy %u to the device: %s; ending the session", a->copy,
                 ds_strerror(err));
        t->closing = 1;
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    return rc != CUDA_SUCCESS ? rc : (CUresult)ds_error_to_cu(err);
}

CUresult ds__ops_memcpy_dtoh_striped(struct ds_tenant *t, const ds_striped_args *a,
                                     ds_void_res *r)
{
    struct ds_bstream *s;
    CUresult rc = check(t, a, &s);

    (void)r;
    if (rc == CUDA_SUCCESS && (a->conns == 0 || (int)a->conns > ds__stripes_count()))
        rc = CUDA_ERROR_INVALID_VALUE;
    return rc;
}

int ds__ops_dtoh_striped_send(struct ds_tenant *t, const ds_striped_args *a)
{
    struct striped c = { .t = t, .a = a };
    struct ds_trace_mark m = { 0 };
    int err;

    if (ds__tenant_stream(t, a->stream, &c.s) != 0)
        return DS_EINVAL;
    ds__trace_begin(t, a->stream, c.s, &m);
    err = ds__stripes_send(t, a->copy, a->size, a->conns, get, &c);
    ds__trace_end(t, c.s, &m, err, DS_TRACE_DTOH, NULL, a->size);
    if (err != 0)
        ds_error("striped copy %u to the host: %s; ending the session", a->copy,
                 ds_strerror(err));
    return err;
}
