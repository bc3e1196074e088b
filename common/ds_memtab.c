#include "ds_memtab.h"

#include "ds_error.h"

#include <stdlib.h>
#include <string.h>

void ds_memtab_init(struct ds_memtab *t)
{
    memset(t, 0, sizeof(*t));
}

void ds_memtab_destroy(struct ds_memtab *t)
{
    free(t->v);
    memset(t, 0, sizeof(*t));
}

/* Index of the first entry whose base is greater than addr. */
static size_t upper_bound(const struct ds_memtab *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (t->v[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int ds_memtab_insert(struct ds_memtab *t, const struct ds_memtab_entry *e)
{
    size_t i;

    if (e->size == 0 || e->base + e->size < e->base)
        return DS_EINVAL;
    i = upper_bound(t, e->base);
    if (i > 0 && t->v[i - 1].base + t->v[i - 1].size > e->base)
        return DS_EINVAL;
    if (i < t->n && e->base + e->size > t->v[i].base)
        return DS_EINVAL;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct ds_memtab_entry *v = realloc(t->v, cap * sizeof(*v));

        if (v == NULL)
            return DS_ENOMEM;
        t->v = v;
        t->cap = cap;
    }
    memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
    t->v[i] = *e;
    t->n++;
    return 0;
}

int ds_memtab_remove(struct ds_memtab *t, uint64_t base, struct ds_memtab_entry *out)
{
    size_t i = upper_bound(t, base);

    if (i == 0 || t->v[i - 1].base != base)
        return DS_ERANGE;
    i--;
    if (out != NULL)
        *out = t->v[i];
    memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
    t->n--;
    return 0;
}

const struct ds_memtab_entry *ds_memtab_find(const struct ds_memtab *t, uint64_t addr,
                                             uint64_t len)
{
    size_t i = upper_bound(t, addr);
    const struct ds_memtab_entry *e;

    if (i == 0)
        return NULL;
    e = &t->v[i - 1];
    if (addr - e->base >= e->size)
        return NULL;
    /* Written so that no sum can overflow: both sides stay within the entry. */
    if (len > e->size - (addr - e->base))
        return NULL;
    return e;
}

const struct ds_memtab_entry *ds_memtab_overlap(const struct ds_memtab *t, uint64_t addr,
                                                uint64_t len)
{
    size_t i = upper_bound(t, addr);

    if (i > 0 && t->v[i - 1].base + t->v[i - 1].size > addr)
        return &t->v[i - 1];
    if (i < t->n && t->v[i].base - addr < len)
        return &t->v[i];
    return NULL;
}

int ds_memtab_first_fit(const struct ds_memtab *t, uint64_t lo, uint64_t hi, uint64_t size,
                        uint64_t align, uint64_t *addr)
{
    uint64_t cand = (lo + align - 1) & ~(align - 1);
    size_t i = upper_bound(t, lo);

    /* A range that starts below lo may still reach into [lo, hi). */
    if (i > 0)
        i--;
    for (; i < t->n && t->v[i].base < hi; i++) {
        const struct ds_memtab_entry *e = &t->v[i];

        if (e->base + e->size <= cand)
            continue;
        if (cand <= e->base && size <= e->base - cand)
            break;
        cand = (e->base + e->size + align - 1) & ~(align - 1);
    }
    if (cand < lo || cand > hi || size > hi - cand)
        return DS_ENOMEM;
    *addr = cand;
    return 0;
}

uint64_t ds_memtab_total(const struct ds_memtab *t)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < t->n; i++)
        sum += t->v[i].size;
    return sum;
}
