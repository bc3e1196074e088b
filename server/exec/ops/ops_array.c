/*
 * CUDA arrays, mipmapped arrays, texture and surface objects, and the copies that touch
 * arrays.  Arrays are behind handles of the tenant's; a mipmapped array's levels get
 * handles of their own the first time they are asked for and go with it.  Every box of
 * a copy is checked against the array's shape or the tenant's memory before the backend
 * sees it.  Texture and surface objects are the device's own values, which kernels
 * receive as parameters; the tenant's are kept in t->texobjs so that only they are
 * destroyed.  An array's bytes (every level's, for a mipmapped array) count against the
 * tenant's quota as device memory.
 */
#include "ops.h"

#include "ds_arrayfmt.h"
#include "ds_box.h"
#include "ds_error.h"
#include "ds_log.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* An array, or a level of mipmapped array `mipmap`, whose bytes that one counts. */
struct ds_varray {
    uint64_t ctx;
    struct ds_array_shape shape;
    uint64_t bytes;
    uint64_t mipmap;
    struct ds_barray *real;
};

struct ds_vmipmap {
    uint64_t ctx;
    struct ds_array_shape shape;
    unsigned levels;
    uint64_t bytes;
    uint64_t *level; /* levels entries: the level's handle once asked for, else 0 */
    struct ds_bmipmap *real;
};

#define SHAPE_FLAGS                                                                         \
    (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |              \
     CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE | CUDA_ARRAY3D_COLOR_ATTACHMENT)
#define REFUSED_FLAGS                                                                       \
    (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE)

static atomic_int refused_once;

