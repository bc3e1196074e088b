/*
 * The pCtx pool of the cuda backend: green contexts over sets of SM groups, and moving
 * a tenant's streams between them.
 *
 * The device is split once, at open, into groups of the driver's minimum partition size
 * (an H100: 16 groups of 8 SMs and 4 SMs left over); a green context for any set of
 * groups is made from that one split (the driver combines resources of one split only)
 * on first use (2 to 170 ms measured on an H100 under MPS), and kept.  The executor's
 * binder thread makes it (prepare) as soon as the control process decides; bind never
 * waits for it (DS_EBUSY until it is ready).  The executor waits for it only where
 * running on meanwhile would use a neighbour's SMs (server/exec/tenant.c).  Memory and
 * libraries belong to the process, so moving work copies nothing: each stream continues
 * on a real stream of the new green context that waits for an event at the tail of the
 * old one.  The old real stream is parked, not destroyed, and taken up again when the
 * tenant comes back (moves back and forth are what policies do): a move that made new
 * streams took 50 µs at the median on an H100 (run 65).  An event is recorded only on
 * streams of the context it was made in, as the driver documents, so each real stream
 * has its own tail event.
 */
#include "cuda_backend.h"

#include "ds_error.h"
#include "ds_log.h"

#include <pthread.h>
#include <string.h>

int ds__cuda_pctx_init(struct ds_backend *b)
{
    CUdevResource sms;
    unsigned n;
    CUresult r = ds__cuda_sm_groups(&b->cu, b->dev, &sms, &b->pc.sm);

    n = b->pc.sm.count;
    if (r == CUDA_SUCCESS)
        r = b->cu.cuDevSmResourceSplitByCount(b->pc.groups, &n, &sms, NULL, 0, b->pc.sm.size);
    if (r != CUDA_SUCCESS) {
        ds_error("cannot split the device's SMs into groups (CUresult %d)", r);
        return ds__cuda_err(r);
    }
    b->pc.sm.count = n;
    pthread_mutex_init(&b->pc.lock, NULL);
    b->pc.bound = b->green;
    b->pc.bound_mask = 0;
    return 0;
}

void ds__cuda_pctx_fini(struct ds_backend *b)
{
    pthread_mutex_destroy(&b->pc.lock);
    for (int i = 0; i < b->pc.ncached; i++)
        b->cu.cuGreenCtxDestroy(b->pc.cached[i].g);
    b->pc.ncached = 0;
}

static int pctx_create(struct ds_backend *b, uint64_t mask, CUgreenCtx *out)
{
    CUdevResource res[64];
    CUdevResourceDesc desc;
    unsigned n = 0;
    CUresult r;

    for (unsigned i = 0; i < b->pc.sm.count; i++)
        if (mask >> i & 1)
            res[n++] = b->pc.groups[i];
    r = b->cu.cuDevResourceGenerateDesc(&desc, res, n);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuGreenCtxCreate(out, desc, b->dev, CU_GREEN_CTX_DEFAULT_STREAM);
    return ds__cuda_err(r);
}

/* The green context for `mask`, from the pool (0), or new when `make` (1).  Without
 * `make` it never waits: DS_EBUSY when the context is not ready (the binder thread is
 * making it, or will). */
static int pctx_get(struct ds_backend *b, uint64_t mask, int make, CUgreenCtx *out)
{
    int rc = DS_EBUSY, found = 0;

    if (mask == 0) {
        *out = b->green;
        return 0;
    }
    if (make)
        pthread_mutex_lock(&b->pc.lock);
    else if (pthread_mutex_trylock(&b->pc.lock) != 0)
        return DS_EBUSY;
    for (int i = 0; i < b->pc.ncached && !found; i++)
        if (b->pc.cached[i].mask == mask) {
            *out = b->pc.cached[i].g;
            found = 1;
            rc = 0;
        }
    if (!found && make && b->pc.ncached == DS_PCTX_MAX)
        rc = DS_ENOMEM;
    else if (!found && make && (rc = pctx_create(b, mask, out)) == 0) {
        b->pc.cached[b->pc.ncached].mask = mask;
        b->pc.cached[b->pc.ncached++].g = *out;
        rc = 1;
    }
    pthread_mutex_unlock(&b->pc.lock);
    return rc;
}

