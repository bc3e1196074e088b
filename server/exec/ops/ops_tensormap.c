/*
 * Tensor maps (cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2colWide,
 * cuTensorMapReplaceAddress): the 128-byte descriptors that Hopper's TMA kernels (JAX/XLA's,
 * Triton's) take as parameters.  The map is made where the device is, by the driver or by
 * the sim's rules, and its bytes go back to the tenant.
 *
 * Here the arguments are checked for shape only, as network input: the rank, every enum,
 * and each array as long as the rank makes it.  Whether the values make a usable map is the
 * backend's to say (backend.h), so that on a GPU the driver's own rules decide.  The
 * address is not checked against the tenant's memory: the driver does not check it either,
 * and a map is only a description until a kernel uses it.  Nothing is kept per tenant.
 */
#include "ops.h"

#include "ds_error.h"

#include <string.h>

_Static_assert(DS_TENSORMAP_RANK_MAX == DS_TENSORMAP_RANK, "wire and backend ranks differ");
_Static_assert(DS_TENSORMAP_QWORDS == CU_TENSOR_MAP_NUM_QWORDS, "a CUtensorMap is 16 words");

/* The common arguments into d; 0, or CUDA_ERROR_INVALID_VALUE when an enum is out of range
 * or an array's length is not what rank asks (the rank itself checked by the caller). */
static CUresult common(const ds_tensormap_common *c, struct ds_tensormap_desc *d)
{
    memset(d, 0, sizeof(*d));
    if (c->dtype < 0 || c->dtype > CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B ||
        c->interleave < 0 || c->interleave > CU_TENSOR_MAP_INTERLEAVE_32B ||
        c->swizzle < 0 || c->swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
        c->l2 < 0 || c->l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
        c->oob < 0 || c->oob > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->dim.dim_len != c->rank || c->stride.stride_len != c->rank - 1 ||
        c->elem_stride.elem_stride_len != c->rank)
        return CUDA_ERROR_INVALID_VALUE;
    d->dtype = (CUtensorMapDataType)c->dtype;
    d->rank = c->rank;
    d->addr = c->addr;
    memcpy(d->dim, c->dim.dim_val, c->rank * sizeof(d->dim[0]));
    if (c->rank > 1) /* a rank-1 map has no strides, and XDR no array for them */
        memcpy(d->stride, c->stride.stride_val, (c->rank - 1) * sizeof(d->stride[0]));
    memcpy(d->elem_stride, c->elem_stride.elem_stride_val, c->rank * sizeof(d->elem_stride[0]));
    d->interleave = (CUtensorMapInterleave)c->interleave;
    d->swizzle = (CUtensorMapSwizzle)c->swizzle;
    d->l2 = (CUtensorMapL2promotion)c->l2;
    d->oob = (CUtensorMapFloatOOBfill)c->oob;
    return CUDA_SUCCESS;
}

static CUresult encode(struct ds_tenant *t, const struct ds_tensormap_desc *d,
                       ds_tensormap_res *r)
{
    CUtensorMap map;
    int rc = t->ops->tensormap_encode(t->be, d, &map);

    if (rc != 0)
        return ds_error_to_cu(rc);
    memcpy(r->ds_tensormap_res_u.map.q, map.opaque, sizeof(map.opaque));
    return CUDA_SUCCESS;
}

CUresult ds__ops_tensormap_tiled(struct ds_tenant *t, const ds_tensormap_tiled_args *a,
                                 ds_tensormap_res *r)
{
    struct ds_tensormap_desc d;
    CUresult rc;

    if (a->c.rank < 1 || a->c.rank > DS_TENSORMAP_RANK)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = common(&a->c, &d)) != CUDA_SUCCESS)
        return rc;
    if (a->box.box_len != a->c.rank)
        return CUDA_ERROR_INVALID_VALUE;
    d.kind = DS_TENSORMAP_KIND_TILED;
    memcpy(d.box, a->box.box_val, d.rank * sizeof(d.box[0]));
    return encode(t, &d, r);
}

/* CUDA's im2col maps have 3 to 5 dimensions: C, one to three spatial ones, N. */
CUresult ds__ops_tensormap_im2col(struct ds_tenant *t, const ds_tensormap_im2col_args *a,
                                  ds_tensormap_res *r)
{
    struct ds_tensormap_desc d;
    CUresult rc;

    if (a->c.rank < 3 || a->c.rank > DS_TENSORMAP_RANK)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = common(&a->c, &d)) != CUDA_SUCCESS)
        return rc;
    if (a->lower.lower_len != a->c.rank - 2 || a->upper.upper_len != a->c.rank - 2)
        return CUDA_ERROR_INVALID_VALUE;
    d.kind = DS_TENSORMAP_KIND_IM2COL;
    memcpy(d.lower, a->lower.lower_val, (d.rank - 2) * sizeof(d.lower[0]));
    memcpy(d.upper, a->upper.upper_val, (d.rank - 2) * sizeof(d.upper[0]));
    d.channels = a->channels;
    d.pixels = a->pixels;
    return encode(t, &d, r);
}

CUresult ds__ops_tensormap_im2col_wide(struct ds_tenant *t,
                                       const ds_tensormap_im2col_wide_args *a,
                                       ds_tensormap_res *r)
{
    struct ds_tensormap_desc d;
    CUresult rc;

    if (a->c.rank < 3 || a->c.rank > DS_TENSORMAP_RANK || a->mode < 0 ||
        a->mode > CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = common(&a->c, &d)) != CUDA_SUCCESS)
        return rc;
    d.kind = DS_TENSORMAP_KIND_IM2COL_WIDE;
    d.lower[0] = a->lower;
    d.upper[0] = a->upper;
    d.channels = a->channels;
    d.pixels = a->pixels;
    d.mode = (CUtensorMapIm2ColWideMode)a->mode;
    return encode(t, &d, r);
}

CUresult ds__ops_tensormap_replace(struct ds_tenant *t, const ds_tensormap_replace_args *a,
                                   ds_tensormap_res *r)
{
    CUtensorMap map;
    int rc;

    memcpy(map.opaque, a->map.q, sizeof(map.opaque));
    if ((rc = t->ops->tensormap_replace(t->be, &map, a->addr)) != 0)
        return ds_error_to_cu(rc);
    memcpy(r->ds_tensormap_res_u.map.q, map.opaque, sizeof(map.opaque));
    return CUDA_SUCCESS;
}