/* Formats and flags CUDA has that detshare does not serve: said once, then refused. */
static CUresult refuse(const char *what)
{
    if (atomic_exchange(&refused_once, 1) == 0)
        ds_info("CUDA arrays: %s are not served (docs/api-coverage.md)", what);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* Which dimensions a shape may have, as cuArray3DCreate documents them. */
static int dims_valid(const ds_array_desc *d)
{
    int layered = (d->flags & CUDA_ARRAY3D_LAYERED) != 0;

    if (d->width == 0 || d->width > DS_ARRAY_DIM_MAX || d->height > DS_ARRAY_DIM_MAX ||
        d->depth > DS_ARRAY_DIM_MAX)
        return 0;
    if (d->flags & CUDA_ARRAY3D_CUBEMAP)
        return d->width == d->height && d->depth != 0 &&
               (layered ? d->depth % 6 == 0 : d->depth == 6);
    if (d->height == 0 && d->depth != 0)
        return layered;
    return !layered || d->depth != 0;
}

/* The tenant's descriptor as the backend takes it, or the CUresult that refuses it. */
static CUresult shape_of(const ds_array_desc *d, struct ds_array_shape *s)
{
    if (ds_array_format_refused(d->format))
        return refuse("block-compressed and YUV formats");
    if (d->flags & REFUSED_FLAGS)
        return refuse("sparse, deferred-mapping and video arrays");
    if ((d->flags & ~(unsigned)SHAPE_FLAGS) != 0 || !dims_valid(d))
        return CUDA_ERROR_INVALID_VALUE;
    *s = (struct ds_array_shape){ .width = d->width, .height = d->height, .depth = d->depth,
                                  .format = (CUarray_format)d->format,
                                  .channels = d->channels, .flags = d->flags,
                                  .elem = ds_array_elem(d->format, d->channels) };
    return s->elem == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static int layered(const struct ds_array_shape *s)
{
    return (s->flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
}

static struct ds_array_shape level_shape(const struct ds_array_shape *s, unsigned level)
{
    struct ds_array_shape l = *s;
    uint64_t dims[3];

    ds_array_level(s->width, s->height, s->depth, layered(s), level, dims);
    l.width = dims[0];
    l.height = dims[1];
    l.depth = dims[2];
    return l;
}

static uint64_t shape_bytes(const struct ds_array_shape *s)
{
    return ds_array_bytes(s->width, s->height, s->depth, s->elem);
}

static CUresult make_array(struct ds_tenant *t, uint64_t ctx, const struct ds_array_shape *s,
                           ds_handle *out)
{
    struct ds_varray *v = calloc(1, sizeof(*v));
    int rc;

    if (v == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *v = (struct ds_varray){ .ctx = ctx, .shape = *s, .bytes = shape_bytes(s) };
    if (ds__account_take(&t->acct, DS_MEM_DEVICE, v->bytes) != 0) {
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if ((rc = t->ops->array_create(t->be, s, &v->real)) == 0) {
        if ((*out = ds_handles_add(&t->h, DS_H_ARRAY, v)) != 0)
            return CUDA_SUCCESS;
        t->ops->array_destroy(t->be, v->real);
        rc = DS_ENOMEM;
    }
    ds__account_give(&t->acct, DS_MEM_DEVICE, v->bytes);
    free(v);
    return ds_error_to_cu(rc);
}

static CUresult make_mipmap(struct ds_tenant *t, uint64_t ctx, const struct ds_array_shape *s,
                            unsigned levels, ds_handle *out)
{
    struct ds_vmipmap *m;
    int rc = DS_ENOMEM;

    if (levels > ds_array_max_levels(s->width, s->height, s->depth, layered(s)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((m = calloc(1, sizeof(*m))) == NULL ||
        (m->level = calloc(levels, sizeof(*m->level))) == NULL) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->ctx = ctx;
    m->shape = *s;
    m->levels = levels;
    for (unsigned i = 0; i < levels; i++) {
        struct ds_array_shape l = level_shape(s, i);

        m->bytes += shape_bytes(&l);
    }
    if (ds__account_take(&t->acct, DS_MEM_DEVICE, m->bytes) == 0) {
        if ((rc = t->ops->mipmap_create(t->be, s, levels, &m->real)) == 0) {
            if ((*out = ds_handles_add(&t->h, DS_H_MIPMAP, m)) != 0)
                return CUDA_SUCCESS;
            t->ops->mipmap_destroy(t->be, m->real);
            rc = DS_ENOMEM;
        }
        ds__account_give(&t->acct, DS_MEM_DEVICE, m->bytes);
    }
    free(m->level);
    free(m);
    return ds_error_to_cu(rc);
}

CUresult ds__ops_array_create(struct ds_tenant *t, const ds_array_create_args *a,
                              ds_handle_res *r)
{
    struct ds_array_shape s;
    CUresult rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((rc = shape_of(&a->desc, &s)) != CUDA_SUCCESS)
        return rc;
    if (a->levels == 0)
        return make_array(t, a->ctx, &s, &r->ds_handle_res_u.handle);
    return make_mipmap(t, a->ctx, &s, a->levels, &r->ds_handle_res_u.handle);
}

static void free_array(struct ds_tenant *t, struct ds_varray *v)
{
    if (v->mipmap == 0) {
        t->ops->array_destroy(t->be, v->real);
        ds__account_give(&t->acct, DS_MEM_DEVICE, v->bytes);
    }
    free(v);
}

/* The mipmapped array's handle is gone already; its levels' go with it. */
static void free_mipmap(struct ds_tenant *t, struct ds_vmipmap *m)
{
    for (unsigned i = 0; i < m->levels; i++)
        if (m->level[i] != 0)
            free_array(t, ds_handles_remove(&t->h, m->level[i], DS_H_ARRAY));
    t->ops->mipmap_destroy(t->be, m->real);
    ds__account_give(&t->acct, DS_MEM_DEVICE, m->bytes);
    free(m->level);
    free(m);
}

CUresult ds__ops_array_destroy(struct ds_tenant *t, const ds_array_ref *a, ds_void_res *r)
{
    struct ds_varray *v;
    struct ds_vmipmap *m;

    (void)r;
    if (a->mipmapped) {
        if ((m = ds_handles_remove(&t->h, a->handle, DS_H_MIPMAP)) == NULL)
            return CUDA_ERROR_INVALID_HANDLE;
        free_mipmap(t, m);
        return CUDA_SUCCESS;
    }
    if ((v = ds_handles_get(&t->h, a->handle, DS_H_ARRAY)) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    /* A level belongs to its mipmapped array. */
    if (v->mipmap != 0)
        return CUDA_ERROR_INVALID_VALUE;
    free_array(t, ds_handles_remove(&t->h, a->handle, DS_H_ARRAY));
    return CUDA_SUCCESS;
}

static void desc_of(const struct ds_array_shape *s, ds_array_desc *d)
{
    *d = (ds_array_desc){ .width = s->width, .height = s->height, .depth = s->depth,
                          .format = (int)s->format, .channels = s->channels,
                          .flags = s->flags };
}

CUresult ds__ops_array_info(struct ds_tenant *t, const ds_array_ref *a, ds_array_info_res *r)
{
    const struct ds_varray *v = a->mipmapped ? NULL : ds_handles_get(&t->h, a->handle, DS_H_ARRAY);
    const struct ds_vmipmap *m = a->mipmapped ? ds_handles_get(&t->h, a->handle, DS_H_MIPMAP)
                                              : NULL;
    ds_array_info *i = &r->ds_array_info_res_u.info;

    if (v != NULL) {
        desc_of(&v->shape, &i->desc);
        i->levels = 0;
        i->bytes = v->bytes;
        return CUDA_SUCCESS;
    }
    if (m == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    desc_of(&m->shape, &i->desc);
    i->levels = m->levels;
    i->bytes = m->bytes;
    return CUDA_SUCCESS;
}

CUresult ds__ops_mipmap_level(struct ds_tenant *t, const ds_mipmap_level_args *a,
                              ds_handle_res *r)
{
    struct ds_vmipmap *m = ds_handles_get(&t->h, a->mipmap, DS_H_MIPMAP);
    struct ds_varray *v;
    int rc;

    if (m == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->level >= m->levels)
        return CUDA_ERROR_INVALID_VALUE;
    if (m->level[a->level] != 0) {
        r->ds_handle_res_u.handle = m->level[a->level];
        return CUDA_SUCCESS;
    }
    if ((v = calloc(1, sizeof(*v))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *v = (struct ds_varray){ .ctx = m->ctx, .shape = level_shape(&m->shape, a->level),
                             .mipmap = a->mipmap };
    if ((rc = t->ops->mipmap_level(t->be, m->real, a->level, &v->real)) != 0) {
        free(v);
        return ds_error_to_cu(rc);
    }
    if ((m->level[a->level] = ds_handles_add(&t->h, DS_H_ARRAY, v)) == 0) {
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->ds_handle_res_u.handle = m->level[a->level];
    return CUDA_SUCCESS;
}

/* One array side of a box: it lies inside the array, in whole elements. */
static CUresult array_side(struct ds_tenant *t, const ds_array_side *w, uint64_t width,
                           uint64_t height, uint64_t depth, struct ds_array_loc *out)
{
    const struct ds_varray *v = ds_handles_get(&t->h, w->array, DS_H_ARRAY);
    uint64_t row, rows, slices;

    if (v == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    row = v->shape.width * v->shape.elem;
    rows = v->shape.height ? v->shape.height : 1;
    slices = v->shape.depth ? v->shape.depth : 1;
    if (w->x % v->shape.elem != 0 || width % v->shape.elem != 0 || w->x > row ||
        width > row - w->x || w->y > rows || height > rows - w->y || w->z > slices ||
        depth > slices - w->z)
        return CUDA_ERROR_INVALID_VALUE;
    *out = (struct ds_array_loc){ .array = v->real, .x = w->x, .y = w->y, .z = w->z };
    return CUDA_SUCCESS;
}

/* One device-memory side: every row in the tenant's memory, as the strided copies'. */
static CUresult memory_side(const struct ds_tenant *t, const ds_array_side *w, uint64_t width,
                            uint64_t height, uint64_t depth, struct ds_array_loc *out)
{
    struct ds_box_side b = { .ptr = w->ptr, .x = w->x, .y = w->y, .z = w->z,
                             .pitch = w->pitch, .rows = w->rows };
    int rows_apart = height > 1 || depth > 1;
    uint64_t first, extent;

    if (ds_box_span(&b, width, height, depth, &first, &extent) != 0 ||
        (rows_apart && w->pitch > (uint64_t)t->view.attrs[CU_DEVICE_ATTRIBUTE_MAX_PITCH]) ||
        ds__tenant_range(t, first, extent) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *out = (struct ds_array_loc){ .ptr = first, .pitch = rows_apart ? w->pitch : width,
                                   .rows = depth > 1 ? w->rows : height };
    return CUDA_SUCCESS;
}

static CUresult side_of(struct ds_tenant *t, const ds_array_side *w, uint64_t width,
                        uint64_t height, uint64_t depth, struct ds_array_loc *out)
{
    if (w->array != 0)
        return array_side(t, w, width, height, depth, out);
    return memory_side(t, w, width, height, depth, out);
}

/* The stream of a copy, which is refused while it is captured: a graph would keep
 * an array copy the executor cannot account for after the call. */
static CUresult copy_stream(struct ds_tenant *t, ds_handle stream, struct ds_bstream **s)
{
    if (ds__tenant_stream(t, stream, s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ds__tenant_capturing(t, stream)) {
        ds_warn("an array copy on a capturing stream cannot be captured through detshare");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return CUDA_SUCCESS;
}

static CUresult array_copy(struct ds_tenant *t, const ds_array_copy_args *a, int wait)
{
    struct ds_array_copy c = { .width = a->width, .height = a->height, .depth = a->depth };
    struct ds_bstream *s;
    CUresult rc;

    if ((rc = copy_stream(t, a->stream, &s)) != CUDA_SUCCESS)
        return rc;
    if (a->dst.array == 0 && a->src.array == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->width == 0 || a->height == 0 || a->depth == 0)
        return CUDA_SUCCESS;
    if ((rc = side_of(t, &a->dst, a->width, a->height, a->depth, &c.dst)) != CUDA_SUCCESS ||
        (rc = side_of(t, &a->src, a->width, a->height, a->depth, &c.src)) != CUDA_SUCCESS)
        return rc;
    if ((rc = ds_error_to_cu(t->ops->array_copy(t->be, &c, s))) != CUDA_SUCCESS)
        return rc;
    return wait ? ds__tenant_await_stream(t, s) : CUDA_SUCCESS;
}

CUresult ds__ops_array_copy(struct ds_tenant *t, const ds_array_copy_args *a, ds_void_res *r)
{
    (void)r;
    return array_copy(t, a, 1);
}

CUresult ds__ops_array_copy_async(struct ds_tenant *t, const ds_array_copy_args *a)
{
    return array_copy(t, a, 0);
}

/* Bytes of a packed box no larger than one chunk, or UINT64_MAX for a larger one. */
static uint64_t packed(uint64_t width, uint64_t height, uint64_t depth)
{
    if (width > DS_CHUNK_MAX || height > DS_CHUNK_MAX || depth > DS_CHUNK_MAX ||
        width * height > DS_CHUNK_MAX || width * height * depth > DS_CHUNK_MAX)
        return UINT64_MAX;
    return width * height * depth;
}

static CUresult array_write(struct ds_tenant *t, const ds_array_write_args *a, int wait)
{
    struct ds_array_loc dst;
    struct ds_bstream *s;
    CUresult rc;

    if ((rc = copy_stream(t, a->stream, &s)) != CUDA_SUCCESS)
        return rc;
    if (a->dst.array == 0 || packed(a->width, a->height, a->depth) != a->data.data_len)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = array_side(t, &a->dst, a->width, a->height, a->depth, &dst)) != CUDA_SUCCESS)
        return rc;
    if (a->data.data_len == 0)
        return CUDA_SUCCESS;
    rc = ds_error_to_cu(t->ops->array_write(t->be, &dst, a->data.data_val, a->width,
                                            a->height, a->depth, s));
    if (rc != CUDA_SUCCESS)
        return rc;
    return wait ? ds__tenant_await_stream(t, s) : CUDA_SUCCESS;
}

CUresult ds__ops_array_write(struct ds_tenant *t, const ds_array_write_args *a, ds_void_res *r)
{
    (void)r;
    return array_write(t, a, 1);
}

CUresult ds__ops_array_write_async(struct ds_tenant *t, const ds_array_write_args *a)
{
    return array_write(t, a, 0);
}

CUresult ds__ops_array_read(struct ds_tenant *t, const ds_array_read_args *a, ds_bytes_res *r)
{
    uint64_t n = packed(a->width, a->height, a->depth);
    struct ds_array_loc src;
    struct ds_bstream *s;
    CUresult rc;
    char *buf;

    if ((rc = copy_stream(t, a->stream, &s)) != CUDA_SUCCESS)
        return rc;
    if (a->src.array == 0 || n == UINT64_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = array_side(t, &a->src, a->width, a->height, a->depth, &src)) != CUDA_SUCCESS)
        return rc;
    /* The reply owns the buffer; the dispatcher frees it after sending. */
    if ((buf = malloc(n ? n : 1)) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (n != 0 &&
        (rc = ds_error_to_cu(t->ops->array_read(t->be, buf, &src, a->width, a->height,
                                                a->depth, s))) != CUDA_SUCCESS) {
        free(buf);
        return rc;
    }
    r->ds_bytes_res_u.data.data_val = buf;
    r->ds_bytes_res_u.data.data_len = (u_int)n;
    return CUDA_SUCCESS;
}

/* A texture or surface object's resource, its handles and memory the tenant's. */
static CUresult resource_of(struct ds_tenant *t, const ds_tex_res *w, struct ds_tex_resource *r)
{
    const struct ds_varray *v;
    const struct ds_vmipmap *m;
    unsigned elem = ds_array_elem(w->format, w->channels);

    *r = (struct ds_tex_resource){ .type = (CUresourcetype)w->type };
    if (w->flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    switch (w->type) {
    case CU_RESOURCE_TYPE_ARRAY:
        if ((v = ds_handles_get(&t->h, w->array, DS_H_ARRAY)) == NULL)
            return CUDA_ERROR_INVALID_HANDLE;
        r->array = v->real;
        return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        if ((m = ds_handles_get(&t->h, w->array, DS_H_MIPMAP)) == NULL)
            return CUDA_ERROR_INVALID_HANDLE;
        r->mipmap = m->real;
        return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_LINEAR:
        if (elem == 0 || w->size == 0 || ds__tenant_range(t, w->ptr, w->size) != 0)
            return CUDA_ERROR_INVALID_VALUE;
        break;
    case CU_RESOURCE_TYPE_PITCH2D:
        if (elem == 0 || w->width == 0 || w->height == 0 || w->width > DS_ARRAY_DIM_MAX ||
            w->height > DS_ARRAY_DIM_MAX || w->pitch < w->width * elem ||
            w->pitch > UINT64_MAX / w->height ||
            ds__tenant_range(t, w->ptr, w->pitch * (w->height - 1) + w->width * elem) != 0)
            return CUDA_ERROR_INVALID_VALUE;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    *r = (struct ds_tex_resource){ .type = (CUresourcetype)w->type, .ptr = w->ptr,
                                   .format = (CUarray_format)w->format,
                                   .channels = w->channels, .size = w->size,
                                   .width = w->width, .height = w->height, .pitch = w->pitch };
    return CUDA_SUCCESS;
}

#define TRSF_FLAGS                                                                          \
    (CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB |              \
     CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | CU_TRSF_SEAMLESS_CUBEMAP)

static CUresult tex_desc_of(const ds_tex_desc *w, CUDA_TEXTURE_DESC *d)
{
    memset(d, 0, sizeof(*d));
    for (int i = 0; i < 3; i++) {
        if (w->address_mode[i] < CU_TR_ADDRESS_MODE_WRAP ||
            w->address_mode[i] > CU_TR_ADDRESS_MODE_BORDER)
            return CUDA_ERROR_INVALID_VALUE;
        d->addressMode[i] = (CUaddress_mode)w->address_mode[i];
    }
    if (w->filter_mode < CU_TR_FILTER_MODE_POINT || w->filter_mode > CU_TR_FILTER_MODE_LINEAR ||
        w->mipmap_filter_mode < CU_TR_FILTER_MODE_POINT ||
        w->mipmap_filter_mode > CU_TR_FILTER_MODE_LINEAR || (w->flags & ~TRSF_FLAGS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    d->filterMode = (CUfilter_mode)w->filter_mode;
    d->flags = w->flags;
    d->maxAnisotropy = w->max_anisotropy;
    d->mipmapFilterMode = (CUfilter_mode)w->mipmap_filter_mode;
    d->mipmapLevelBias = w->mipmap_bias;
    d->minMipmapLevelClamp = w->min_level_clamp;
    d->maxMipmapLevelClamp = w->max_level_clamp;
    for (int i = 0; i < 4; i++)
        d->borderColor[i] = w->border[i];
    return CUDA_SUCCESS;
}

static CUresult view_of(const ds_tex_view *w, CUDA_RESOURCE_VIEW_DESC *v)
{
    if (w->format < CU_RES_VIEW_FORMAT_NONE || w->format > CU_RES_VIEW_FORMAT_UNSIGNED_BC7)
        return CUDA_ERROR_INVALID_VALUE;
    *v = (CUDA_RESOURCE_VIEW_DESC){
        .format = (CUresourceViewFormat)w->format, .width = w->width, .height = w->height,
        .depth = w->depth, .firstMipmapLevel = w->first_level,
        .lastMipmapLevel = w->last_level, .firstLayer = w->first_layer,
        .lastLayer = w->last_layer,
    };
    return CUDA_SUCCESS;
}

static CUresult keep_object(struct ds_tenant *t, uint64_t ctx, uint64_t obj,
                            enum ds_texobj_kind kind)
{
    struct ds_memtab_entry e = { .base = obj, .size = 1, .owner = ctx, .kind = kind };
    int rc;

    if (obj == UINT64_MAX || (rc = ds_memtab_insert(&t->texobjs, &e)) != 0) {
        ds_warn("the device gave texture or surface object %llu twice",
                (unsigned long long)obj);
        if (kind == DS_TEXOBJ_TEX)
            t->ops->tex_destroy(t->be, obj);
        else
            t->ops->surf_destroy(t->be, obj);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

CUresult ds__ops_tex_create(struct ds_tenant *t, const ds_tex_create_args *a, ds_hyper_res *r)
{
    struct ds_tex_resource res;
    CUDA_TEXTURE_DESC desc;
    CUDA_RESOURCE_VIEW_DESC view;
    uint64_t obj;
    CUresult rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((rc = resource_of(t, &a->res, &res)) != CUDA_SUCCESS ||
        (rc = tex_desc_of(&a->tex, &desc)) != CUDA_SUCCESS ||
        (a->view.view_len == 1 && (rc = view_of(a->view.view_val, &view)) != CUDA_SUCCESS))
        return rc;
    rc = ds_error_to_cu(t->ops->tex_create(t->be, &res, &desc,
                                           a->view.view_len ? &view : NULL, &obj));
    if (rc == CUDA_SUCCESS && (rc = keep_object(t, a->ctx, obj, DS_TEXOBJ_TEX)) == CUDA_SUCCESS)
        r->ds_hyper_res_u.value = obj;
    return rc;
}

CUresult ds__ops_surf_create(struct ds_tenant *t, const ds_surf_create_args *a,
                             ds_hyper_res *r)
{
    const struct ds_varray *v = ds_handles_get(&t->h, a->res.array, DS_H_ARRAY);
    struct ds_tex_resource res;
    uint64_t obj;
    CUresult rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (a->res.type != CU_RESOURCE_TYPE_ARRAY)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = resource_of(t, &a->res, &res)) != CUDA_SUCCESS)
        return rc;
    /* Only arrays made for surface loads and stores can be written through one. */
    if ((v->shape.flags & CUDA_ARRAY3D_SURFACE_LDST) == 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_error_to_cu(t->ops->surf_create(t->be, &res, &obj));
    if (rc == CUDA_SUCCESS && (rc = keep_object(t, a->ctx, obj, DS_TEXOBJ_SURF)) == CUDA_SUCCESS)
        r->ds_hyper_res_u.value = obj;
    return rc;
}

static void destroy_object(struct ds_tenant *t, const struct ds_memtab_entry *e)
{
    uint64_t obj = e->base;

    if (e->kind == DS_TEXOBJ_TEX)
        t->ops->tex_destroy(t->be, obj);
    else
        t->ops->surf_destroy(t->be, obj);
    ds_memtab_remove(&t->texobjs, obj, NULL);
}

static CUresult drop_object(struct ds_tenant *t, uint64_t obj, enum ds_texobj_kind kind)
{
    const struct ds_memtab_entry *e = obj == UINT64_MAX ? NULL
                                                        : ds_memtab_find(&t->texobjs, obj, 1);

    if (e == NULL || e->base != obj || e->kind != (unsigned)kind)
        return CUDA_ERROR_INVALID_VALUE;
    destroy_object(t, e);
    return CUDA_SUCCESS;
}

CUresult ds__ops_tex_destroy(struct ds_tenant *t, const ds_handle *obj, ds_void_res *r)
{
    (void)r;
    return drop_object(t, *obj, DS_TEXOBJ_TEX);
}

CUresult ds__ops_surf_destroy(struct ds_tenant *t, const ds_handle *obj, ds_void_res *r)
{
    (void)r;
    return drop_object(t, *obj, DS_TEXOBJ_SURF);
}

void ds__ops_array_drop(struct ds_tenant *t, uint64_t ctx, int all)
{
    uint32_t cur = 0;
    uint64_t h;

    for (size_t i = t->texobjs.n; i-- > 0;)
        if (all || t->texobjs.v[i].owner == ctx)
            destroy_object(t, &t->texobjs.v[i]);
    while ((h = ds_handles_next(&t->h, DS_H_MIPMAP, &cur)) != 0) {
        struct ds_vmipmap *m = ds_handles_get(&t->h, h, DS_H_MIPMAP);

        if (all || m->ctx == ctx)
            free_mipmap(t, ds_handles_remove(&t->h, h, DS_H_MIPMAP));
    }
    cur = 0;
    while ((h = ds_handles_next(&t->h, DS_H_ARRAY, &cur)) != 0) {
        struct ds_varray *v = ds_handles_get(&t->h, h, DS_H_ARRAY);

        if (v->mipmap == 0 && (all || v->ctx == ctx))
            free_array(t, ds_handles_remove(&t->h, h, DS_H_ARRAY));
    }
}
