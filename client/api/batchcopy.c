/*
 * Batched memory calls of CUDA 12.8 and 13: copies, prefetches and discards given as
 * lists.  Each goes as the single calls it is made of, in list order on the stream,
 * which is one order the driver may pick (a batch promises no order among its
 * operations).  The executor checks every operand as it checks a single call's.
 */
#include "cuda_api.h"

#include "rpc.h"

/* The attributes of copy i: attrs[k] applies from attrsIdxs[k] on.  Source orders are
 * all kept by copying in stream order; only an invalid one is refused. */
static CUresult check_attrs(size_t count, const CUmemcpyAttributes *attrs,
                            const size_t *idxs, size_t nattrs)
{
    if (nattrs == 0 || nattrs > count || attrs == NULL || idxs == NULL || idxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < nattrs; k++) {
        if ((k > 0 && idxs[k] <= idxs[k - 1]) || idxs[k] >= count)
            return CUDA_ERROR_INVALID_VALUE;
        if (attrs[k].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID ||
            attrs[k].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
            return CUDA_ERROR_INVALID_VALUE;
        if ((attrs[k].flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE) != 0)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult copy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                           CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs,
                           size_t *fail, CUstream s)
{
    CUresult rc;

    DS_NEED_INIT();
    if (fail != NULL)
        *fail = SIZE_MAX;
    if (count == 0 || dsts == NULL || srcs == NULL || sizes == NULL ||
        s == NULL || s == CU_STREAM_LEGACY)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = check_attrs(count, attrs, idxs, nattrs)) != CUDA_SUCCESS)
        return rc;
    for (size_t i = 0; i < count; i++) {
        if ((rc = cuMemcpyAsync(dsts[i], srcs[i], sizes[i], s)) != CUDA_SUCCESS) {
            if (fail != NULL)
                *fail = i;
            return rc;
        }
    }
    return CUDA_SUCCESS;
}

CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                               CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs,
                               CUstream s)
{
    return copy_batch(dsts, srcs, sizes, count, attrs, idxs, nattrs, NULL, s);
}

CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                            CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs,
                            size_t *fail, CUstream s)
{
    return copy_batch(dsts, srcs, sizes, count, attrs, idxs, nattrs, fail, s);
}

/* One side of a 3-D batch copy as CUDA_MEMCPY3D describes it: pointers only (arrays
 * are refused until arrays are served); rows and layers are counted in bytes, as the
 * extent's width is. */
static CUresult side(const CUmemcpy3DOperand *o, CUmemorytype *type, CUdeviceptr *dev,
                     const void **host, size_t *pitch, size_t *height)
{
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
        return o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY ? CUDA_ERROR_NOT_SUPPORTED
                                                       : CUDA_ERROR_INVALID_VALUE;
    *type = CU_MEMORYTYPE_UNIFIED;
    *dev = o->op.ptr.ptr;
    *host = (const void *)(uintptr_t)o->op.ptr.ptr;
    *pitch = o->op.ptr.rowLength;
    *height = o->op.ptr.layerHeight;
    return CUDA_SUCCESS;
}

static CUresult copy_3d_batch(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                              unsigned long long flags, CUstream s)
{
    CUresult rc = CUDA_SUCCESS;

    DS_NEED_INIT();
    if (fail != NULL)
        *fail = SIZE_MAX;
    if (n == 0 || ops == NULL || flags != 0 || s == NULL || s == CU_STREAM_LEGACY)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++) {
        CUDA_MEMCPY3D c = { .WidthInBytes = ops[i].extent.width,
                            .Height = ops[i].extent.height, .Depth = ops[i].extent.depth };
        const void *src_host;

        rc = side(&ops[i].src, &c.srcMemoryType, &c.srcDevice, &src_host, &c.srcPitch,
                  &c.srcHeight);
        c.srcHost = src_host;
        if (rc == CUDA_SUCCESS)
            rc = side(&ops[i].dst, &c.dstMemoryType, &c.dstDevice, (const void **)&c.dstHost,
                      &c.dstPitch, &c.dstHeight);
        if (rc == CUDA_SUCCESS && (c.WidthInBytes == 0 || c.Height == 0 || c.Depth == 0))
            rc = CUDA_ERROR_INVALID_VALUE;
        if (rc == CUDA_SUCCESS)
            rc = cuMemcpy3DAsync_v2(&c, s);
        if (rc != CUDA_SUCCESS && fail != NULL)
            *fail = i;
    }
    return rc;
}

CUresult cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                 CUstream s)
{
    return copy_3d_batch(n, ops, NULL, flags, s);
}

CUresult cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                              unsigned long long flags, CUstream s)
{
    return copy_3d_batch(n, ops, fail, flags, s);
}

/* Prefetch location of range i: locs[k] applies from idxs[k] on. */
static CUresult prefetch_batch(CUdeviceptr *p, size_t *sizes, size_t count, CUmemLocation *locs,
                               size_t *idxs, size_t nlocs, unsigned long long flags, CUstream s)
{
    size_t k = 0;
    CUresult rc;

    DS_NEED_INIT();
    if (count == 0 || p == NULL || sizes == NULL || flags != 0 || nlocs == 0 ||
        nlocs > count || locs == NULL || idxs == NULL || idxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 1; j < nlocs; j++)
        if (idxs[j] <= idxs[j - 1] || idxs[j] >= count)
            return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (k + 1 < nlocs && idxs[k + 1] == i)
            k++;
        if ((rc = cuMemPrefetchAsync_v2(p[i], sizes[i], locs[k], 0, s)) != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemPrefetchBatchAsync(CUdeviceptr *p, size_t *sizes, size_t count, CUmemLocation *locs,
                                 size_t *idxs, size_t nlocs, unsigned long long flags, CUstream s)
{
    return prefetch_batch(p, sizes, count, locs, idxs, nlocs, flags, s);
}

/* Discarding lets the driver drop the ranges' contents, which are undefined until next
 * written; keeping them is one way to leave them undefined.  The ranges must still be
 * managed memory, which a prefetch to the host checks. */
CUresult cuMemDiscardBatchAsync(CUdeviceptr *p, size_t *sizes, size_t count,
                                unsigned long long flags, CUstream s)
{
    CUmemLocation host = { .type = CU_MEM_LOCATION_TYPE_HOST };
    size_t zero = 0;

    return prefetch_batch(p, sizes, count, &host, &zero, 1, flags, s);
}

CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *p, size_t *sizes, size_t count,
                                           CUmemLocation *locs, size_t *idxs, size_t nlocs,
                                           unsigned long long flags, CUstream s)
{
    return prefetch_batch(p, sizes, count, locs, idxs, nlocs, flags, s);
}
