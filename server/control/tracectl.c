#include "tracectl.h"

#include "admin_fields.h"
#include "control_int.h"
#include "ds_clock.h"
#include "ds_log.h"

#include <stdlib.h>
#include <string.h>

/* After its seconds, a trace stops taking new ops but waits this long for the ops it
 * took to complete and reach its rings. */
#define SETTLE_NS (200 * 1000000ull)

enum phase { FREE, RUNNING, SETTLING, DONE };

struct traced {
    uint64_t id;       /* the tenant's (slot id) */
    int slot;          /* -1 once it left */
    pid_t pid;
    uint64_t groups;   /* its SM groups when the trace took it */
    uint64_t held_since; /* its gate closed then (ds_now_ns), or 0 */
    uint64_t dropped;  /* its executor's trace_dropped when the trace took it */
};

struct event {
    uint64_t tenant;
    struct ds_shm_trace_ev ev;
};

struct trace {
    enum phase phase;
    char name[DS_NAME_MAX + 1];
    uint64_t start_ns, until_ns, done_ns;
    struct traced who[DS_SHM_SLOTS];
    int nwho;
    struct event *ev;
    size_t nev, cap;
    uint64_t dropped; /* here, past DS_TRACE_EVENTS, and by executors */
};

struct ds_traces {
    uv_timer_t timer;
    struct control *c;
    struct trace t[DS_TRACES];
};

static void pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);

    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_error(msgpack_packer *pk, const char *why)
{
    msgpack_pack_map(pk, 2);
    pack_str(pk, DS_ADMIN_KEY_OK);
    msgpack_pack_false(pk);
    pack_str(pk, DS_ADMIN_KEY_ERROR);
    pack_str(pk, why);
}

static void add(struct trace *tr, uint64_t tenant, const struct ds_shm_trace_ev *ev)
{
    struct event *grown;

    if (tr->nev == tr->cap) {
        size_t cap = tr->cap ? tr->cap * 2 : 1024;

        if (cap > DS_TRACE_EVENTS)
            cap = DS_TRACE_EVENTS;
        grown = tr->nev < cap ? realloc(tr->ev, cap * sizeof(*grown)) : NULL;
        if (grown == NULL) {
            tr->dropped++;
            return;
        }
        tr->ev = grown;
        tr->cap = cap;
    }
    tr->ev[tr->nev].tenant = tenant;
    tr->ev[tr->nev++].ev = *ev;
}

/* Move what slot w's ring holds into the trace.  An executor writes only whole entries,
 * but what it writes is checked as any input: a kind out of range is skipped, a name is
 * cut at its end. */
static void drain(struct control *c, struct trace *tr, struct traced *w)
{
    struct ds_shm_slot *s = &c->shm->slots[w->slot];
    uint64_t head = atomic_load_explicit(&s->trace_head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&s->trace_tail, memory_order_relaxed);

    if (head - tail > DS_SHM_TRACE)
        tail = head - DS_SHM_TRACE;
    for (; tail != head; tail++) {
        struct ds_shm_trace_ev ev = s->trace[tail % DS_SHM_TRACE];

        ev.name[DS_SHM_TRACE_NAME - 1] = '\0';
        if (ev.kind >= DS_TRACE_KERNEL && ev.kind < DS_TRACE_HOLD)
            add(tr, w->id, &ev);
    }
    atomic_store_explicit(&s->trace_tail, head, memory_order_release);
}

static void end_hold(struct trace *tr, struct traced *w, uint64_t now)
{
    struct ds_shm_trace_ev ev;

    if (w->held_since == 0)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.kind = DS_TRACE_HOLD;
    ev.start_ns = w->held_since;
    ev.end_ns = now;
    add(tr, w->id, &ev);
    w->held_since = 0;
}

