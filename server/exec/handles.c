#include "handles.h"

#include <stdlib.h>
#include <string.h>

#define GEN_BITS 24
#define GEN_MASK ((1u << GEN_BITS) - 1)

static uint64_t encode(enum ds_htype type, uint32_t gen, uint32_t idx)
{
    return ((uint64_t)type << 56) | ((uint64_t)(gen & GEN_MASK) << 32) | (uint64_t)(idx + 1);
}

void ds_handles_init(struct ds_handles *t)
{
    memset(t, 0, sizeof(*t));
}

void ds_handles_destroy(struct ds_handles *t)
{
    free(t->v);
    free(t->free_idx);
    memset(t, 0, sizeof(*t));
}

static int grow(struct ds_handles *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    struct ds_handle_slot *v;
    uint32_t *f;

    if (cap > UINT32_MAX / 2)
        return -1;
    v = realloc(t->v, cap * sizeof(*v));
    if (v == NULL)
        return -1;
    t->v = v;
    f = realloc(t->free_idx, cap * sizeof(*f));
    if (f == NULL)
        return -1;
    t->free_idx = f;
    t->cap = cap;
    return 0;
}

uint64_t ds_handles_add(struct ds_handles *t, enum ds_htype type, void *obj)
{
    uint32_t idx;

    if (t->nfree > 0) {
        idx = t->free_idx[--t->nfree];
    } else {
        if (t->n == t->cap && grow(t) != 0)
            return 0;
        idx = t->n++;
        t->v[idx].gen = 0;
    }
    t->v[idx].obj = obj;
    t->v[idx].type = (uint8_t)type;
    return encode(type, t->v[idx].gen, idx);
}

static struct ds_handle_slot *lookup(const struct ds_handles *t, uint64_t h,
                                     enum ds_htype type)
{
    uint32_t idx = (uint32_t)(h & 0xffffffffu);
    struct ds_handle_slot *s;

    if (idx == 0 || idx > t->n || (h >> 56) != (uint64_t)type)
        return NULL;
    s = &t->v[idx - 1];
    if (s->type != type || ((h >> 32) & GEN_MASK) != (s->gen & GEN_MASK))
        return NULL;
    return s;
}

void *ds_handles_get(const struct ds_handles *t, uint64_t h, enum ds_htype type)
{
    struct ds_handle_slot *s = lookup(t, h, type);

    return s ? s->obj : NULL;
}

void *ds_handles_remove(struct ds_handles *t, uint64_t h, enum ds_htype type)
{
    struct ds_handle_slot *s = lookup(t, h, type);
    void *obj;

    if (s == NULL)
        return NULL;
    obj = s->obj;
    s->obj = NULL;
    s->type = 0;
    s->gen++; /* a stale copy of h no longer matches */
    /* free_idx has room for every slot, so this never overflows. */
    t->free_idx[t->nfree++] = (uint32_t)(s - t->v);
    return obj;
}

uint64_t ds_handles_next(const struct ds_handles *t, enum ds_htype type, uint32_t *cursor)
{
    while (*cursor < t->n) {
        uint32_t idx = (*cursor)++;

        if (t->v[idx].type == type)
            return encode(type, t->v[idx].gen, idx);
    }
    return 0;
}
