/*
 * The sim's stream memory operations, and the parked streams their waits make.
 *
 * The sim applies a piece of work's data effects when the work is submitted
 * (sim.c).  A wait on a word whose condition does not hold yet cannot be modelled that
 * way: what comes after it on its stream must not take effect before the word changes.
 * So the stream parks: its later work (copies, fills, kernels, memory operations, event
 * records and waits) is kept in order behind the wait, and runs, effects and modelled
 * time, once the wait holds.  A wait is looked at again whenever work of the tenant
 * takes effect (another stream's write releases it at once) and whenever a
 * synchronisation or query asks (the tenant's own host writes to mapped memory release
 * it within the executor's poll).  A record behind a parked stream leaves its event
 * pending, and a wait for a pending event parks its stream too.
 */
#include "sim_core.h"

#include "detshare.h"
#include "ds_error.h"

#include <stdlib.h>
#include <string.h>

#define WAIT_CMP_MASK 0x3u

static int is_wait(const struct sim_work *w)
{
    return w->kind == W_MEMOP && (w->memop.kind == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
                                  w->memop.kind == CU_STREAM_MEM_OP_WAIT_VALUE_64);
}

/* Whether a wait's word is memory of the tenant still (a graph may replay it later). */
static int word_valid(const struct ds_backend *b, const struct sim_work *w)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&b->mem, w->memop.addr, w->elem);

    return e != NULL && (e->owner != SIM_VMM_VA || ds__sim_vmm_mapped(b, w->memop.addr, w->elem));
}

/* cuStreamWaitValue's comparisons, on 32 or 64 bits as the operation says. */
static int holds(struct ds_backend *b, const struct sim_work *w)
{
    uint64_t v = 0, ref = w->memop.value;
    unsigned cmp = w->memop.flags & WAIT_CMP_MASK;

    memcpy(&v, ds__sim_host_of(b, w->memop.addr), w->elem);
    if (w->elem == 4) {
        uint32_t a = (uint32_t)v, r = (uint32_t)ref;

        return cmp == CU_STREAM_WAIT_VALUE_GEQ ? (int32_t)(a - r) >= 0
             : cmp == CU_STREAM_WAIT_VALUE_EQ  ? a == r
             : cmp == CU_STREAM_WAIT_VALUE_AND ? (a & r) != 0
             : ~(a | r) != 0;
    }
    return cmp == CU_STREAM_WAIT_VALUE_GEQ ? (int64_t)(v - ref) >= 0
         : cmp == CU_STREAM_WAIT_VALUE_EQ  ? v == ref
         : cmp == CU_STREAM_WAIT_VALUE_AND ? (v & ref) != 0
         : ~(v | ref) != 0;
}

/* Whether w cannot run yet.  A wait on memory that is gone runs, and faults. */
static int blocks(struct ds_backend *b, const struct sim_work *w)
{
    if (is_wait(w))
        return word_valid(b, w) && !holds(b, w);
    return w->kind == W_WAIT && w->event->pending > 0;
}

int ds__sim_park(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w)
{
    struct ds_bstream *st = ds__sim_stream(b, s);
    struct sim_work *copy;

    if (st->parked == NULL && !blocks(b, w))
        return 0;
    copy = malloc(sizeof(*copy));
    if (copy == NULL)
        return DS_ENOMEM;
    *copy = *w;
    copy->next = NULL;
    if (st->parked == NULL) {
        st->parked_tail = &st->parked;
        b->nparked++;
    }
    *st->parked_tail = copy;
    st->parked_tail = &copy->next;
    if (w->kind == W_RECORD)
        w->event->pending++;
    if (w->kind == W_RECORD || w->kind == W_WAIT)
        w->event->refs++;
    return 1;
}

static void pop(struct ds_backend *b, struct ds_bstream *st, struct sim_work *w)
{
    st->parked = w->next;
    if (st->parked == NULL)
        b->nparked--;
    w->next = NULL;
}

/* Run one piece of parked work of st; s is st as the backend's callers name it. */
static void run_parked(struct ds_backend *b, struct ds_bstream *s, struct sim_work *w)
{
    if (w->kind == W_RECORD) {
        w->event->pending--;
        ds__sim_record_now(b, w->event, s);
        ds__sim_event_release(w->event);
    } else if (w->kind == W_WAIT) {
        ds__sim_wait_now(b, s, w->event);
        ds__sim_event_release(w->event);
    } else if (ds__sim_work_now(b, s, w) != 0 && b->fault == 0) {
        /* Its memory went while it was parked: as a device's late access would. */
        ds__sim_own_fault(b);
    }
    ds__sim_free_work(w);
}

