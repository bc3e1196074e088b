/*
 * The sim device's work: a piece of work (struct sim_work) checked, applied to the
 * bytes and given its modelled time on a stream, or recorded instead while the stream
 * is captured.
 *
 * Parked streams.  The sim applies a piece of work's data effects when the work is
 * submitted.  A wait on a word whose condition does not hold yet cannot be modelled that
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

static void fill_row(unsigned char *p, uint32_t value, unsigned elem, uint64_t count)
{
    if (elem == 1) {
        memset(p, (int)(value & 0xff), count);
        return;
    }
    for (uint64_t i = 0; i < count; i++) {
        if (elem == 2) {
            uint16_t v = (uint16_t)value;

            memcpy(p + i * 2, &v, 2);
        } else {
            memcpy(p + i * 4, &value, 4);
        }
    }
}

/* [addr, addr+n) lies in one allocation, or in one VMM reservation and mapped throughout
 * (an unmapped part of a reservation is PROT_NONE host memory). */
static int allocated(const struct ds_backend *b, uint64_t addr, uint64_t n)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&b->mem, addr, n);

    return e != NULL && (e->owner != SIM_VMM_VA || ds__sim_vmm_mapped(b, addr, n));
}

/* Bytes from the first to the last byte of one side of a box (dst: 1): the executor
 * checked it does not overflow. */
static uint64_t box_extent(const struct ds_copy3d *c, int dst)
{
    uint64_t pitch = dst ? c->dst_pitch : c->src_pitch, rows = dst ? c->dst_rows : c->src_rows;

    return ((c->depth - 1) * rows + (c->height - 1)) * pitch + c->width;
}

/* Every row of a box, in order: rows of a side may overlap the other side's, which CUDA
 * leaves undefined, so memmove keeps each row whole at least. */
static void box_apply(struct ds_backend *b, const struct ds_copy3d *c)
{
    unsigned char *dst = ds__sim_host_of(b, c->dst);
    const unsigned char *src = ds__sim_host_of(b, c->src);

    for (uint64_t z = 0; z < c->depth; z++)
        for (uint64_t y = 0; y < c->height; y++)
            memmove(dst + (z * c->dst_rows + y) * c->dst_pitch,
                    src + (z * c->src_rows + y) * c->src_pitch, c->width);
}

/* Whether the memory a piece of work touches is still allocated.  Always so when it is
 * submitted (the executor checked); a graph replayed after a free or an unmap finds out
 * here. */
static int work_valid(const struct ds_backend *b, const struct sim_work *w)
{
    if (w->kind == W_COPY)
        return allocated(b, w->dst, w->n) && allocated(b, w->src, w->n);
    if (w->kind == W_FILL)
        return allocated(b, w->dst, w->pitch * (w->height - 1) + w->width * w->elem);
    if (w->kind == W_BOX)
        return allocated(b, w->box.dst, box_extent(&w->box, 1)) &&
               allocated(b, w->box.src, box_extent(&w->box, 0));
    if (w->kind == W_HTOD || w->kind == W_DTOH)
        return allocated(b, w->dst, w->n);
    if (w->kind == W_MEMOP && w->memop.addr != 0)
        return allocated(b, w->memop.addr, w->elem);
    return 1;
}

/* Apply w's data effects now; returns its modelled duration. */
static uint64_t work_apply(struct ds_backend *b, const struct sim_work *w)
{
    uint64_t t0 = ds_now_ns();

    if (w->kind == W_COPY) {
        memmove(ds__sim_host_of(b, w->dst), ds__sim_host_of(b, w->src), w->n);
        stall_from(b, t0);
        return cost(2 * w->n, SIM_HBM_BYTES_PER_US);
    }
    if (w->kind == W_FILL) {
        unsigned char *p = ds__sim_host_of(b, w->dst);

        for (uint64_t row = 0; row < w->height; row++)
            fill_row(p + row * w->pitch, w->value, w->elem, w->width);
        stall_from(b, t0);
        return cost(w->width * w->elem * w->height, SIM_HBM_BYTES_PER_US);
    }
    if (w->kind == W_BOX) {
        box_apply(b, &w->box);
        stall_from(b, t0);
        return cost(2 * w->box.width * w->box.height * w->box.depth, SIM_HBM_BYTES_PER_US);
    }
    if (w->kind == W_HTOD || w->kind == W_DTOH) {
        if (w->kind == W_HTOD)
            memcpy(ds__sim_host_of(b, w->dst), w->host, w->n);
        else
            memcpy(w->host, ds__sim_host_of(b, w->dst), w->n);
        stall_from(b, t0);
        return cost(w->n, SIM_PCIE_BYTES_PER_US);
    }
    if (w->kind == W_MEMOP) {
        /* A write lands now; a wait that runs holds already (below). */
        if (w->memop.kind == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
            w->memop.kind == CU_STREAM_MEM_OP_WRITE_VALUE_64)
            memcpy(ds__sim_host_of(b, w->memop.addr), &w->memop.value, w->elem);
        return SIM_OP_NS;
    }
    return w->kernel_ns;
}

