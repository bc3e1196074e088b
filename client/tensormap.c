/*
 * Tensor maps (cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
 * cuTensorMapEncodeIm2colWide, cuTensorMapReplaceAddress): host-side calls that fill a
 * 128-byte CUtensorMap, which Hopper's TMA kernels (JAX/XLA's, Triton's) take as a
 * parameter.  The executor makes the map, with the driver on a GPU, and checks every
 * argument (server/exec/ops_tensormap.c); the client only marshals and copies the bytes
 * into the caller's map.  Synchronous, as in CUDA.
 *
 * Nothing is decided here but what only the client can check, the caller's pointers: a
 * rank beyond CUDA's most dimensions sends that many entries of each array, no more, and
 * the executor refuses the rank.
 */
#include "cuda_api.h"

#include "rpc.h"

#include <stdint.h>
#include <string.h>

/* Copies of the caller's arrays, which the wire's arrays point into. */
struct arrays {
    uint64_t dim[DS_TENSORMAP_RANK_MAX], stride[DS_TENSORMAP_RANK_MAX];
    unsigned elem_stride[DS_TENSORMAP_RANK_MAX], box[DS_TENSORMAP_RANK_MAX];
    int lower[DS_TENSORMAP_RANK_MAX], upper[DS_TENSORMAP_RANK_MAX];
};

/* How many entries of an array the wire carries when the rank asks for `want`. */
static unsigned entries(long want)
{
    return want <= 0 ? 0 : want > DS_TENSORMAP_RANK_MAX ? DS_TENSORMAP_RANK_MAX : (unsigned)want;
}

/* The copy_* functions copy n entries; 0, or -1 when the array is NULL but entries are
 * wanted (a rank-1 map has no strides, and may pass NULL for them). */
static int copy_u64(uint64_t *dst, const cuuint64_t *src, unsigned n)
{
    if (n > 0 && src == NULL)
        return -1;
    for (unsigned i = 0; i < n; i++)
        dst[i] = src[i];
    return 0;
}

static int copy_u32(unsigned *dst, const cuuint32_t *src, unsigned n)
{
    if (n > 0 && src == NULL)
        return -1;
    for (unsigned i = 0; i < n; i++)
        dst[i] = src[i];
    return 0;
}

static int copy_int(int *dst, const int *src, unsigned n)
{
    if (n > 0 && src == NULL)
        return -1;
    for (unsigned i = 0; i < n; i++)
        dst[i] = src[i];
    return 0;
}

/* The arguments every encoder takes, into c (pointing into arr); CUDA_SUCCESS, or
 * CUDA_ERROR_INVALID_VALUE for a NULL map or array, or a map not aligned to the 64
 * bytes CUDA asks for. */
static CUresult common(ds_tensormap_common *c, struct arrays *arr, CUtensorMap *map,
                       CUtensorMapDataType dtype, cuuint32_t rank, void *addr,
                       const cuuint64_t *dim, const cuuint64_t *stride,
                       const cuuint32_t *elem_stride, CUtensorMapInterleave interleave,
                       CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                       CUtensorMapFloatOOBfill oob)
{
    unsigned n = entries(rank), n_stride = entries((long)rank - 1);

    if (map == NULL || (uintptr_t)map % 64 != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (copy_u64(arr->dim, dim, n) != 0 || copy_u64(arr->stride, stride, n_stride) != 0 ||
        copy_u32(arr->elem_stride, elem_stride, n) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    memset(c, 0, sizeof(*c));
    c->dtype = dtype;
    c->rank = rank;
    c->addr = (uintptr_t)addr;
    c->dim.dim_len = n;
    c->dim.dim_val = arr->dim;
    c->stride.stride_len = n_stride;
    c->stride.stride_val = arr->stride;
    c->elem_stride.elem_stride_len = n;
    c->elem_stride.elem_stride_val = arr->elem_stride;
    c->interleave = interleave;
    c->swizzle = swizzle;
    c->l2 = l2;
    c->oob = oob;
    return CUDA_SUCCESS;
}

static void give(CUtensorMap *map, const ds_tensormap_res *r)
{
    memcpy(map->opaque, r->ds_tensormap_res_u.map.q, sizeof(map->opaque));
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                cuuint32_t tensorRank, void *globalAddress,
                                const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion,
                                CUtensorMapFloatOOBfill oobFill)
{
    ds_tensormap_tiled_args a;
    ds_tensormap_res r;
    struct arrays arr;
    CUresult rc;

    DS_NEED_INIT();
    rc = common(&a.c, &arr, tensorMap, tensorDataType, tensorRank, globalAddress, globalDim,
                globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (copy_u32(arr.box, boxDim, entries(tensorRank)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    a.box.box_len = entries(tensorRank);
    a.box.box_val = arr.box;
    rc = ds_rpc_tensormap_tiled(&a, &r);
    if (rc == CUDA_SUCCESS)
        give(tensorMap, &r);
    return rc;
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                 cuuint32_t tensorRank, void *globalAddress,
                                 const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                 const int *pixelBoxLowerCorner,
                                 const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
                                 cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
                                 CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                 CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill)
{
    ds_tensormap_im2col_args a;
    ds_tensormap_res r;
    struct arrays arr;
    unsigned corners = entries((long)tensorRank - 2);
    CUresult rc;

    DS_NEED_INIT();
    rc = common(&a.c, &arr, tensorMap, tensorDataType, tensorRank, globalAddress, globalDim,
                globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (copy_int(arr.lower, pixelBoxLowerCorner, corners) != 0 ||
        copy_int(arr.upper, pixelBoxUpperCorner, corners) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    a.lower.lower_len = corners;
    a.lower.lower_val = arr.lower;
    a.upper.upper_len = corners;
    a.upper.upper_val = arr.upper;
    a.channels = channelsPerPixel;
    a.pixels = pixelsPerColumn;
    rc = ds_rpc_tensormap_im2col(&a, &r);
    if (rc == CUDA_SUCCESS)
        give(tensorMap, &r);
    return rc;
}

CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                     cuuint32_t tensorRank, void *globalAddress,
                                     const cuuint64_t *globalDim,
                                     const cuuint64_t *globalStrides,
                                     int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth,
                                     cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                     const cuuint32_t *elementStrides,
                                     CUtensorMapInterleave interleave,
                                     CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle,
                                     CUtensorMapL2promotion l2Promotion,
                                     CUtensorMapFloatOOBfill oobFill)
{
    ds_tensormap_im2col_wide_args a;
    ds_tensormap_res r;
    struct arrays arr;
    CUresult rc;

    DS_NEED_INIT();
    rc = common(&a.c, &arr, tensorMap, tensorDataType, tensorRank, globalAddress, globalDim,
                globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill);
    if (rc != CUDA_SUCCESS)
        return rc;
    a.lower = pixelBoxLowerCornerWidth;
    a.upper = pixelBoxUpperCornerWidth;
    a.channels = channelsPerPixel;
    a.pixels = pixelsPerColumn;
    a.mode = mode;
    rc = ds_rpc_tensormap_im2col_wide(&a, &r);
    if (rc == CUDA_SUCCESS)
        give(tensorMap, &r);
    return rc;
}

CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    ds_tensormap_replace_args a;
    ds_tensormap_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (tensorMap == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(a.map.q, tensorMap->opaque, sizeof(a.map.q));
    a.addr = (uintptr_t)globalAddress;
    rc = ds_rpc_tensormap_replace(&a, &r);
    if (rc == CUDA_SUCCESS)
        give(tensorMap, &r);
    return rc;
}
