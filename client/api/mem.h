/*
 * Which addresses are this tenant's device memory, as far as the client has seen.
 * Used only to tell device from host pointers in cuMemcpy/cuMemcpyAsync; the executor
 * remains the authority and checks every address itself.
 */
#ifndef DS_MEM_H
#define DS_MEM_H

#include <stddef.h>
#include <stdint.h>

/* 1 when p lies in device memory this client allocated and has not freed. */
int ds__mem_is_device(uint64_t p);

/* 1 when p lies in device memory this client allocated and [p, p+n) runs past the end
 * of that range: a copy the executor would refuse, refused before any of it is sent. */
int ds__mem_runs_past(uint64_t p, uint64_t n);

/* Note [base, base+size) as device memory (an allocation, a module's global, a VMM
 * mapping). */
void ds__mem_remember(uint64_t base, uint64_t size);

/* The same for an allocation of memory pool `pool` (its handle), which pointer
 * attributes name. */
void ds__mem_remember_pool(uint64_t base, uint64_t size, uint64_t pool);

/* Forget the device range that starts at base, if any (an allocation freed). */
void ds__mem_drop(uint64_t base);

/* Forget every device range that overlaps [base, base+size) (VMM mappings unmapped). */
void ds__mem_forget(uint64_t base, uint64_t size);

/* Create the host arena (common/ds_arena.h) for a local connection: returns a memfd to
 * hand to the executor (the caller closes it after sending), or -1 when there is none,
 * in which case page-locked memory is private and cannot be mapped for the device. */
int ds__mem_arena_create(void);

/* Where this process mapped the arena, for the hello (the executor maps it at the same
 * address when it can); 0 without one. */
uint64_t ds__mem_arena_base(void);

/* 1 when [p, p+n) lies inside one page-locked allocation on the arena shared with the
 * executor (pinned, managed, or a registered range, whose pages the arena holds), with
 * *offset its place in the arena: copies to or from it need not carry the bytes.  0
 * otherwise. */
int ds__mem_arena_offset(const void *p, size_t n, uint64_t *offset);

/* What a piece of the arena holds. */
enum ds_arena_use {
    DS_ARENA_PINNED,     /* cuMemHostAlloc's */
    DS_ARENA_MANAGED,    /* cuMemAllocManaged's (managed.c) */
    DS_ARENA_REGISTERED, /* the pages of a registered range (hostreg.c) */
};

/* Take whole pages of the arena for size bytes, for `use`: their address, or NULL when
 * there is no arena or no room.  ds__mem_arena_give returns them, zeroed. */
void *ds__mem_arena_take(size_t size, enum ds_arena_use use);
void ds__mem_arena_give(void *p);

/* The arena's memfd, to map its pages elsewhere too (hostreg.c); -1 without one. */
int ds__mem_arena_fd(void);

#endif