/* Stop taking from slot w: the last of its ring, its executor's drops. */
static void let_go(struct control *c, struct trace *tr, struct traced *w, uint64_t now)
{
    struct ds_shm_slot *s = &c->shm->slots[w->slot];

    atomic_store(&s->trace_on, 0);
    drain(c, tr, w);
    tr->dropped += atomic_load(&s->trace_dropped) - w->dropped;
    end_hold(tr, w, now);
    w->slot = -1;
}

static int traced_slot(const struct trace *tr, int slot, uint64_t id)
{
    for (int i = 0; i < tr->nwho; i++)
        if (tr->who[i].slot == slot && tr->who[i].id == id)
            return i;
    return -1;
}

/* Trace the tenants called tr->name that it does not trace yet; returns how many it
 * traces now. */
static int adopt(struct control *c, struct trace *tr, uint64_t now)
{
    int n = 0;

    for (int i = 0; i < DS_SHM_SLOTS; i++) {
        struct ds_shm_slot *s = &c->shm->slots[i];
        struct traced *w;

        if (atomic_load(&s->state) == 0 || s->id == 0 || strcmp(s->tenant, tr->name) != 0)
            continue;
        n++;
        if (traced_slot(tr, i, s->id) >= 0 || tr->nwho == DS_SHM_SLOTS)
            continue;
        w = &tr->who[tr->nwho++];
        w->id = s->id;
        w->slot = i;
        w->pid = s->pid;
        w->groups = atomic_load(&s->bound_groups);
        w->held_since = atomic_load(&s->gate) ? now : 0;
        w->dropped = atomic_load(&s->trace_dropped);
        atomic_store(&s->trace_on, 1);
    }
    return n;
}

static void settle(struct control *c, struct trace *tr)
{
    for (int i = 0; i < tr->nwho; i++)
        if (tr->who[i].slot >= 0)
            atomic_store(&c->shm->slots[tr->who[i].slot].trace_on, 0);
    tr->phase = SETTLING;
}

static void finish(struct control *c, struct trace *tr, uint64_t now)
{
    for (int i = 0; i < tr->nwho; i++)
        if (tr->who[i].slot >= 0)
            let_go(c, tr, &tr->who[i], tr->until_ns < now ? tr->until_ns : now);
    tr->done_ns = now;
    tr->phase = DONE;
}

static void forget(struct trace *tr)
{
    free(tr->ev);
    memset(tr, 0, sizeof(*tr));
}

static void step(struct control *c, struct trace *tr, uint64_t now)
{
    if (tr->phase == RUNNING && now >= tr->until_ns)
        settle(c, tr);
    else if (tr->phase == RUNNING)
        adopt(c, tr, now);
    if (tr->phase == SETTLING && now >= tr->until_ns + SETTLE_NS)
        finish(c, tr, now);
    for (int i = 0; tr->phase != DONE && i < tr->nwho; i++)
        if (tr->who[i].slot >= 0)
            drain(c, tr, &tr->who[i]);
    if (tr->phase == DONE && now - tr->done_ns > DS_TRACE_KEEP_MS * 1000000ull) {
        ds_info("trace of %s: not fetched within %d s, dropped", tr->name,
                DS_TRACE_KEEP_MS / 1000);
        forget(tr);
    }
}

static void on_drain(uv_timer_t *h)
{
    struct ds_traces *ts = h->data;
    uint64_t now = ds_now_ns();
    int busy = 0;

    for (int i = 0; i < DS_TRACES; i++) {
        if (ts->t[i].phase != FREE)
            step(ts->c, &ts->t[i], now);
        busy |= ts->t[i].phase != FREE;
    }
    if (!busy)
        uv_timer_stop(h);
}

static struct trace *find(struct ds_traces *ts, const char *name)
{
    for (int i = 0; ts != NULL && i < DS_TRACES; i++)
        if (ts->t[i].phase != FREE && strcmp(ts->t[i].name, name) == 0)
            return &ts->t[i];
    return NULL;
}

