/*
 * cuMemHostRegister: the tenant's own pages, registered for the device.  For a local
 * tenant the pages move onto the host arena in place (their bytes copied to arena pages
 * that are then mapped over the same addresses), so the executor maps and registers the
 * very pages the program uses, at the program's own addresses where it can.  A remote
 * tenant's registration is accepted and changes nothing: its copies travel as any host
 * copy does.
 */
#ifndef DS_HOSTREG_H
#define DS_HOSTREG_H

#include "cuda_api.h"

#include <stddef.h>
#include <stdint.h>

/* 1 when [p, p+n) lies inside one registered range whose pages are on the arena, with
 * *on_arena the arena's address of p; 0 otherwise. */
int ds__hostreg_arena(const void *p, size_t n, void **on_arena);

/* 1 when p lies in a registered range, with *base and *size that range as the program
 * gave it; 0 otherwise. */
int ds__hostreg_range(uint64_t p, uint64_t *base, uint64_t *size);

/* 1 when p lies in a registered range: *dev its device address (0 when it has none) and
 * *rc (when rc != NULL) what cuMemHostGetDevicePointer answers.  0 otherwise. */
int ds__hostreg_device(const void *p, uint64_t *dev, CUresult *rc);

/* 1 when p lies in a registered range, with *flags its registration's flags. */
int ds__hostreg_flags(const void *p, unsigned *flags);

/* 1 when [p, p+n) lies inside one page-locked allocation on the arena shared with the
 * executor (transport/arena.h): pinned, managed, or a registered range, whose pages the
 * arena holds, with *offset its place in the arena: copies to or from it need not carry
 * the bytes.  0 otherwise. */
int ds__hostreg_arena_offset(const void *p, size_t n, uint64_t *offset);

/* fn answers whether p lies in memory cuMemHostAlloc made (with its flags): such memory
 * is registered already.  Set by the allocations (alloc.c) at their first, since they
 * lie above registrations and ask them of every pointer. */
typedef int (*ds_hostreg_pinned_fn)(const void *p, unsigned *flags);
void ds__hostreg_on_pinned(ds_hostreg_pinned_fn fn);

#endif
