/*
 * What the cuda backend's files share: the driver's results as DS_E* codes (with the
 * sticky error that ends the process's contexts), a stream set up on the bound pCtx,
 * the legacy default stream's ordering rules and the device's SM groups.  The
 * operations themselves are in cuda.c and the area files (cuda_backend.h).
 */
#include "cuda_backend.h"

#include "ds_error.h"

#include <stdatomic.h>

/* The first error that ended this process's contexts for good: every driver result goes
 * through ds__cuda_err, and an executor has one backend. */
static _Atomic int sticky;

/* The errors after which a context cannot be used again (the driver's "sticky" ones), and
 * what an MPS client gets when another client's fault ended its context. */
static int is_sticky(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:
    case CUDA_ERROR_UNKNOWN:
        return 1;
    default:
        return 0;
    }
}

int ds__cuda_err(CUresult r)
{
    int none = 0;

    if (r == CUDA_SUCCESS)
        return 0;
    if (is_sticky(r))
        atomic_compare_exchange_strong(&sticky, &none, (int)r);
    return DS_ECU(r);
}

int ds__cuda_sticky(void)
{
    return atomic_load(&sticky);
}

/* New streams go to the pCtx the tenant is bound to now.  Their tail event is made in
 * that pCtx's context: the driver records an event only on streams of its own context. */
int ds__cuda_stream_init(struct ds_backend *b, struct ds_bstream *s, int blocking, int prio)
{
    CUgreenCtx g = b->pc.bound;
    CUcontext gc = b->ctx;
    CUresult r = CUDA_SUCCESS;

    s->s = NULL;
    if (g != b->green && (r = b->cu.cuCtxFromGreenCtx(&gc, g)) == CUDA_SUCCESS)
        r = b->cu.cuCtxSetCurrent(gc);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuGreenCtxStreamCreate(&s->s, g, CU_STREAM_NON_BLOCKING, prio);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuEventCreate(&s->tail, CU_EVENT_DISABLE_TIMING);
    if (gc != b->ctx)
        b->cu.cuCtxSetCurrent(b->ctx);
    if (r != CUDA_SUCCESS && s->s != NULL) {
        b->cu.cuStreamDestroy(s->s);
        s->s = NULL;
    }
    s->blocking = blocking;
    s->prio = prio;
    return ds__cuda_err(r);
}

struct ds_bstream *ds__cuda_real(struct ds_backend *b, struct ds_bstream *s)
{
    return s ? s : &b->legacy;
}

int ds__cuda_record_tail(struct ds_backend *b, struct ds_bstream *s)
{
    CUresult r = CUDA_SUCCESS;

    if (s->tail_seq != s->seq) {
        r = b->cu.cuEventRecord(s->tail, s->s);
        s->tail_seq = s->seq;
    }
    return ds__cuda_err(r);
}

/* Before new work on s: the legacy default stream's ordering rules.  They do not reach
 * into a capture: a graph holds no implicit dependency on the legacy stream, and the
 * driver refuses a capturing stream's wait on an event recorded outside it. */
int ds__cuda_capturing(struct ds_backend *b, struct ds_bstream *s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

    if (s->capturing)
        return 1;
    if (b->captures == 0)
        return 0;
    return b->cu.cuStreamGetCaptureInfo(s->s, &st, NULL, NULL, NULL, NULL, NULL) !=
               CUDA_SUCCESS ||
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

int ds__cuda_order(struct ds_backend *b, struct ds_bstream *s)
{
    int rc = 0;

    if (s == &b->legacy) {
        for (struct ds_bstream *o = b->streams.next; o != &b->streams && rc == 0; o = o->next) {
            if (!o->blocking || o->legacy_given == o->seq || ds__cuda_capturing(b, o))
                continue;
            rc = ds__cuda_record_tail(b, o);
            if (rc == 0)
                rc = ds__cuda_err(b->cu.cuStreamWaitEvent(s->s, o->tail, 0));
            o->legacy_given = o->seq;
        }
    } else if (s->blocking && s->legacy_seen != b->legacy.seq && !ds__cuda_capturing(b, s)) {
        rc = ds__cuda_record_tail(b, &b->legacy);
        if (rc == 0)
            rc = ds__cuda_err(b->cu.cuStreamWaitEvent(s->s, b->legacy.tail, 0));
        s->legacy_seen = b->legacy.seq;
    }
    s->seq++;
    return rc;
}

CUresult ds__cuda_sm_groups(struct driver *cu, CUdevice dev, CUdevResource *sms,
                            struct ds_sm_groups *out)
{
    unsigned n = 0;
    CUresult r = cu->cuDeviceGetDevResource(dev, sms, CU_DEV_RESOURCE_TYPE_SM);

    if (r == CUDA_SUCCESS)
        r = cu->cuDevSmResourceSplitByCount(NULL, &n, sms, NULL, 0,
                                            sms->sm.minSmPartitionSize);
    if (r != CUDA_SUCCESS)
        return r;
    out->sms = sms->sm.smCount;
    out->size = sms->sm.minSmPartitionSize;
    out->count = n > 64 ? 64 : n;
    return CUDA_SUCCESS;
}