static struct ds_traces *traces(struct control *c)
{
    if (c->traces == NULL && (c->traces = calloc(1, sizeof(*c->traces))) != NULL) {
        c->traces->c = c;
        uv_timer_init(c->loop, &c->traces->timer);
        c->traces->timer.data = c->traces;
    }
    return c->traces;
}

static void start(struct control *c, const char *name, unsigned seconds, msgpack_packer *pk)
{
    struct ds_traces *ts = traces(c);
    struct trace *tr = find(ts, name);
    uint64_t now = ds_now_ns();
    char why[DS_NAME_MAX + 128];
    int n;

    if (ts == NULL) {
        pack_error(pk, "out of memory");
        return;
    }
    if (tr != NULL && tr->phase != DONE) {
        snprintf(why, sizeof(why), "a trace of %s is running already (%.0f s left): one at "
                 "a time per tenant", name,
                 tr->until_ns > now ? (double)(tr->until_ns - now) / 1e9 : 0.0);
        pack_error(pk, why);
        return;
    }
    if (tr != NULL)
        forget(tr);
    for (tr = &ts->t[0]; tr < &ts->t[DS_TRACES] && tr->phase != FREE; tr++)
        ;
    if (tr == &ts->t[DS_TRACES]) {
        pack_error(pk, "too many traces at once");
        return;
    }
    snprintf(tr->name, sizeof(tr->name), "%s", name);
    tr->start_ns = now;
    tr->until_ns = now + (uint64_t)seconds * 1000000000ull;
    if ((n = adopt(c, tr, now)) == 0) {
        memset(tr, 0, sizeof(*tr));
        snprintf(why, sizeof(why), "no tenant called %s is connected", name);
        pack_error(pk, why);
        return;
    }
    tr->phase = RUNNING;
    if (!uv_is_active((uv_handle_t *)&ts->timer))
        uv_timer_start(&ts->timer, on_drain, DS_TRACE_DRAIN_MS, DS_TRACE_DRAIN_MS);
    ds_info("trace of %s: %d tenant(s), %u s", name, n, seconds);
    msgpack_pack_map(pk, 3);
    pack_str(pk, DS_ADMIN_KEY_OK);
    msgpack_pack_true(pk);
    pack_str(pk, DS_ADMIN_KEY_TENANTS);
    msgpack_pack_int(pk, n);
    pack_str(pk, DS_ADMIN_KEY_SECONDS);
    msgpack_pack_unsigned_int(pk, seconds);
}

static void pack_tenants(const struct trace *tr, msgpack_packer *pk)
{
    msgpack_pack_array(pk, (size_t)tr->nwho);
    for (int i = 0; i < tr->nwho; i++) {
        msgpack_pack_map(pk, 3);
        pack_str(pk, DS_ADMIN_KEY_ID);
        msgpack_pack_uint64(pk, tr->who[i].id);
        pack_str(pk, DS_ADMIN_KEY_PID);
        msgpack_pack_int(pk, tr->who[i].pid);
        pack_str(pk, DS_ADMIN_KEY_SM_GROUPS);
        msgpack_pack_uint64(pk, tr->who[i].groups);
    }
}

/* [tenant, kind, stream, start_ns, end_ns, bytes, groups, name] per event. */
static void pack_events(const struct trace *tr, msgpack_packer *pk)
{
    msgpack_pack_array(pk, tr->nev);
    for (size_t i = 0; i < tr->nev; i++) {
        const struct ds_shm_trace_ev *e = &tr->ev[i].ev;

        msgpack_pack_array(pk, 8);
        msgpack_pack_uint64(pk, tr->ev[i].tenant);
        msgpack_pack_uint32(pk, e->kind);
        msgpack_pack_uint64(pk, e->stream);
        msgpack_pack_uint64(pk, e->start_ns);
        msgpack_pack_uint64(pk, e->end_ns);
        msgpack_pack_uint64(pk, e->bytes);
        msgpack_pack_uint64(pk, e->groups);
        pack_str(pk, e->name);
    }
}

