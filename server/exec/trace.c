#include "trace.h"

#include "ds_clock.h"
#include "ds_error.h"
#include "ds_log.h"
#include "tenant.h"

#include <cuda.h>
#include <string.h>

/* A reference older than this is replaced: a float's ms keep microseconds for seconds. */
#define REF_AGE_NS 1000000000ull
/* How soon pending ops are looked at again. */
#define POLL_NS 1000000ull

static struct ds_shm_slot *slot_of(struct ds_tenant *t)
{
    return &t->shm->slots[t->slot];
}

static struct ds_bevent *take_event(struct ds_tenant *t)
{
    struct ds_trace *tr = &t->trace;
    struct ds_bevent *e = NULL;

    if (tr->nspare > 0)
        return tr->spare[--tr->nspare];
    return t->ops->event_create(t->be, CU_EVENT_DEFAULT, &e) == 0 ? e : NULL;
}

static void give_event(struct ds_tenant *t, struct ds_bevent *e)
{
    struct ds_trace *tr = &t->trace;

    if (e == NULL)
        return;
    if (tr->nspare < sizeof(tr->spare) / sizeof(tr->spare[0]))
        tr->spare[tr->nspare++] = e;
    else
        t->ops->event_destroy(t->be, e);
}

/* A new reference in refs[i], recorded on the executor's own stream. */
static int new_ref(struct ds_tenant *t, int i)
{
    struct ds_trace_ref *r = &t->trace.refs[i];
    struct ds_bevent *e = take_event(t);

    if (e == NULL || t->ops->event_record(t->be, e, t->trace.stream) != 0) {
        give_event(t, e);
        return DS_ENOMEM;
    }
    give_event(t, r->e);
    r->e = e;
    r->host_ns = ds_now_ns();
    r->users = 0;
    return 0;
}

static int set_up(struct ds_tenant *t)
{
    struct ds_trace *tr = &t->trace;

    if (t->ops->stream_create(t->be, CU_STREAM_NON_BLOCKING, 0, &tr->stream) != 0) {
        tr->stream = NULL;
        return DS_ENOMEM;
    }
    tr->cur = 0;
    if (new_ref(t, 0) != 0) {
        t->ops->stream_destroy(t->be, tr->stream);
        tr->stream = NULL;
        return DS_ENOMEM;
    }
    tr->ready = 1;
    return 0;
}

/* The reference new ops use: a fresh one once the current is old and the other free. */
static int current_ref(struct ds_tenant *t)
{
    struct ds_trace *tr = &t->trace;
    int other = 1 - tr->cur;

    if (ds_now_ns() - tr->refs[tr->cur].host_ns > REF_AGE_NS && tr->refs[other].users == 0 &&
        new_ref(t, other) == 0)
        tr->cur = other;
    return tr->cur;
}

static void drop(struct ds_tenant *t)
{
    atomic_fetch_add_explicit(&slot_of(t)->trace_dropped, 1, memory_order_relaxed);
}

/* Put ev in the slot's ring for the control process, or count it dropped. */
static void publish(struct ds_tenant *t, const struct ds_shm_trace_ev *ev)
{
    struct ds_shm_slot *s = slot_of(t);
    uint64_t head = atomic_load_explicit(&s->trace_head, memory_order_relaxed);

    if (head - atomic_load_explicit(&s->trace_tail, memory_order_acquire) >= DS_SHM_TRACE) {
        drop(t);
        return;
    }
    s->trace[head % DS_SHM_TRACE] = *ev;
    atomic_store_explicit(&s->trace_head, head + 1, memory_order_release);
}

void ds__trace_begin(struct ds_tenant *t, uint64_t stream, struct ds_bstream *s,
                     struct ds_trace_mark *m)
{
    m->start = NULL;
    m->stream = stream;
    if (!atomic_load_explicit(&slot_of(t)->trace_on, memory_order_relaxed))
        return;
    if (ds__tenant_capturing(t, stream) || (!t->trace.ready && set_up(t) != 0))
        return;
    if (t->trace.nq == DS_TRACE_PENDING)
        ds__trace_poll(t);
    if (t->trace.nq == DS_TRACE_PENDING || (m->start = take_event(t)) == NULL) {
        drop(t);
        return;
    }
    if (t->ops->event_record(t->be, m->start, s) != 0) {
        give_event(t, m->start);
        m->start = NULL;
    }
}

/* The name, cut to fit with its end kept: a mangled name's end holds its arguments,
 * its start the namespaces, and either may tell kernels apart. */
