#include "vaspace.h"

#include "ds_error.h"
#include "ds_log.h"
#include "ds_vamap.h"

#include <stdint.h>
#include <sys/mman.h>

/* A server may take at most this much of the tenant's address space: whatever it says,
 * the program keeps room for its own mappings. */
#define RESERVE_MAX (DS_VAMAP_USER_END / 2)

static int valid(const ds_va_range *r)
{
    return ds_vamap_user_range(r->base, r->size);
}

/* Reserve [base, base+size) where nothing is: 0, or -1 when some of it is taken (or the
 * kernel refused). */
static int reserve(uint64_t base, uint64_t size)
{
    void *p = ds_vamap_at(base, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                          -1, 0);

    return p == MAP_FAILED ? -1 : 0;
}

/* The walk over this process's mappings that reserves the free gaps of [at, end). */
struct around {
    uint64_t at, end;
    unsigned gaps, missed;
};

static void fill(struct around *a, uint64_t to)
{
    if (reserve(a->at, to - a->at) == 0)
        a->gaps++;
    else
        a->missed++;
}

static int gap_before(const struct ds_vamap_entry *e, void *arg)
{
    struct around *a = arg;
    uint64_t end = e->base + e->size;

    if (end <= a->at)
        return 0;
    if (e->base >= a->end)
        return 1;
    if (e->base > a->at)
        fill(a, e->base);
    a->at = end;
    return a->at >= a->end;
}

static void reserve_around(const ds_va_range *r)
{
    struct around a = { .at = r->base, .end = r->base + r->size };
    int rc = ds_vamap_each(0, gap_before, &a);

    if (rc < 0) {
        ds_debug("the executor's reserved range %#llx-%#llx is partly taken here, and this "
                 "process's mappings cannot be read (%s): not reserved",
                 (unsigned long long)r->base, (unsigned long long)(r->base + r->size),
                 ds_strerror(rc));
        return;
    }
    if (a.at < a.end)
        fill(&a, a.end);
    ds_debug("the executor's reserved range %#llx-%#llx is partly taken here: %u free "
             "pieces of it reserved, %u not",
             (unsigned long long)r->base, (unsigned long long)(r->base + r->size), a.gaps,
             a.missed);
}

void ds__vaspace_reserve(const ds_va_range *v, unsigned n)
{
    uint64_t total = 0;

    for (unsigned i = 0; i < n; i++) {
        const ds_va_range *r = &v[i];

        if (!valid(r) || r->size > RESERVE_MAX - total) {
            ds_debug("the executor's reserved range %#llx+%#llx skipped: %s",
                     (unsigned long long)r->base, (unsigned long long)r->size,
                     valid(r) ? "past the most a server may reserve here"
                              : "not whole pages of a user address space");
            continue;
        }
        total += r->size;
        if (reserve(r->base, r->size) != 0)
            reserve_around(r);
    }
}