static void stop(struct control *c, const char *name, msgpack_packer *pk)
{
    struct trace *tr = find(c->traces, name);
    uint64_t now = ds_now_ns();
    char why[DS_NAME_MAX + 128];

    if (tr == NULL) {
        snprintf(why, sizeof(why), "no trace of %s: start one with detshare-ctl trace %s "
                 "--seconds N", name, name);
        pack_error(pk, why);
        return;
    }
    if (tr->phase != DONE) {
        if (tr->until_ns > now)
            tr->until_ns = now;
        finish(c, tr, now);
    }
    msgpack_pack_map(pk, 2);
    pack_str(pk, DS_ADMIN_KEY_OK);
    msgpack_pack_true(pk);
    pack_str(pk, DS_ADMIN_KEY_TRACE);
    msgpack_pack_map(pk, 8);
    pack_str(pk, DS_ADMIN_KEY_NAME);
    pack_str(pk, tr->name);
    pack_str(pk, DS_ADMIN_KEY_START_NS);
    msgpack_pack_uint64(pk, tr->start_ns);
    pack_str(pk, DS_ADMIN_KEY_END_NS);
    msgpack_pack_uint64(pk, tr->until_ns);
    pack_str(pk, DS_ADMIN_KEY_DROPPED);
    msgpack_pack_uint64(pk, tr->dropped);
    pack_str(pk, DS_ADMIN_KEY_CAPACITY);
    msgpack_pack_uint32(pk, DS_TRACE_EVENTS);
    pack_str(pk, DS_ADMIN_KEY_SM_GROUP_SIZE);
    msgpack_pack_int(pk, c->cfg->sm.size);
    pack_str(pk, DS_ADMIN_KEY_TENANTS);
    pack_tenants(tr, pk);
    pack_str(pk, DS_ADMIN_KEY_EVENTS);
    pack_events(tr, pk);
    ds_info("trace of %s: %zu events handed over, %llu dropped", tr->name, tr->nev,
            (unsigned long long)tr->dropped);
    forget(tr);
}

void ds__tracectl_admin(void *ctx, const char *name, int stop_it, unsigned seconds,
                     msgpack_packer *pk)
{
    if (stop_it)
        stop(ctx, name, pk);
    else
        start(ctx, name, seconds, pk);
}

/* The running trace that takes slot's tenant, and which of its tenants it is. */
static struct trace *tracing(struct control *c, int slot, struct traced **w)
{
    uint64_t id = c->shm->slots[slot].id;
    int i;

    for (int k = 0; c->traces != NULL && k < DS_TRACES; k++) {
        struct trace *tr = &c->traces->t[k];

        if (tr->phase != FREE && tr->phase != DONE && (i = traced_slot(tr, slot, id)) >= 0) {
            *w = &tr->who[i];
            return tr;
        }
    }
    return NULL;
}

void ds__tracectl_gate(struct control *c, int slot, int closed)
{
    struct traced *w;
    struct trace *tr = tracing(c, slot, &w);
    uint64_t now = ds_now_ns();

    if (tr == NULL || now > tr->until_ns)
        return;
    if (closed && w->held_since == 0)
        w->held_since = now;
    else if (!closed)
        end_hold(tr, w, now);
}

void ds__tracectl_left(struct control *c, int slot)
{
    struct traced *w;
    struct trace *tr = tracing(c, slot, &w);

    if (tr != NULL)
        let_go(c, tr, w, ds_now_ns());
}

static void free_traces(uv_handle_t *h)
{
    struct ds_traces *ts = h->data;

    for (int i = 0; i < DS_TRACES; i++)
        forget(&ts->t[i]);
    free(ts);
}

void ds__tracectl_close(struct control *c)
{
    if (c->traces == NULL)
        return;
    uv_close((uv_handle_t *)&c->traces->timer, free_traces);
    c->traces = NULL;
}