/* Run st's parked work up to a wait that still does not hold.  Returns 1 when any ran. */
static int drain(struct ds_backend *b, struct ds_bstream *st)
{
    struct ds_bstream *s = st == &b->legacy ? NULL : st;
    int ran = 0;

    while (st->parked != NULL && !blocks(b, st->parked)) {
        struct sim_work *w = st->parked;

        pop(b, st, w);
        run_parked(b, s, w);
        ran = 1;
    }
    return ran;
}

static void free_if_done(struct ds_bstream *s)
{
    if (!s->dead || s->parked != NULL || s->refs > 0)
        return;
    s->prev->next = s->next;
    s->next->prev = s->prev;
    free(s);
}

void ds__sim_unpark(struct ds_backend *b)
{
    int ran = 1;

    /* Parked work that runs may land here again: the loop below goes on for it. */
    if (b->nparked == 0 || b->unparking)
        return;
    b->unparking = 1;
    while (ran && b->nparked > 0) {
        ran = drain(b, &b->legacy);
        for (struct ds_bstream *s = b->streams.next, *next; s != &b->streams; s = next) {
            next = s->next;
            ran |= drain(b, s);
            free_if_done(s);
        }
    }
    b->unparking = 0;
}

int ds__sim_blocked(struct ds_backend *b, const struct ds_fence_at *at)
{
    if (at->kind == DS_FENCE_STREAM)
        return ds__sim_stream(b, at->stream)->parked != NULL;
    if (at->kind == DS_FENCE_EVENT)
        return at->event->pending > 0;
    return b->nparked > 0;
}

void ds__sim_stream_release(struct ds_backend *b, struct ds_bstream *s)
{
    (void)b;
    s->refs--;
    free_if_done(s);
}

void ds__sim_event_release(struct ds_bevent *e)
{
    if (--e->refs > 0 || !e->dead)
        return;
    ds__sim_ipc_event_fini(e);
    free(e);
}

void ds__sim_drop_parked(struct ds_backend *b, struct ds_bstream *s)
{
    while (s->parked != NULL) {
        struct sim_work *w = s->parked;

        pop(b, s, w);
        if (w->kind == W_RECORD)
            w->event->pending--;
        if (w->kind == W_RECORD || w->kind == W_WAIT)
            ds__sim_event_release(w->event);
        ds__sim_free_work(w);
    }
}

static struct sim_work memop_item(const struct ds_memop_desc *op)
{
    struct sim_work w = { .kind = W_MEMOP, .memop = *op };

    if (op->kind == CU_STREAM_MEM_OP_WAIT_VALUE_32 || op->kind == CU_STREAM_MEM_OP_WRITE_VALUE_32)
        w.elem = 4;
    else if (op->kind == CU_STREAM_MEM_OP_WAIT_VALUE_64 ||
             op->kind == CU_STREAM_MEM_OP_WRITE_VALUE_64)
        w.elem = 8;
    return w;
}

int ds__sim_memops(struct ds_backend *b, struct ds_bstream *s, const struct ds_memop_desc *ops,
                   unsigned n)
{
    int rc = 0;

    for (unsigned i = 0; i < n && rc == 0; i++) {
        struct sim_work w = memop_item(&ops[i]);

        rc = ds__sim_work_run(b, s, &w);
    }
    return rc;
}

/* A graph runs the node's items as the stream operations run: a wait that does not hold
 * parks the launching stream behind it. */
int ds__sim_memop_list(const struct ds_memop_desc *ops, unsigned n, struct sim_work **out)
{
    struct sim_work **tail = out;

    *out = NULL;
    for (unsigned i = 0; i < n; i++) {
        if ((*tail = malloc(sizeof(**tail))) == NULL) {
            ds__sim_free_work(*out);
            *out = NULL;
            return DS_ENOMEM;
        }
        **tail = memop_item(&ops[i]);
        tail = &(*tail)->next;
    }
    return 0;
}

/* An H100's answers on Linux (docs/sim-device.md): no LUID (a Windows notion), 2^28
 * elements of a 1-D linear texture, and no native atomics with the host over PCIe. */
int ds__sim_dev_query(struct ds_backend *b, const struct ds_devq *q, uint64_t *values)
{
    (void)b;
    switch (q->kind) {
    case DS_DEVQ_TEX1D_LINEAR_WIDTH:
        values[0] = 1ull << 28;
        return 0;
    case DS_DEVQ_HOST_ATOMIC_CAPS:
        memset(values, 0, q->n * sizeof(*values));
        return 0;
    default:
        return DS_ENOTSUP;
    }
}
