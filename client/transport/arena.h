/*
 * The host arena of a local connection (common/ds_arena.h): one memfd mapped here and in
 * the executor, handed out in whole pages to what the device must reach without the
 * bytes crossing the socket (page-locked, managed and registered host memory).  Only
 * the connection creates it; the API areas take and give back its pages.  Thread-safe.
 */
#ifndef DS_CLIENT_ARENA_H
#define DS_CLIENT_ARENA_H

#include <stddef.h>
#include <stdint.h>

/* Create and map the arena: returns a memfd to hand to the executor (the caller closes
 * it after sending), or -1 when there is none, in which case page-locked memory is
 * private and cannot be mapped for the device. */
int ds__arena_create(void);

/* Where this process mapped the arena, for the hello (the executor maps it at the same
 * address when it can); 0 without one. */
uint64_t ds__arena_base(void);

/* The arena's memfd, to map its pages elsewhere too (hostreg.c); -1 without one. */
int ds__arena_fd(void);

/* 1 when p lies on the arena, taken or not. */
int ds__arena_holds(const void *p);

/* Take whole pages of the arena for size bytes: their address, or NULL when there is no
 * arena or no room.  ds__arena_give returns them, zeroed. */
void *ds__arena_take(size_t size);
void ds__arena_give(void *p);

/* 1 when [p, p+n) lies inside one piece taken from the arena, with *offset its place in
 * the arena; 0 otherwise. */
int ds__arena_offset(const void *p, size_t n, uint64_t *offset);

#endif
