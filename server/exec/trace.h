/*
 * The executor's half of detshare-ctl trace (docs/admin.md, "Tracing a tenant").  While
 * the control process has the tenant's trace_on set (shm.h), each kernel, copy, memset
 * and graph launch on the tenant's streams gets two backend events recorded around it,
 * and once both have completed, an entry in the slot's ring with device times.  Nothing
 * is recorded, and nothing is paid but one relaxed load per op, while it is off.
 *
 * Device times: an event's time is its elapsed time from a reference event, recorded on
 * a stream of the executor's own that has no other work, so that it completes at once,
 * plus the ds_now_ns time read when it was recorded.  On the GPU that is within the few
 * microseconds a record takes to reach the device; the sim's events carry its model's
 * times.  A new reference is taken every second, since elapsed times are floats in ms.
 */
#ifndef DS_EXEC_TRACE_H
#define DS_EXEC_TRACE_H

#include "backend.h"
#include "shm.h"

#include <stdint.h>

/* Ops traced whose events have not both completed yet, at most. */
#define DS_TRACE_PENDING 256

struct ds_trace_ref {
    struct ds_bevent *e;
    uint64_t host_ns; /* ds_now_ns when it was recorded */
    unsigned users;   /* pending ops timed against it */
};

struct ds_trace_pending {
    struct ds_bevent *start, *end;
    int ref;
    struct ds_shm_trace_ev ev;
};

struct ds_trace {
    int ready;                  /* the stream and a reference exist */
    struct ds_bstream *stream;  /* the executor's own, for references */
    struct ds_trace_ref refs[2];
    int cur;                    /* the reference new ops are timed against */
    struct ds_trace_pending q[DS_TRACE_PENDING];
    unsigned nq;
    struct ds_bevent *spare[2 * DS_TRACE_PENDING]; /* events to reuse */
    unsigned nspare;
};

/* What ds__trace_begin started for one op: start NULL when it is not traced. */
struct ds_trace_mark {
    struct ds_bevent *start;
    uint64_t stream;
};

struct ds_tenant;

/* Before an op is submitted to stream s (the tenant's handle `stream`): when a trace
 * runs, record its start event.  m->start stays NULL otherwise (also while s is being
 * captured, when the op does not run now). */
void ds__trace_begin(struct ds_tenant *t, uint64_t stream, struct ds_bstream *s,
                     struct ds_trace_mark *m);

/* After it was submitted (rc: what the submission returned; a failed op is not
 * traced): record its end and keep it until both events completed. */
void ds__trace_end(struct ds_tenant *t, struct ds_bstream *s, struct ds_trace_mark *m, int rc,
                   enum ds_trace_kind kind, const char *name, uint64_t bytes);

/* The tenant moved to SM groups `groups` now. */
void ds__trace_move(struct ds_tenant *t, uint64_t groups);

/* Publish the ops whose events have completed; once the trace is off and none is left,
 * free what it used.  Returns the ds_now_ns time to look again (0: nothing pending). */
uint64_t ds__trace_poll(struct ds_tenant *t);

/* Free everything, pending ops included (the tenant's end). */
void ds__trace_fini(struct ds_tenant *t);

#endif