static void copy_name(char *dst, const char *name)
{
    size_t n = name != NULL ? strlen(name) : 0;

    if (n < DS_SHM_TRACE_NAME) {
        memcpy(dst, name != NULL ? name : "", n + 1);
        return;
    }
    memcpy(dst, name, DS_SHM_TRACE_NAME / 2 - 2);
    memcpy(dst + DS_SHM_TRACE_NAME / 2 - 2, "..", 2);
    memcpy(dst + DS_SHM_TRACE_NAME / 2, name + n - (DS_SHM_TRACE_NAME / 2 - 1),
           DS_SHM_TRACE_NAME / 2);
}

void ds__trace_end(struct ds_tenant *t, struct ds_bstream *s, struct ds_trace_mark *m, int rc,
                   enum ds_trace_kind kind, const char *name, uint64_t bytes)
{
    struct ds_trace *tr = &t->trace;
    struct ds_trace_pending *p;
    struct ds_bevent *end;

    if (m->start == NULL)
        return;
    if (rc != 0 || (end = take_event(t)) == NULL || t->ops->event_record(t->be, end, s) != 0) {
        if (rc == 0)
            drop(t);
        give_event(t, m->start);
        return;
    }
    p = &tr->q[tr->nq++];
    memset(&p->ev, 0, sizeof(p->ev));
    p->start = m->start;
    p->end = end;
    p->ref = current_ref(t);
    tr->refs[p->ref].users++;
    p->ev.kind = kind;
    p->ev.stream = m->stream;
    p->ev.bytes = bytes;
    p->ev.groups = atomic_load_explicit(&slot_of(t)->bound_groups, memory_order_relaxed);
    copy_name(p->ev.name, name);
}

void ds__trace_move(struct ds_tenant *t, uint64_t groups)
{
    struct ds_shm_trace_ev ev;

    if (!atomic_load_explicit(&slot_of(t)->trace_on, memory_order_relaxed))
        return;
    memset(&ev, 0, sizeof(ev));
    ev.kind = DS_TRACE_MOVE;
    ev.start_ns = ev.end_ns = ds_now_ns();
    ev.groups = groups;
    publish(t, &ev);
}

/* ns from reference r to event e on the ds_now_ns clock: 0, DS_ENOTREADY while either
 * has not completed, or another DS_E*. */
static int since_ref(struct ds_tenant *t, const struct ds_trace_ref *r, struct ds_bevent *e,
                     uint64_t *out)
{
    float ms;
    int rc = t->ops->event_elapsed(t->be, r->e, e, &ms);

    if (rc == 0)
        *out = (uint64_t)((int64_t)r->host_ns + (int64_t)((double)ms * 1e6));
    return rc;
}

/* 1 when p's events completed and it went to the ring (or was dropped), else 0. */
static int settle(struct ds_tenant *t, struct ds_trace_pending *p)
{
    struct ds_trace_ref *r = &t->trace.refs[p->ref];
    int rc = t->ops->event_query(t->be, p->end);

    if (rc == 0 && (rc = since_ref(t, r, p->start, &p->ev.start_ns)) == 0)
        rc = since_ref(t, r, p->end, &p->ev.end_ns);
    if (rc == DS_ENOTREADY)
        return 0;
    if (rc == 0)
        publish(t, &p->ev);
    else
        drop(t);
    r->users--;
    give_event(t, p->start);
    give_event(t, p->end);
    return 1;
}

static void tear_down(struct ds_tenant *t)
{
    struct ds_trace *tr = &t->trace;

    for (unsigned i = 0; i < tr->nq; i++) {
        t->ops->event_destroy(t->be, tr->q[i].start);
        t->ops->event_destroy(t->be, tr->q[i].end);
    }
    tr->nq = 0;
    for (int i = 0; i < 2; i++)
        if (tr->refs[i].e != NULL)
            t->ops->event_destroy(t->be, tr->refs[i].e);
    while (tr->nspare > 0)
        t->ops->event_destroy(t->be, tr->spare[--tr->nspare]);
    if (tr->stream != NULL)
        t->ops->stream_destroy(t->be, tr->stream);
    memset(tr, 0, sizeof(*tr));
}

uint64_t ds__trace_poll(struct ds_tenant *t)
{
    struct ds_trace *tr = &t->trace;
    unsigned kept = 0;

    if (!tr->ready)
        return 0;
    for (unsigned i = 0; i < tr->nq; i++)
        if (!settle(t, &tr->q[i]))
            tr->q[kept++] = tr->q[i];
    tr->nq = kept;
    if (kept == 0 && !atomic_load_explicit(&slot_of(t)->trace_on, memory_order_relaxed))
        tear_down(t);
    return kept > 0 ? ds_now_ns() + POLL_NS : 0;
}

void ds__trace_fini(struct ds_tenant *t)
{
    if (t->trace.ready)
        tear_down(t);
}
