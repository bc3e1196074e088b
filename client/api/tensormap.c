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

_Static_assert(sizeof(cuuint64_t) == sizeof(uint64_t) && sizeof(cuuint32_t) == sizeof(unsigned),
               "the caller's array entries and the wire's differ in size");

/* How many entries of an array the wire carries when the rank asks for `want`. */
static unsigned entries(long want)
{
    return want <= 0 ? 0 : want > DS_TENSORMAP_RANK_MAX ? DS_TENSORMAP_RANK_MAX : (unsigned)want;
}

/* Copy n entries of `size` bytes; 0, or -1 when the array is NULL but entries are wanted
 * (a rank-1 map has no strides, and may pass NULL for them).  The caller's types and the
 * wire's have the same sizes; only their names differ. */
static int copy_in(void *dst, const void *src, unsigned n, size_t size)
{
    if (n == 0)
        return 0;
    if (src == NULL)
        return -1;
    memcpy(dst, src, n * size);
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
    if (copy_in(arr->dim, dim, n, sizeof(*dim)) != 0 ||
        copy_in(arr->stride, stride, n_stride, sizeof(*stride)) != 0 ||
        copy_in(arr->elem_stride, elem_stride, n, sizeof(*elem_stride)) != 0)
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
    if (copy_in(arr.box, boxDim, entries(tensorRank), sizeof(*boxDim)) != 0)
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
    if (copy_in(arr.lower, pixelBoxLowerCorner, corners, sizeof(*pixelBoxLowerCorner)) != 0 ||
        copy_in(arr.upper, pixelBoxUpperCorner, corners, sizeof(*pixelBoxUpperCorner)) != 0)
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
