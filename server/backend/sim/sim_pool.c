/*
 * Memory pools on the sim: the stream-ordered allocator's observable behaviour, modelled.
 *
 * A pool hands out blocks of sim device memory (ds__sim_dev_alloc, so they count in the
 * device's memory like any allocation) and keeps the ones given back, to reuse.  The
 * sim applies data effects when work is submitted, so a block is usable by later work on
 * its stream at once; what the model keeps is time.  A freed block is done with at the
 * device time when the work submitted before the free ends on that stream.  It is reused
 * by an allocation of the same rounded size on the same stream at once, on another stream
 * once the free is done (REUSE_ALLOW_OPPORTUNISTIC), or before that by making the
 * allocating stream wait for it (REUSE_ALLOW_INTERNAL_DEPENDENCIES), as the driver does.
 *
 * The driver gives memory back above the release threshold at the next synchronisation;
 * the sim does it at the pool's next call (an allocation, a free, an attribute, a trim),
 * for blocks whose free is done.
 */
#include "sim_core.h"

#include "ds_clock.h"
#include "ds_error.h"

#include <stdlib.h>

#define POOL_ALIGN 512ull /* what the driver aligns a pool allocation to */

struct ds_bpool {
    uint64_t max_size; /* 0: the device's */
    int follow, opportunistic, internal; /* CU_MEMPOOL_ATTR_REUSE_*, as set */
    uint64_t threshold;
    uint64_t reserved, reserved_high, used, used_high;
    struct ds_memtab live;   /* blocks handed out */
    struct ds_memtab cached; /* blocks given back: owner = device time the free is done,
                              * data = the stream it was given back on */
};

static uint64_t device_now(const struct ds_backend *b)
{
    return ds_now_ns() - b->stalled_ns;
}

static struct ds_bpool *pool_new(uint64_t max_size)
{
    struct ds_bpool *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return NULL;
    p->max_size = max_size;
    p->follow = p->opportunistic = p->internal = 1;
    ds_memtab_init(&p->live);
    ds_memtab_init(&p->cached);
    return p;
}

int ds__sim_pool_default(struct ds_backend *b, struct ds_bpool **out)
{
    (void)b;
    *out = pool_new(0);
    return *out == NULL ? DS_ENOMEM : 0;
}

int ds__sim_pool_create(struct ds_backend *b, uint64_t max_size, unsigned usage,
                        struct ds_bpool **out)
{
    (void)b;
    (void)usage; /* decompression buffers are plain memory to the sim */
    *out = pool_new(max_size);
    return *out == NULL ? DS_ENOMEM : 0;
}

/* Cached block i goes back to the device. */
static void release(struct ds_backend *b, struct ds_bpool *p, size_t i)
{
    struct ds_memtab_entry e = p->cached.v[i];

    ds_memtab_remove(&p->cached, e.base, NULL);
    ds__sim_dev_free(b, e.base);
    p->reserved -= e.size;
}

/* Give back blocks whose free is done (all of them when every is set) while the pool
 * keeps more than keep bytes. */
static void shrink(struct ds_backend *b, struct ds_bpool *p, uint64_t keep, int every)
{
    uint64_t now = device_now(b);
    size_t i = 0;

    while (p->reserved > keep && i < p->cached.n) {
        if (every || p->cached.v[i].owner <= now)
            release(b, p, i);
        else
            i++;
    }
}

void ds__sim_pool_destroy(struct ds_backend *b, struct ds_bpool *p)
{
    shrink(b, p, 0, 1);
    ds_memtab_destroy(&p->live);
    ds_memtab_destroy(&p->cached);
    free(p);
}

static uint64_t round_up(uint64_t size)
{
    return (size + POOL_ALIGN - 1) & ~(POOL_ALIGN - 1);
}

static void note_use(struct ds_bpool *p, uint64_t size)
{
    p->used += size;
    if (p->used > p->used_high)
        p->used_high = p->used;
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
}

/*
 * A cached block of `size` that work on stream s may use now, moved to the live blocks:
 * returns 1 with *addr, 0 when there is none, or DS_ENOMEM.  s is made to wait for the
 * block's free when that is the rule that allows it.  A stream
 * destroyed and another made at its address count as one: only modelled time differs.
 */