/* Run w on s, or record it when s is being captured. */
int ds__sim_work_run(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w)
{
    struct sim_work *copy;
    int rc;

    /* A graph's event nodes run in the graph's place in its stream; a capturing stream
     * refuses them, as it refuses events. */
    if (w->kind == W_RECORD)
        return ds__sim_event_record(b, w->event, s);
    if (w->kind == W_WAIT)
        return ds__sim_stream_wait_event(b, s, w->event);

    if (s != NULL && s->capturing) {
        copy = malloc(sizeof(*copy));
        if (copy == NULL)
            return DS_ENOMEM;
        *copy = *w;
        copy->next = NULL;
        *s->captured_tail = copy;
        s->captured_tail = &copy->next;
        return 0;
    }
    rc = ds__sim_park(b, s, w);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    return ds__sim_work_now(b, s, w);
}

int ds__sim_work_now(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w)
{
    if (!work_valid(b, w))
        return DS_ECU(CUDA_ERROR_ILLEGAL_ADDRESS);
    ds__sim_submit(b, s, work_apply(b, w));
    /* What it wrote may be what a parked stream waits for. */
    if (b->nparked > 0)
        ds__sim_unpark(b);
    return 0;
}

/* A wait for a record still behind a parked stream parks this stream too. */
int ds__sim_stream_wait_event(struct ds_backend *b, struct ds_bstream *s,
                              struct ds_bevent *e)
{
    struct sim_work w = { .kind = W_WAIT, .event = e };
    int rc;

    if (s != NULL && s->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    rc = ds__sim_park(b, s, &w);
    if (rc == 0)
        ds__sim_wait_now(b, s, e);
    return rc < 0 ? rc : 0;
}

int ds__sim_event_record(struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s)
{
    struct sim_work w = { .kind = W_RECORD, .event = e };
    int rc;

    if (s != NULL && s->capturing)
        return DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    rc = ds__sim_park(b, s, &w);
    if (rc == 0)
        ds__sim_record_now(b, e, s);
    return rc < 0 ? rc : 0;
}

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

int ds__sim_event_pending(const struct ds_bevent *e)
{
    if (e->shared != NULL)
        return atomic_load(&e->shared[SIM_EV_PENDING]) > 0;
    return e->pending > 0;
}

/* One record more (delta 1) or less (-1) of e behind a parked stream. */
static void pend(struct ds_bevent *e, int delta)
{
    e->pending += (unsigned)delta;
    if (e->shared != NULL)
        atomic_fetch_add(&e->shared[SIM_EV_PENDING], (uint_fast64_t)(int_fast64_t)delta);
}

/* Whether w cannot run yet.  A wait on memory that is gone runs, and faults. */
static int blocks(struct ds_backend *b, const struct sim_work *w)
{
    if (is_wait(w))
        return word_valid(b, w) && !holds(b, w);
    return w->kind == W_WAIT && ds__sim_event_pending(w->event);
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
        pend(w->event, 1);
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
        pend(w->event, -1);
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
    DS_RING_UNLINK(s);
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
        return ds__sim_event_pending(at->event);
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
            pend(w->event, -1);
        if (w->kind == W_RECORD || w->kind == W_WAIT)
            ds__sim_event_release(w->event);
        ds__sim_free_work(w);
    }
}
