/*
 * Texture and surface objects (cuTexObject*, cuSurfObject*).  The executor makes them on
 * the device and returns the device's own value, which the tenant passes to kernels as
 * it is, so launches need nothing more.  The descriptors an object was made from are
 * kept here, in the tenant's process, for the Get calls: the driver answers those from
 * what it was given too.
 */
#include "cuda_api.h"

#include "ctx.h"
#include "rpc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* What one object was made from. */
struct object {
    uint64_t value;
    int surface;
    CUDA_RESOURCE_DESC res;
    CUDA_TEXTURE_DESC tex;
    CUDA_RESOURCE_VIEW_DESC view; /* zero when none was given */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct object *objects;
static size_t nobjects, capobjects;

static CUresult remember(const struct object *o)
{
    CUresult rc = CUDA_SUCCESS;

    pthread_mutex_lock(&lock);
    if (nobjects == capobjects) {
        size_t cap = capobjects ? capobjects * 2 : 16;
        struct object *v = realloc(objects, cap * sizeof(*v));

        if (v == NULL) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            objects = v;
            capobjects = cap;
        }
    }
    if (rc == CUDA_SUCCESS)
        objects[nobjects++] = *o;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Copy the object with this value and kind into *out (out may be NULL); 0 if found. */
static int recall(uint64_t value, int surface, struct object *out, int forget)
{
    int found = -1;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nobjects; i++) {
        if (objects[i].value != value || objects[i].surface != surface)
            continue;
        if (out != NULL)
            *out = objects[i];
        if (forget)
            objects[i] = objects[--nobjects];
        found = 0;
        break;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

static CUresult wire_res(const CUDA_RESOURCE_DESC *d, ds_tex_res *w)
{
    memset(w, 0, sizeof(*w));
    w->type = (int)d->resType;
    w->flags = d->flags;
    switch (d->resType) {
    case CU_RESOURCE_TYPE_ARRAY:
        w->array = (ds_handle)(uintptr_t)d->res.array.hArray;
        return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        w->array = (ds_handle)(uintptr_t)d->res.mipmap.hMipmappedArray;
        return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_LINEAR:
        w->ptr = d->res.linear.devPtr;
        w->format = (int)d->res.linear.format;
        w->channels = d->res.linear.numChannels;
        w->size = d->res.linear.sizeInBytes;
        return CUDA_SUCCESS;
    case CU_RESOURCE_TYPE_PITCH2D:
        w->ptr = d->res.pitch2D.devPtr;
        w->format = (int)d->res.pitch2D.format;
        w->channels = d->res.pitch2D.numChannels;
        w->width = d->res.pitch2D.width;
        w->height = d->res.pitch2D.height;
        w->pitch = d->res.pitch2D.pitchInBytes;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static void wire_tex(const CUDA_TEXTURE_DESC *d, ds_tex_desc *w)
{
    memset(w, 0, sizeof(*w));
    for (int i = 0; i < 3; i++)
        w->address_mode[i] = (int)d->addressMode[i];
    w->filter_mode = (int)d->filterMode;
    w->flags = d->flags;
    w->max_anisotropy = d->maxAnisotropy;
    w->mipmap_filter_mode = (int)d->mipmapFilterMode;
    w->mipmap_bias = d->mipmapLevelBias;
    w->min_level_clamp = d->minMipmapLevelClamp;
    w->max_level_clamp = d->maxMipmapLevelClamp;
    for (int i = 0; i < 4; i++)
        w->border[i] = d->borderColor[i];
}

static void wire_view(const CUDA_RESOURCE_VIEW_DESC *d, ds_tex_view *w)
{
    *w = (ds_tex_view){ .format = (int)d->format, .width = d->width, .height = d->height,
                        .depth = d->depth, .first_level = d->firstMipmapLevel,
                        .last_level = d->lastMipmapLevel, .first_layer = d->firstLayer,
                        .last_layer = d->lastLayer };
}

CUresult cuTexObjectCreate(CUtexObject *out, const CUDA_RESOURCE_DESC *res,
                           const CUDA_TEXTURE_DESC *tex, const CUDA_RESOURCE_VIEW_DESC *view)
{
    ds_tex_create_args a;
    ds_tex_view v;
    ds_hyper_res r;
    struct object o = { .surface = 0 };
    CUresult rc;

    DS_NEED_INIT();
    if (out == NULL || res == NULL || tex == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(&a, 0, sizeof(a));
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS ||
        (rc = wire_res(res, &a.res)) != CUDA_SUCCESS)
        return rc;
    wire_tex(tex, &a.tex);
    if (view != NULL) {
        wire_view(view, &v);
        a.view.view_len = 1;
        a.view.view_val = &v;
        o.view = *view;
    }
    if ((rc = ds_rpc_tex_create(&a, &r)) != CUDA_SUCCESS)
        return rc;
    o.value = r.ds_hyper_res_u.value;
    o.res = *res;
    o.tex = *tex;
    if ((rc = remember(&o)) != CUDA_SUCCESS) {
        ds_void_res vr;
        ds_handle h = o.value;

        ds_rpc_tex_destroy(&h, &vr);
        return rc;
    }
    *out = o.value;
    return CUDA_SUCCESS;
}

CUresult cuSurfObjectCreate(CUsurfObject *out, const CUDA_RESOURCE_DESC *res)
{
    ds_surf_create_args a;
    ds_hyper_res r;
    struct object o = { .surface = 1 };
    CUresult rc;

    DS_NEED_INIT();
    if (out == NULL || res == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(&a, 0, sizeof(a));
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS ||
        (rc = wire_res(res, &a.res)) != CUDA_SUCCESS)
        return rc;
    if ((rc = ds_rpc_surf_create(&a, &r)) != CUDA_SUCCESS)
        return rc;
    o.value = r.ds_hyper_res_u.value;
    o.res = *res;
    if ((rc = remember(&o)) != CUDA_SUCCESS) {
        ds_void_res vr;
        ds_handle h = o.value;

        ds_rpc_surf_destroy(&h, &vr);
        return rc;
    }
    *out = o.value;
    return CUDA_SUCCESS;
}

/* The executor decides whether the value is the tenant's; the copy here goes with it. */
static CUresult destroy(uint64_t value, int surface)
{
    ds_handle h = value;
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    rc = surface ? ds_rpc_surf_destroy(&h, &r) : ds_rpc_tex_destroy(&h, &r);
    if (rc == CUDA_SUCCESS)
        recall(value, surface, NULL, 1);
    return rc;
}

CUresult cuTexObjectDestroy(CUtexObject o)
{
    return destroy(o, 0);
}

CUresult cuSurfObjectDestroy(CUsurfObject o)
{
    return destroy(o, 1);
}

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *out, CUtexObject t)
{
    struct object o;

    DS_NEED_INIT();
    if (out == NULL || recall(t, 0, &o, 0) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *out = o.res;
    return CUDA_SUCCESS;
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *out, CUtexObject t)
{
    struct object o;

    DS_NEED_INIT();
    if (out == NULL || recall(t, 0, &o, 0) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *out = o.tex;
    return CUDA_SUCCESS;
}

CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *out, CUtexObject t)
{
    struct object o;

    DS_NEED_INIT();
    if (out == NULL || recall(t, 0, &o, 0) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *out = o.view;
    return CUDA_SUCCESS;
}

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *out, CUsurfObject s)
{
    struct object o;

    DS_NEED_INIT();
    if (out == NULL || recall(s, 1, &o, 0) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *out = o.res;
    return CUDA_SUCCESS;
}
