/*
 * The sim's fences: what the executor waits on for a synchronisation (backend.h).  A
 * fence is the modelled time at which the work it stands behind ends, or, behind work
 * parked on a host-written word, a poll until that work is unparked.
 */
#include "sim_core.h"

#include "ds_clock.h"
#include "ds_error.h"

#include <stdlib.h>

/* A fence behind parked work has no time yet: it polls (polling != 0), holding
 * references on the stream or event it stands at, until the work is unparked. */
struct ds_bfence {
    uint64_t at_ns;
    int polling;
    struct ds_fence_at at;
};

/* How often a fence behind parked work looks again: the tenant's own host writes to
 * mapped memory release a wait, and nothing tells the sim of them. */
#define SIM_PARKED_POLL_NS 100000ull

static void fence_unref(struct ds_backend *b, struct ds_bfence *f)
{
    if (!f->polling)
        return;
    f->polling = 0;
    if (f->at.stream != NULL)
        ds__sim_stream_release(b, f->at.stream);
    if (f->at.event != NULL)
        ds__sim_event_release(f->at.event);
}

static uint64_t fence_time(struct ds_backend *b, const struct ds_fence_at *at)
{
    uint64_t t = b->legacy.ready_ns;

    if (at->kind == DS_FENCE_STREAM)
        return ds__sim_stream(b, at->stream)->ready_ns;
    if (at->kind == DS_FENCE_EVENT)
        return ds__sim_event_at(b, at->event, &t) ? t : 0;
    for (struct ds_bstream *s = b->streams.next; s != &b->streams; s = s->next)
        t = s->ready_ns > t ? s->ready_ns : t;
    return t;
}

int ds__sim_fence_create(struct ds_backend *b, const struct ds_fence_at *at,
                         struct ds_bfence **out)
{
    uint64_t t;

    *out = NULL;
    /* A failed context fails every synchronisation, pending work or not (ds__sim_fault). */
    if (ds__sim_fault_now(b) != 0)
        return DS_ECU(b->fault);
    if (at->kind == DS_FENCE_STREAM && at->stream != NULL && at->stream->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ds__sim_unpark(b);
    if (ds__sim_blocked(b, at)) {
        *out = calloc(1, sizeof(**out));
        if (*out == NULL)
            return DS_ENOMEM;
        (*out)->polling = 1;
        (*out)->at = *at;
        if (at->kind == DS_FENCE_STREAM && at->stream != NULL)
            at->stream->refs++;
        else
            (*out)->at.stream = NULL;
        if (at->kind == DS_FENCE_EVENT)
            at->event->refs++;
        else
            (*out)->at.event = NULL;
        return 0;
    }
    t = fence_time(b, at);
    if (t <= ds__sim_now(b))
        return 0;
    *out = calloc(1, sizeof(**out));
    if (*out == NULL)
        return DS_ENOMEM;
    (*out)->at_ns = t;
    return 0;
}

int ds__sim_fence_query(struct ds_backend *b, struct ds_bfence *f)
{
    if (ds__sim_fault_now(b) != 0)
        return DS_ECU(b->fault);
    if (f->polling) {
        ds__sim_unpark(b);
        if (ds__sim_blocked(b, &f->at))
            return DS_ENOTREADY;
        f->at_ns = fence_time(b, &f->at);
        fence_unref(b, f);
    }
    return f->at_ns <= ds__sim_now(b) ? 0 : DS_ENOTREADY;
}

/* The device's clock is the host's less the stalls so far: the end in host time. */
int ds__sim_fence_arm(struct ds_backend *b, struct ds_bfence *f, int efd, uint64_t *wake_ns)
{
    (void)efd;
    *wake_ns = f->polling ? ds_now_ns() + SIM_PARKED_POLL_NS : f->at_ns + b->stalled_ns;
    return 0;
}

void ds__sim_fence_destroy(struct ds_backend *b, struct ds_bfence *f)
{
    fence_unref(b, f);
    free(f);
}
