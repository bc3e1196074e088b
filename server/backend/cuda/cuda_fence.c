/*
 * Fences on the real device (backend.h): an event recorded where the awaited work ends,
 * queried by the executor's loop while it spins, and, once it would sleep, handed to
 * the waker (cuda_waker.c), which writes the loop's eventfd when the device gets there.
 *
 * The waker's event is recorded on a private stream of the fence's own, never on a
 * tenant stream: the tenant's streams carry only the tenant's work.  Fences of an event
 * or of all the tenant's work need such a stream anyway, to wait on the event or on
 * every stream's tail.  Streams cost tens of microseconds to make, so fences are kept
 * for reuse.
 */
#include "cuda_backend.h"

#include "ds_error.h"

#include <stdlib.h>

struct ds_bfence {
    CUevent done;   /* recorded where the awaited work ends */
    CUstream own;   /* waits for the work (event and all-work fences), then wakes */
    int armed;
    struct ds_bfence *next; /* in the backend's spare list */
};

static int fence_new(struct ds_backend *b, struct ds_bfence **out)
{
    struct ds_bfence *f = b->spare_fences;
    CUresult r;

    if (f != NULL) {
        b->spare_fences = f->next;
        *out = f;
        return 0;
    }
    if ((f = calloc(1, sizeof(*f))) == NULL)
        return DS_ENOMEM;
    r = b->cu.cuEventCreate(&f->done, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS) {
        r = b->cu.cuGreenCtxStreamCreate(&f->own, b->green, CU_STREAM_NON_BLOCKING, 0);
        if (r != CUDA_SUCCESS)
            b->cu.cuEventDestroy(f->done);
    }
    if (r != CUDA_SUCCESS) {
        free(f);
        return ds__cuda_err(r);
    }
    *out = f;
    return 0;
}

static void fence_put(struct ds_backend *b, struct ds_bfence *f)
{
    f->armed = 0;
    f->next = b->spare_fences;
    b->spare_fences = f;
}

/* 1 when s has work the device has not finished, 0 when not, or DS_E*. */
static int busy(struct ds_backend *b, CUstream s)
{
    CUresult r = b->cu.cuStreamQuery(s);

    return r == CUDA_ERROR_NOT_READY ? 1 : ds__cuda_err(r);
}

/* The tails of every stream with unfinished work, as waits on the fence's stream; 1 when
 * there was any, 0 when none, or DS_E*.  A capturing stream holds no work of the device's
 * (and querying it would end the capture). */
static int wait_all(struct ds_backend *b, struct ds_bfence *f)
{
    struct ds_bstream *s = &b->legacy;
    int any = 0, rc = 0;

    do {
        if (!ds__cuda_capturing(b, s) && (rc = busy(b, s->s)) == 1) {
            any = 1;
            rc = ds__cuda_record_tail(b, s);
            if (rc == 0)
                rc = ds__cuda_err(b->cu.cuStreamWaitEvent(f->own, s->tail, 0));
        }
        s = s == &b->legacy ? b->streams.next : s->next;
    } while (rc >= 0 && s != &b->streams);
    return rc < 0 ? rc : any;
}

/* The driver writes what kernels printed (printf, failed asserts) at synchronisations,
 * not at queries (CUDA C Programming Guide, "Formatted Output"), and the executor only
 * queries: once the device has passed a fence's point, synchronising on an event there
 * costs no wait and puts that output out before the reply ends the tenant's wait.  A
 * context that has failed says so here, as a native synchronisation would (the driver
 * reports a failed device assert only at a synchronisation). */
static CUresult print_out(struct ds_backend *b, CUevent passed)
{
    return b->cu.cuEventSynchronize(passed);
}

/* Nothing to wait for: the work the fence was to cover is done already, but its output
 * may still be in the device's buffer, and the context may have failed since.  An event
 * recorded on an idle stream has passed at once; a capturing stream is not one to
 * record on. */
static CUresult print_out_idle(struct ds_backend *b, const struct ds_fence_at *at,
                               struct ds_bfence *f)
{
    struct ds_bstream *s = at->kind == DS_FENCE_STREAM ? ds__cuda_real(b, at->stream) : &b->legacy;
    CUresult r;