static int reuse(struct ds_backend *b, struct ds_bpool *p, uint64_t size,
                 struct ds_bstream *s, uint64_t *addr)
{
    uint64_t now = device_now(b);

    for (size_t i = 0; i < p->cached.n; i++) {
        struct ds_memtab_entry e = p->cached.v[i];
        int same = e.data == s, done = e.owner <= now && p->opportunistic;

        if (e.size != size || !(same || done || p->internal))
            continue;
        if (!same && !done && e.owner > s->ready_ns)
            s->ready_ns = e.owner;
        ds_memtab_remove(&p->cached, e.base, NULL);
        e.owner = 0;
        e.data = NULL;
        if (ds_memtab_insert(&p->live, &e) != 0) {
            ds__sim_dev_free(b, e.base);
            p->reserved -= e.size;
            return DS_ENOMEM;
        }
        *addr = e.base;
        return 1;
    }
    return 0;
}

static int grow(struct ds_backend *b, struct ds_bpool *p, uint64_t size, uint64_t *addr)
{
    struct ds_memtab_entry e = { .size = size };
    int rc;

    if (p->max_size != 0 && (size > p->max_size || p->reserved > p->max_size - size))
        return DS_ENOMEM;
    rc = ds__sim_dev_alloc(b, size, CU_STREAM_CAPTURE_MODE_RELAXED, &e.base);
    if (rc == DS_ENOMEM) {
        shrink(b, p, 0, 0);
        rc = ds__sim_dev_alloc(b, size, CU_STREAM_CAPTURE_MODE_RELAXED, &e.base);
    }
    if (rc != 0)
        return rc;
    if ((rc = ds_memtab_insert(&p->live, &e)) != 0) {
        ds__sim_dev_free(b, e.base);
        return rc;
    }
    p->reserved += size;
    *addr = e.base;
    return 0;
}

int ds__sim_pool_alloc(struct ds_backend *b, struct ds_bpool *p, uint64_t size,
                       struct ds_bstream *s, uint64_t *addr)
{
    uint64_t n = round_up(size);
    int rc;

    s = s ? s : &b->legacy;
    shrink(b, p, p->threshold, 0);
    rc = reuse(b, p, n, s, addr);
    if (rc == 0)
        rc = grow(b, p, n, addr);
    else if (rc == 1)
        rc = 0;
    if (rc == 0)
        note_use(p, n);
    return rc;
}

int ds__sim_pool_free(struct ds_backend *b, struct ds_bpool *p, uint64_t addr,
                      struct ds_bstream *s)
{
    struct ds_memtab_entry e;
    int rc;

    if (ds_memtab_remove(&p->live, addr, &e) != 0)
        return DS_EINVAL;
    s = s ? s : &b->legacy;
    p->used -= e.size;
    e.owner = ds__sim_submit(b, s, 0);
    e.data = s;
    if ((rc = ds_memtab_insert(&p->cached, &e)) != 0) {
        ds__sim_dev_free(b, e.base);
        p->reserved -= e.size;
        return rc;
    }
    shrink(b, p, p->threshold, 0);
    return 0;
}

/* The high watermarks can only be reset, which brings them down to the current value. */
static void set_attr(struct ds_bpool *p, int attr, uint64_t v)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        p->follow = (int)v;
        break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        p->opportunistic = (int)v;
        break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        p->internal = (int)v;
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->threshold = v;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        p->reserved_high = p->reserved;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        p->used_high = p->used;
        break;
    }
}

static uint64_t get_attr(const struct ds_bpool *p, int attr)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        return (uint64_t)p->follow;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        return (uint64_t)p->opportunistic;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        return (uint64_t)p->internal;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        return p->threshold;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        return p->reserved;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        return p->reserved_high;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        return p->used;
    default: /* CU_MEMPOOL_ATTR_USED_MEM_HIGH */
        return p->used_high;
    }
}

int ds__sim_pool_attr(struct ds_backend *b, struct ds_bpool *p, int attr, int set,
                      uint64_t *value)
{
    if (set)
        set_attr(p, attr, *value);
    shrink(b, p, p->threshold, 0);
    *value = get_attr(p, attr);
    return 0;
}

int ds__sim_pool_trim(struct ds_backend *b, struct ds_bpool *p, uint64_t keep)
{
    shrink(b, p, keep, 0);
    return 0;
}
