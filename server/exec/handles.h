/*
 * Virtual handles: the values a tenant holds for its contexts, streams and events.
 * A handle encodes a type, a slot index and a generation, so a handle of the wrong
 * type, a destroyed handle or a made-up number is recognised and refused rather than
 * dereferenced.  Handles are never 0, 1 or 2, which CUDA reserves for the NULL,
 * legacy and per-thread default streams.
 */
#ifndef DS_HANDLES_H
#define DS_HANDLES_H

#include <stddef.h>
#include <stdint.h>

enum ds_htype {
    DS_H_CTX = 1,
    DS_H_STREAM = 2,
    DS_H_EVENT = 3,
    DS_H_MODULE = 4,
    DS_H_FUNC = 5,
    DS_H_GRAPH = 6,
    DS_H_GEXEC = 7,
    DS_H_VMEM = 8, /* a physical allocation of cuMemCreate */
    DS_H_POOL = 9, /* a memory pool (cuMemPoolCreate, or the device's default) */
    DS_H_NODE = 10, /* a node of a graph built node by node */
    DS_H_ARRAY = 11,  /* a CUDA array, or a level of a mipmapped array (ops_array.c) */
    DS_H_MIPMAP = 12, /* a mipmapped array */
};

struct ds_handle_slot {
    void *obj;
    uint32_t gen;
    uint8_t type; /* 0 when free */
};

struct ds_handles {
    struct ds_handle_slot *v;
    uint32_t n, cap;
    uint32_t *free_idx;
    uint32_t nfree;
};

void ds_handles_init(struct ds_handles *t);

/* Free the table (not the objects). */
void ds_handles_destroy(struct ds_handles *t);

/* Register obj; returns its new handle, or 0 when out of memory. */
uint64_t ds_handles_add(struct ds_handles *t, enum ds_htype type, void *obj);

/* The object behind h if h is a live handle of `type`, else NULL. */
void *ds_handles_get(const struct ds_handles *t, uint64_t h, enum ds_htype type);

/* Unregister h; returns its object, or NULL when h is not a live handle of `type`. */
void *ds_handles_remove(struct ds_handles *t, uint64_t h, enum ds_htype type);

/* Iterate live handles of `type`: start with *cursor = 0; returns the next handle or 0
 * at the end.  Removing the handle just returned is allowed. */
uint64_t ds_handles_next(const struct ds_handles *t, enum ds_htype type, uint32_t *cursor);

#endif
