/*
 * A set of disjoint address ranges [base, base+size) with an owner tag each, kept
 * sorted so that "which allocation holds this address" is a binary search.  The
 * executor uses one per tenant to check every pointer and range a tenant sends; the
 * sim device uses one to find the host memory behind a device address; the client
 * uses one to tell device from host pointers in cuMemcpy.
 */
#ifndef DS_MEMTAB_H
#define DS_MEMTAB_H

#include <stddef.h>
#include <stdint.h>

struct ds_memtab_entry {
    uint64_t base;
    uint64_t size;
    uint64_t owner; /* caller's tag, e.g. the context that allocated it */
    void *data;     /* caller's payload, e.g. the sim device's host buffer */
    unsigned kind;  /* caller's type of range, e.g. the executor's enum ds_range_kind */
};

struct ds_memtab {
    struct ds_memtab_entry *v;
    size_t n, cap;
};

void ds_memtab_init(struct ds_memtab *t);

/* Free the table itself (not the payloads). */
void ds_memtab_destroy(struct ds_memtab *t);

/* Add a range.  Returns 0, DS_EINVAL for size 0, overflow or overlap, DS_ENOMEM. */
int ds_memtab_insert(struct ds_memtab *t, const struct ds_memtab_entry *e);

/* Remove the range that starts exactly at `base`, copying it to *out when out != NULL.
 * Returns 0 or DS_ERANGE when no range starts there. */
int ds_memtab_remove(struct ds_memtab *t, uint64_t base, struct ds_memtab_entry *out);

/* The range holding all of [addr, addr+len), or NULL.  len 0 asks for the range
 * holding addr. */
const struct ds_memtab_entry *ds_memtab_find(const struct ds_memtab *t, uint64_t addr,
                                             uint64_t len);

/* Some range that overlaps [addr, addr+len), len > 0, or NULL. */
const struct ds_memtab_entry *ds_memtab_overlap(const struct ds_memtab *t, uint64_t addr,
                                                uint64_t len);

/* The lowest address in [lo, hi), a multiple of align (a power of two), where size bytes
 * overlap no range.  Returns 0 with *addr, or DS_ENOMEM when there is no such gap. */
int ds_memtab_first_fit(const struct ds_memtab *t, uint64_t lo, uint64_t hi, uint64_t size,
                        uint64_t align, uint64_t *addr);

/* Bytes held in all ranges. */
uint64_t ds_memtab_total(const struct ds_memtab *t);

#endif
