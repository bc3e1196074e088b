/*
 * CUDA arrays on the sim (docs/sim-device.md): an array is host memory holding its
 * elements packed, row after row (width * elem bytes each, no padding), max(height, 1)
 * rows a slice and max(depth, 1) slices (layers and cube faces are slices); a mipmapped
 * array is one such array per level.  Copies move the bytes when they are submitted, as
 * the sim's other copies do, and take a modelled time on their stream.  Texture and
 * surface objects are opaque values no kernel reads here: the address of a small record,
 * so that each is distinct while it lives.  Arrays count against the sim's device memory.
 */
#include "sim_core.h"

#include "ds_arrayfmt.h"
#include "ds_clock.h"
#include "ds_error.h"
#include "shm.h"

#include <stdlib.h>
#include <string.h>

struct ds_barray {
    struct ds_array_shape d;
    uint64_t row, rows, size; /* bytes a row, rows a slice, bytes in all */
    unsigned char *bytes;
};

struct ds_bmipmap {
    unsigned levels;
    struct ds_barray *level; /* levels entries */
};

/* A texture or surface object's value points at one of these. */
struct sim_texobj {
    CUresourcetype type;
};

static int array_init(struct ds_backend *b, const struct ds_array_shape *d, struct ds_barray *a)
{
    a->d = *d;
    a->row = d->width * d->elem;
    a->rows = d->height ? d->height : 1;
    a->size = ds_array_bytes(d->width, d->height, d->depth, d->elem);
    if (ds_shm_sim_reserve(b->cfg.shm, b->cfg.slot, a->size) != 0)
        return DS_ENOMEM;
    if ((a->bytes = calloc(1, a->size)) == NULL) {
        ds_shm_sim_release(b->cfg.shm, b->cfg.slot, a->size);
        return DS_ENOMEM;
    }
    return 0;
}

static void array_fini(struct ds_backend *b, struct ds_barray *a)
{
    ds_shm_sim_release(b->cfg.shm, b->cfg.slot, a->size);
    free(a->bytes);
}

int ds__sim_array_create(struct ds_backend *b, const struct ds_array_shape *d,
                         struct ds_barray **out)
{
    struct ds_barray *a = calloc(1, sizeof(*a));
    int rc;

    if (a == NULL)
        return DS_ENOMEM;
    if ((rc = array_init(b, d, a)) != 0) {
        free(a);
        return rc;
    }
    *out = a;
    return 0;
}

void ds__sim_array_destroy(struct ds_backend *b, struct ds_barray *a)
{
    array_fini(b, a);
    free(a);
}

void ds__sim_mipmap_destroy(struct ds_backend *b, struct ds_bmipmap *m)
{
    for (unsigned i = 0; i < m->levels; i++)
        array_fini(b, &m->level[i]);
    free(m->level);
    free(m);
}

int ds__sim_mipmap_create(struct ds_backend *b, const struct ds_array_shape *d, unsigned levels,
                          struct ds_bmipmap **out)
{
    int layered = (d->flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    struct ds_bmipmap *m = calloc(1, sizeof(*m));

    if (m == NULL || (m->level = calloc(levels, sizeof(*m->level))) == NULL) {
        free(m);
        return DS_ENOMEM;
    }
    for (; m->levels < levels; m->levels++) {
        struct ds_array_shape l = *d;
        uint64_t dims[3];

        ds_array_level(d->width, d->height, d->depth, layered, m->levels, dims);
        l.width = dims[0];
        l.height = dims[1];
        l.depth = dims[2];
        if (array_init(b, &l, &m->level[m->levels]) != 0) {
            ds__sim_mipmap_destroy(b, m);
            return DS_ENOMEM;
        }
    }
    *out = m;
    return 0;
}

int ds__sim_mipmap_level(struct ds_backend *b, struct ds_bmipmap *m, unsigned level,
                         struct ds_barray **out)
{
    (void)b;
    *out = &m->level[level];
    return 0;
}

/* Where a side's rows are in this process: its first byte of the box, the bytes from a
 * row to the next and the rows from a slice to the next. */
struct place {
    unsigned char *first;
    uint64_t pitch, rows;
};

static struct place place_of(struct ds_backend *b, const struct ds_array_loc *s)
{
    const struct ds_barray *a = s->array;

    if (a == NULL)
        return (struct place){ ds__sim_host_of(b, s->ptr), s->pitch, s->rows };
    return (struct place){ a->bytes + (s->z * a->rows + s->y) * a->row + s->x, a->row, a->rows };
}

static unsigned char *row_of(const struct place *p, uint64_t z, uint64_t y)
{
    return p->first + (z * p->rows + y) * p->pitch;
}

static void move_box(struct place dst, struct place src, uint64_t width, uint64_t height,
                     uint64_t depth)
{
    for (uint64_t z = 0; z < depth; z++)
        for (uint64_t y = 0; y < height; y++)
            memmove(row_of(&dst, z, y), row_of(&src, z, y), width);
}

int ds__sim_array_copy(struct ds_backend *b, const struct ds_array_copy *c, struct ds_bstream *s)
{
    uint64_t t0 = ds_now_ns();

    move_box(place_of(b, &c->dst), place_of(b, &c->src), c->width, c->height, c->depth);
    ds__sim_moved(b, s, t0, c->width * c->height * c->depth, 0, 0);
    return 0;
}

int ds__sim_array_write(struct ds_backend *b, const struct ds_array_loc *dst, const void *src,
                        uint64_t width, uint64_t height, uint64_t depth, struct ds_bstream *s)
{
    struct place from = { (unsigned char *)(uintptr_t)src, width, height };
    uint64_t t0 = ds_now_ns();

    move_box(place_of(b, dst), from, width, height, depth);
    ds__sim_moved(b, s, t0, width * height * depth, 1, 0);
    return 0;
}

int ds__sim_array_read(struct ds_backend *b, void *dst, const struct ds_array_loc *src,
                       uint64_t width, uint64_t height, uint64_t depth, struct ds_bstream *s)
{
    struct place to = { dst, width, height };
    uint64_t t0 = ds_now_ns();

    move_box(to, place_of(b, src), width, height, depth);
    ds__sim_moved(b, s, t0, width * height * depth, 1, 1);
    return 0;
}

static int make_object(CUresourcetype type, uint64_t *out)
{
    struct sim_texobj *o = malloc(sizeof(*o));

    if (o == NULL)
        return DS_ENOMEM;
    o->type = type;
    *out = (uint64_t)(uintptr_t)o;
    return 0;
}

int ds__sim_tex_create(struct ds_backend *b, const struct ds_tex_resource *r,
                       const CUDA_TEXTURE_DESC *desc, const CUDA_RESOURCE_VIEW_DESC *view,
                       uint64_t *out)
{
    (void)b;
    (void)desc;
    (void)view;
    return make_object(r->type, out);
}

void ds__sim_tex_destroy(struct ds_backend *b, uint64_t obj)
{
    (void)b;
    free((void *)(uintptr_t)obj);
}

int ds__sim_surf_create(struct ds_backend *b, const struct ds_tex_resource *r, uint64_t *out)
{
    (void)b;
    return make_object(r->type, out);
}

void ds__sim_surf_destroy(struct ds_backend *b, uint64_t obj)
{
    (void)b;
    free((void *)(uintptr_t)obj);
}