    if (at->kind == DS_FENCE_EVENT)
        return print_out(b, at->event->e);
    if (ds__cuda_capturing(b, s))
        return CUDA_SUCCESS;
    r = b->cu.cuEventRecord(f->done, s->s);
    return r == CUDA_SUCCESS ? print_out(b, f->done) : r;
}

/* Mark the point in f; 1 when there is something to wait for, 0 when not, or DS_E*. */
static int mark(struct ds_backend *b, const struct ds_fence_at *at, struct ds_bfence *f)
{
    struct ds_bstream *s = ds__cuda_real(b, at->stream);
    CUresult r;
    int rc;

    switch (at->kind) {
    case DS_FENCE_STREAM:
        if ((rc = busy(b, s->s)) != 1)
            return rc;
        r = b->cu.cuEventRecord(f->done, s->s);
        return r == CUDA_SUCCESS ? 1 : ds__cuda_err(r);
    case DS_FENCE_EVENT:
        r = b->cu.cuEventQuery(at->event->e);
        if (r != CUDA_ERROR_NOT_READY)
            return ds__cuda_err(r);
        r = b->cu.cuStreamWaitEvent(f->own, at->event->e, 0);
        break;
    default:
        if ((rc = wait_all(b, f)) != 1)
            return rc;
        r = CUDA_SUCCESS;
        break;
    }
    if (r == CUDA_SUCCESS)
        r = b->cu.cuEventRecord(f->done, f->own);
    return r == CUDA_SUCCESS ? 1 : ds__cuda_err(r);
}

int ds__cuda_fence_create(struct ds_backend *b, const struct ds_fence_at *at,
                          struct ds_bfence **out)
{
    struct ds_bstream *s = ds__cuda_real(b, at->stream);
    struct ds_bfence *f = NULL;
    int rc;

    *out = NULL;
    /* What the driver answers a synchronisation of a capturing stream: an error, and the
     * capture invalidated. */
    if (at->kind == DS_FENCE_STREAM && ds__cuda_capturing(b, s))
        return ds__cuda_err(b->cu.cuStreamSynchronize(s->s));
    if ((rc = fence_new(b, &f)) != 0)
        return rc;
    rc = mark(b, at, f);
    /* Only a failure of the whole context is the synchronisation's answer; any other
     * failure to put output out leaves the answer as it was. */
    if (rc == 0 && ds__cuda_err(print_out_idle(b, at, f)) != 0 && ds__cuda_sticky() != 0)
        rc = DS_ECU(ds__cuda_sticky());
    if (rc == 1)
        *out = f;
    else
        fence_put(b, f);
    return rc < 0 ? rc : 0;
}

int ds__cuda_fence_query(struct ds_backend *b, struct ds_bfence *f)
{
    CUresult r = b->cu.cuEventQuery(f->done);

    if (r == CUDA_SUCCESS && ds__cuda_err(print_out(b, f->done)) != 0 && ds__cuda_sticky() != 0)
        r = (CUresult)ds__cuda_sticky();
    return r == CUDA_ERROR_NOT_READY ? DS_ENOTREADY : ds__cuda_err(r);
}

int ds__cuda_fence_arm(struct ds_backend *b, struct ds_bfence *f, int efd, uint64_t *wake_ns)
{
    CUresult r;
    int rc;

    *wake_ns = 0;
    if (f->armed)
        return 0;
    r = b->cu.cuStreamWaitEvent(f->own, f->done, 0);
    if (r != CUDA_SUCCESS)
        return ds__cuda_err(r);
    rc = ds__cuda_waker_add(b, f->own, efd);
    f->armed = rc == 0;
    return rc;
}

/* A fence still armed goes back to the spares all the same: the waker has its own event,
 * and work put on the fence's stream later only waits behind the point it marked. */
void ds__cuda_fence_destroy(struct ds_backend *b, struct ds_bfence *f)
{
    fence_put(b, f);
}

void ds__cuda_fence_fini(struct ds_backend *b)
{
    while (b->spare_fences != NULL) {
        struct ds_bfence *f = b->spare_fences;

        b->spare_fences = f->next;
        b->cu.cuStreamDestroy(f->own);
        b->cu.cuEventDestroy(f->done);
        free(f);
    }
}
