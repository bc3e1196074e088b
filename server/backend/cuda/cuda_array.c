/*
 * CUDA arrays, mipmapped arrays, texture and surface objects on the real GPU: the
 * driver's own objects, made in the executor's context, so the values kernels receive
 * are the device's.  The executor has checked every box against the array's shape or
 * the tenant's memory; copies go in stream order like the strided copies (cuda.c).
 */
#include "cuda_backend.h"

#include "ds_error.h"

#include <stdlib.h>

/* The backend's array is the driver's CUarray itself; a level's belongs to its
 * mipmapped array, which the driver frees with it. */
static CUarray arr(struct ds_barray *a)
{
    return (CUarray)a;
}

static CUDA_ARRAY3D_DESCRIPTOR desc_of(const struct ds_array_shape *d)
{
    return (CUDA_ARRAY3D_DESCRIPTOR){ .Width = d->width, .Height = d->height,
                                      .Depth = d->depth, .Format = d->format,
                                      .NumChannels = d->channels, .Flags = d->flags };
}

int ds__cuda_array_create(struct ds_backend *b, const struct ds_array_shape *d,
                          struct ds_barray **out)
{
    CUDA_ARRAY3D_DESCRIPTOR desc = desc_of(d);
    CUarray a;
    CUresult r = b->cu.cuArray3DCreate(&a, &desc);

    if (r == CUDA_SUCCESS)
        *out = (struct ds_barray *)a;
    return ds__cuda_err(r);
}

void ds__cuda_array_destroy(struct ds_backend *b, struct ds_barray *a)
{
    b->cu.cuArrayDestroy(arr(a));
}

int ds__cuda_mipmap_create(struct ds_backend *b, const struct ds_array_shape *d,
                           unsigned levels, struct ds_bmipmap **out)
{
    CUDA_ARRAY3D_DESCRIPTOR desc = desc_of(d);
    CUmipmappedArray m;
    CUresult r = b->cu.cuMipmappedArrayCreate(&m, &desc, levels);

    if (r == CUDA_SUCCESS)
        *out = (struct ds_bmipmap *)m;
    return ds__cuda_err(r);
}

void ds__cuda_mipmap_destroy(struct ds_backend *b, struct ds_bmipmap *m)
{
    b->cu.cuMipmappedArrayDestroy((CUmipmappedArray)m);
}

int ds__cuda_mipmap_level(struct ds_backend *b, struct ds_bmipmap *m, unsigned level,
                          struct ds_barray **out)
{
    CUarray a;
    CUresult r = b->cu.cuMipmappedArrayGetLevel(&a, (CUmipmappedArray)m, level);

    if (r == CUDA_SUCCESS)
        *out = (struct ds_barray *)a;
    return ds__cuda_err(r);
}

static void side_src(CUDA_MEMCPY3D *m, const struct ds_array_loc *s)
{
    if (s->array != NULL) {
        m->srcMemoryType = CU_MEMORYTYPE_ARRAY;
        m->srcArray = arr(s->array);
        m->srcXInBytes = s->x;
        m->srcY = s->y;
        m->srcZ = s->z;
        return;
    }
    m->srcMemoryType = CU_MEMORYTYPE_DEVICE;
    m->srcDevice = s->ptr;
    m->srcPitch = s->pitch;
    m->srcHeight = s->rows;
}

static void side_dst(CUDA_MEMCPY3D *m, const struct ds_array_loc *s)
{
    if (s->array != NULL) {
        m->dstMemoryType = CU_MEMORYTYPE_ARRAY;
        m->dstArray = arr(s->array);
        m->dstXInBytes = s->x;
        m->dstY = s->y;
        m->dstZ = s->z;
        return;
    }
    m->dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m->dstDevice = s->ptr;
    m->dstPitch = s->pitch;
    m->dstHeight = s->rows;
}

