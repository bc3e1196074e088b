/*
 * Pitched memory: cuMemAllocPitch, and the strided copies inside device memory that
 * cuMemcpy2D/3D (and their async and peer forms) come to once the client has moved any
 * host rows through the 1-D copies.  Every row of both sides is checked against the
 * tenant's memory before the backend sees the copy.
 */
#include "ops.h"

#include "ds_box.h"
#include "ds_error.h"
#include "ds_log.h"

/* Account for and record an allocation the backend made; on failure it is given back. */
static CUresult keep_alloc(struct ds_tenant *t, uint64_t ctx, uint64_t base, uint64_t size)
{
    struct ds_memtab_entry e = { .base = base, .size = size, .owner = ctx,
                                 .kind = DS_RANGE_ALLOC };
    int rc;

    if (ds__account_take(&t->acct, DS_MEM_DEVICE, size) != 0) {
        t->ops->dev_free(t->be, base);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if ((rc = ds_memtab_insert(&t->mem, &e)) != 0) {
        ds__account_give(&t->acct, DS_MEM_DEVICE, size);
        t->ops->dev_free(t->be, base);
        return ds_error_to_cu(rc == DS_ENOMEM ? rc : DS_EDEVICE);
    }
    return CUDA_SUCCESS;
}

CUresult ds__ops_mem_alloc_pitch(struct ds_tenant *t, const ds_alloc_pitch_args *a,
                                 ds_alloc_pitch_res *r)
{
    uint64_t base, pitch;
    int rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (a->width == 0 || a->height == 0 ||
        (a->elem_size != 4 && a->elem_size != 8 && a->elem_size != 16))
        return CUDA_ERROR_INVALID_VALUE;
    if (a->capture_mode < CU_STREAM_CAPTURE_MODE_GLOBAL ||
        a->capture_mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->width > (uint64_t)t->view.attrs[CU_DEVICE_ATTRIBUTE_MAX_PITCH])
        return CUDA_ERROR_INVALID_VALUE;
    rc = t->ops->dev_alloc_pitch(t->be, a->width, a->height, a->elem_size, a->capture_mode,
                                 &base, &pitch);
    if (rc != 0)
        return ds_error_to_cu(rc);
    /* The rows the tenant will index must lie inside what it is charged for. */
    if (pitch < a->width || a->height > UINT64_MAX / pitch) {
        ds_warn("cuMemAllocPitch: the device gave pitch %llu for rows of %llu bytes",
                (unsigned long long)pitch, (unsigned long long)a->width);
        t->ops->dev_free(t->be, base);
        return CUDA_ERROR_UNKNOWN;
    }
    if ((rc = keep_alloc(t, a->ctx, base, pitch * a->height)) != CUDA_SUCCESS)
        return rc;
    r->ds_alloc_pitch_res_u.mem.ptr = base;
    r->ds_alloc_pitch_res_u.mem.pitch = pitch;
    return CUDA_SUCCESS;
}

/* One side's first byte (*first) and the bytes from it to its last row's end (*extent)
 * (ds_box.h), with its pitch and rows as the backend gets them: a single row needs no
 * pitch, a single slice no rows.  -1 for a shape ds_box_span refuses or a pitch above
 * the device's maximum. */
static int side_span(const struct ds_tenant *t, const ds_copy_side *sd, const ds_copy3d_args *a,
                     uint64_t *first, uint64_t *extent, uint64_t *pitch, uint64_t *rows)
{
    struct ds_box_side b = { .ptr = sd->ptr, .x = sd->x, .y = sd->y, .z = sd->z,
                             .pitch = sd->pitch, .rows = sd->rows };
    int rows_apart = a->height > 1 || a->depth > 1;

    if (ds_box_span(&b, a->width, a->height, a->depth, first, extent) != 0)
        return -1;
    if (rows_apart && sd->pitch > (uint64_t)t->view.attrs[CU_DEVICE_ATTRIBUTE_MAX_PITCH])
        return -1;
    *pitch = rows_apart ? sd->pitch : a->width;
    *rows = a->depth > 1 ? sd->rows : a->height;
    return 0;
}

/* The copy as the backend runs it, or CUDA_ERROR_INVALID_VALUE when a row of either
 * side falls outside the tenant's memory or the shape is impossible. */
static CUresult box_of(const struct ds_tenant *t, const ds_copy3d_args *a, struct ds_copy3d *c)
{
    uint64_t dext, sext;

    if (side_span(t, &a->dst, a, &c->dst, &dext, &c->dst_pitch, &c->dst_rows) != 0 ||
        side_span(t, &a->src, a, &c->src, &sext, &c->src_pitch, &c->src_rows) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__tenant_range(t, c->dst, dext) != 0 || ds__tenant_range(t, c->src, sext) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    c->width = a->width;
    c->height = a->height;
    c->depth = a->depth;
    return CUDA_SUCCESS;
}

static CUresult box_copy(struct ds_tenant *t, const ds_copy3d_args *a, int wait)
{
    struct ds_bstream *s;
    struct ds_copy3d c;
    CUresult rc;

    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->width == 0 || a->height == 0 || a->depth == 0)
        return CUDA_SUCCESS;
    if ((rc = box_of(t, a, &c)) != CUDA_SUCCESS) {
        ds_info("strided copy refused: a row lies outside the tenant's memory or the shape "
                "is invalid");
        return rc;
    }
    if ((rc = ds_error_to_cu(t->ops->memcpy_3d(t->be, &c, s))) != CUDA_SUCCESS)
        return rc;
    return wait ? ds__tenant_await_stream(t, s) : CUDA_SUCCESS;
}

CUresult ds__ops_memcpy_3d(struct ds_tenant *t, const ds_copy3d_args *a, ds_void_res *r)
{
    (void)r;
    return box_copy(t, a, 1);
}

CUresult ds__ops_memcpy_3d_async(struct ds_tenant *t, const ds_copy3d_args *a)
{
    return box_copy(t, a, 0);
}