int ds__cuda_prepare(struct ds_backend *b, uint64_t groups)
{
    CUgreenCtx g;

    if (b->pc.sm.count < 64 && (groups >> b->pc.sm.count) != 0)
        return DS_EINVAL;
    return pctx_get(b, groups, 1, &g);
}

/* The slot of s's real stream parked on pCtx `mask`, or -1. */
static int parked_find(const struct ds_bstream *s, uint64_t mask)
{
    for (int i = 0; i < DS_PARKED_MAX; i++)
        if (s->parked[i].s != NULL && s->parked[i].mask == mask)
            return i;
    return -1;
}

/* Park s's current real stream, which ran on pCtx `mask`, in `slot` (one just emptied),
 * or after the others, destroying the oldest when all slots are taken (its work still
 * finishes). */
static void park(struct ds_backend *b, struct ds_bstream *s, uint64_t mask, int slot)
{
    if (slot < 0) {
        if (s->parked[0].s != NULL) {
            b->cu.cuEventDestroy(s->parked[0].tail);
            b->cu.cuStreamDestroy(s->parked[0].s);
        }
        memmove(&s->parked[0], &s->parked[1], (DS_PARKED_MAX - 1) * sizeof(s->parked[0]));
        slot = DS_PARKED_MAX - 1;
    }
    s->parked[slot].s = s->s;
    s->parked[slot].tail = s->tail;
    s->parked[slot].mask = mask;
}

void ds__cuda_unpark_all(struct ds_backend *b, struct ds_bstream *s)
{
    for (int i = 0; i < DS_PARKED_MAX; i++)
        if (s->parked[i].s != NULL) {
            b->cu.cuEventDestroy(s->parked[i].tail);
            b->cu.cuStreamDestroy(s->parked[i].s);
            s->parked[i].s = NULL;
        }
}

/* Continue stream s, which ran on pCtx `from`, on pCtx `to` (bound now), after
 * everything already submitted to it: on its stream parked there, or a new one. */
static int move_stream(struct ds_backend *b, struct ds_bstream *s, uint64_t from, uint64_t to)
{
    struct ds_bstream next = *s;
    int slot = parked_find(s, to);
    CUresult r;
    int rc = ds__cuda_record_tail(b, s);

    if (rc == 0 && slot >= 0) {
        next.s = s->parked[slot].s;
        next.tail = s->parked[slot].tail;
    } else if (rc == 0) {
        rc = ds__cuda_stream_init(b, &next, s->blocking, s->prio);
    }
    if (rc != 0)
        return rc;
    if (s->seq != 0 && (r = b->cu.cuStreamWaitEvent(next.s, s->tail, 0)) != CUDA_SUCCESS) {
        if (slot < 0) {
            b->cu.cuEventDestroy(next.tail);
            b->cu.cuStreamDestroy(next.s);
        }
        return ds__cuda_err(r);
    }
    /* The new tail stands for the same work as the old one (through the wait just
     * made), so streams that waited for the old tail keep their bookkeeping. */
    if (s->seq != 0)
        b->cu.cuEventRecord(next.tail, next.s);
    park(b, s, from, slot);
    s->s = next.s;
    s->tail = next.tail;
    return 0;
}

int ds__cuda_bind(struct ds_backend *b, uint64_t groups)
{
    CUgreenCtx was = b->pc.bound;
    uint64_t from = b->pc.bound_mask;
    int rc;

    if (b->pc.sm.count < 64 && (groups >> b->pc.sm.count) != 0)
        return DS_EINVAL;
    if (groups == b->pc.bound_mask)
        return 0;
    for (struct ds_bstream *s = b->streams.next; s != &b->streams; s = s->next)
        if (s->capturing)
            return DS_EBUSY;
    rc = pctx_get(b, groups, 0, &b->pc.bound);
    if (rc == 0)
        rc = move_stream(b, &b->legacy, from, groups);
    for (struct ds_bstream *s = b->streams.next; s != &b->streams && rc == 0; s = s->next)
        rc = move_stream(b, s, from, groups);
    if (rc != 0) {
        /* Streams that moved run on the new pCtx, the others on the old one, each in
         * order; the binding is tried again when the control process next asks. */
        b->pc.bound = was;
        return rc;
    }
    b->pc.bound_mask = groups;
    return 0;
}