static int run(struct ds_backend *b, CUDA_MEMCPY3D *m, struct ds_bstream *s, int wait)
{
    int rc;

    s = ds__cuda_real(b, s);
    if ((rc = ds__cuda_order(b, s)) != 0)
        return rc;
    if ((rc = ds__cuda_err(b->cu.cuMemcpy3DAsync(m, s->s))) != 0 || !wait)
        return rc;
    return ds__cuda_err(b->cu.cuStreamSynchronize(s->s));
}

int ds__cuda_array_copy(struct ds_backend *b, const struct ds_array_copy *c,
                        struct ds_bstream *s)
{
    CUDA_MEMCPY3D m = { .WidthInBytes = c->width, .Height = c->height, .Depth = c->depth };

    side_dst(&m, &c->dst);
    side_src(&m, &c->src);
    return run(b, &m, s, 0);
}

/* The source is the executor's pageable receive buffer, which the driver stages before
 * the call returns, as for cuda.c's host-to-device copies. */
int ds__cuda_array_write(struct ds_backend *b, const struct ds_array_loc *dst, const void *src,
                         uint64_t width, uint64_t height, uint64_t depth, struct ds_bstream *s)
{
    CUDA_MEMCPY3D m = { .WidthInBytes = width, .Height = height, .Depth = depth,
                        .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src,
                        .srcPitch = width, .srcHeight = height };

    side_dst(&m, dst);
    return run(b, &m, s, 0);
}

int ds__cuda_array_read(struct ds_backend *b, void *dst, const struct ds_array_loc *src,
                        uint64_t width, uint64_t height, uint64_t depth, struct ds_bstream *s)
{
    CUDA_MEMCPY3D m = { .WidthInBytes = width, .Height = height, .Depth = depth,
                        .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = dst,
                        .dstPitch = width, .dstHeight = height };

    side_src(&m, src);
    return run(b, &m, s, 1);
}

static CUDA_RESOURCE_DESC resource(const struct ds_tex_resource *r)
{
    CUDA_RESOURCE_DESC d = { .resType = r->type };

    switch (r->type) {
    case CU_RESOURCE_TYPE_ARRAY:
        d.res.array.hArray = arr(r->array);
        break;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        d.res.mipmap.hMipmappedArray = (CUmipmappedArray)r->mipmap;
        break;
    case CU_RESOURCE_TYPE_LINEAR:
        d.res.linear.devPtr = r->ptr;
        d.res.linear.format = r->format;
        d.res.linear.numChannels = r->channels;
        d.res.linear.sizeInBytes = r->size;
        break;
    default:
        d.res.pitch2D.devPtr = r->ptr;
        d.res.pitch2D.format = r->format;
        d.res.pitch2D.numChannels = r->channels;
        d.res.pitch2D.width = r->width;
        d.res.pitch2D.height = r->height;
        d.res.pitch2D.pitchInBytes = r->pitch;
        break;
    }
    return d;
}

int ds__cuda_tex_create(struct ds_backend *b, const struct ds_tex_resource *r,
                        const CUDA_TEXTURE_DESC *desc, const CUDA_RESOURCE_VIEW_DESC *view,
                        uint64_t *out)
{
    CUDA_RESOURCE_DESC res = resource(r);
    CUtexObject o;
    CUresult rc = b->cu.cuTexObjectCreate(&o, &res, desc, view);

    if (rc == CUDA_SUCCESS)
        *out = o;
    return ds__cuda_err(rc);
}

void ds__cuda_tex_destroy(struct ds_backend *b, uint64_t obj)
{
    b->cu.cuTexObjectDestroy((CUtexObject)obj);
}

int ds__cuda_surf_create(struct ds_backend *b, const struct ds_tex_resource *r, uint64_t *out)
{
    CUDA_RESOURCE_DESC res = resource(r);
    CUsurfObject o;
    CUresult rc = b->cu.cuSurfObjectCreate(&o, &res);

    if (rc == CUDA_SUCCESS)
        *out = o;
    return ds__cuda_err(rc);
}

void ds__cuda_surf_destroy(struct ds_backend *b, uint64_t obj)
{
    b->cu.cuSurfObjectDestroy((CUsurfObject)obj);
}
