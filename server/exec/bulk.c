#include "bulk.h"

#include "detshare.h"
#include "ds_clock.h"
#include "ds_error.h"
#include "ds_log.h"
#include "ds_rec.h"
#include "tenant.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)DS_CHUNK_MAX)
#define PAGE 4096u
/* How long a tenant's exit waits for copies still reading a slot before it leaves the
 * buffers to the process's end rather than free memory the device may read. */
#define FINI_WAIT_NS (200u * 1000 * 1000)

/* busy[i]: */
#define BUSY 1    /* until its event has completed */
#define RETIRED 2 /* for good: its event could not be recorded */
#define LENT 3    /* handed out, nothing queued from it yet */

static unsigned char *chunk(const struct ds_bulk *k, unsigned i)
{
    return k->mem + (size_t)i * CHUNK;
}

/* Make the buffers and the slots' events; 0 or DS_E*. */
static int make(struct ds_tenant *t, struct ds_bulk *k)
{
    size_t size = (DS_BULK_SLOTS + 1) * CHUNK;
    unsigned i;

    k->mem = aligned_alloc(PAGE, size);
    if (k->mem == NULL)
        return DS_ENOMEM;
    for (i = 0; i < DS_BULK_SLOTS; i++)
        if (t->ops->event_create(t->be, CU_EVENT_DISABLE_TIMING, &k->ev[i]) != 0)
            break;
    if (i < DS_BULK_SLOTS) {
        while (i-- > 0)
            t->ops->event_destroy(t->be, k->ev[i]);
        free(k->mem);
        k->mem = NULL;
        return DS_EDEVICE;
    }
    /* Unpinned buffers still save an allocation per chunk. */
    k->pinned = t->ops->host_map(t->be, k->mem, size, &k->addr) == 0;
    ds_debug("in-band copies go through %d %s chunks of %zu KiB", DS_BULK_SLOTS + 1,
             k->pinned ? "page-locked" : "pageable", CHUNK >> 10);
    return 0;
}

/* Make the buffers at the first chunk of n >= DS_REC_DIRECT bytes of a tenant without
 * an arena: a tenant that copies only a few bytes at a time (.item()) never pins any. */
static void want(struct ds_tenant *t, uint64_t n)
{
    struct ds_bulk *k = &t->bulk;

    if (k->state == 0 && n >= DS_REC_DIRECT && t->arena == NULL && t->be != NULL)
        k->state = make(t, k) == 0 ? 1 : -1;
}

char *ds__bulk_htod_slot(struct ds_tenant *t)
{
    struct ds_bulk *k = &t->bulk;

    if (k->state != 1)
        return NULL;
    for (unsigned n = 0; n < DS_BULK_SLOTS; n++) {
        unsigned i = (k->next + n) % DS_BULK_SLOTS;

        if (k->busy[i] == BUSY && t->ops->event_query(t->be, k->ev[i]) == 0)
            k->busy[i] = 0;
        if (!k->busy[i]) {
            k->next = (i + 1) % DS_BULK_SLOTS;
            k->busy[i] = LENT;
            return (char *)chunk(k, i);
        }
    }
    return NULL;
}

int ds__bulk_ready(struct ds_tenant *t, uint64_t n)
{
    want(t, n);
    return t->bulk.state == 1;
}

/* The slot p is, or DS_BULK_SLOTS when p is no slot. */
static unsigned slot_of(const struct ds_bulk *k, const void *p)
{
    for (unsigned i = 0; i < DS_BULK_SLOTS; i++)
        if (k->mem != NULL && p == chunk(k, i))
            return i;
    return DS_BULK_SLOTS;
}

int ds__bulk_htod_queued(struct ds_tenant *t, const void *p, uint64_t n, struct ds_bstream *s)
{
    struct ds_bulk *k = &t->bulk;
    unsigned i = slot_of(k, p);
    int rc;

    if (i == DS_BULK_SLOTS) {
        want(t, n);
        return 0;
    }
    rc = t->ops->event_record(t->be, k->ev[i], s);
    /* Without its event the slot is never known free: it is retired. */
    k->busy[i] = rc == 0 ? BUSY : RETIRED;
    return rc;
}

char *ds__bulk_dtoh_buf(struct ds_tenant *t, uint64_t n)
{
    want(t, n);
    return t->bulk.state == 1 ? (char *)chunk(&t->bulk, DS_BULK_SLOTS) : NULL;
}

int ds__bulk_owns(const struct ds_tenant *t, const void *p)
{
    const struct ds_bulk *k = &t->bulk;

    return k->mem != NULL && (slot_of(k, p) < DS_BULK_SLOTS || p == chunk(k, DS_BULK_SLOTS));
}

void ds__bulk_forget(struct ds_tenant *t, char **p)
{
    struct ds_bulk *k = &t->bulk;
    unsigned i = slot_of(k, *p);

    if (i < DS_BULK_SLOTS && k->busy[i] == LENT)
        k->busy[i] = 0;
    if (ds__bulk_owns(t, *p))
        *p = NULL;
}

/* 1 once no copy reads a slot any more, or after FINI_WAIT_NS. */
static int drained(struct ds_tenant *t, struct ds_bulk *k)
{
    uint64_t until = ds_now_ns() + FINI_WAIT_NS;

    for (unsigned i = 0; i < DS_BULK_SLOTS; i++) {
        if (k->busy[i] == RETIRED)
            return 0;
        while (k->busy[i] == BUSY && t->ops->event_query(t->be, k->ev[i]) == DS_ENOTREADY) {
            if (ds_now_ns() >= until)
                return 0;
        }
    }
    return 1;
}

void ds__bulk_fini(struct ds_tenant *t)
{
    struct ds_bulk *k = &t->bulk;

    if (k->mem == NULL)
        return;
    if (!drained(t, k)) {
        ds_warn("copies still read the in-band buffers at the tenant's exit: left to the "
                "executor's end");
        return;
    }
    if (k->pinned)
        t->ops->host_unmap(t->be, k->addr, k->mem);
    for (unsigned i = 0; i < DS_BULK_SLOTS; i++)
        t->ops->event_destroy(t->be, k->ev[i]);
    free(k->mem);
    memset(k, 0, sizeof(*k));
}
