/*
 * Tensor maps on the real GPU: the driver encodes them from the tenant's arguments as
 * they came, for the tenant's device addresses are the GPU's own, and its checks are the
 * ones that count.  The executor has checked the rank and that the tenant sent as many
 * entries as it asks for; the arrays here hold CUDA's most, zero beyond the rank.
 */
#include "cuda_backend.h"

#include "ds_error.h"

static void *address(uint64_t addr)
{
    return (void *)(uintptr_t)addr;
}

int ds__cuda_tensormap_encode(struct ds_backend *b, const struct ds_tensormap_desc *d,
                              CUtensorMap *out)
{
    CUresult r;

    switch (d->kind) {
    case DS_TENSORMAP_KIND_TILED:
        r = b->cu.cuTensorMapEncodeTiled(out, d->dtype, d->rank, address(d->addr), d->dim,
                                         d->stride, d->box, d->elem_stride, d->interleave,
                                         d->swizzle, d->l2, d->oob);
        break;
    case DS_TENSORMAP_KIND_IM2COL:
        r = b->cu.cuTensorMapEncodeIm2col(out, d->dtype, d->rank, address(d->addr), d->dim,
                                          d->stride, d->lower, d->upper, d->channels,
                                          d->pixels, d->elem_stride, d->interleave,
                                          d->swizzle, d->l2, d->oob);
        break;
    default:
        if (b->cu.cuTensorMapEncodeIm2colWide == NULL)
            return DS_ENOTSUP;
        r = b->cu.cuTensorMapEncodeIm2colWide(out, d->dtype, d->rank, address(d->addr),
                                              d->dim, d->stride, d->lower[0], d->upper[0],
                                              d->channels, d->pixels, d->elem_stride,
                                              d->interleave, d->mode, d->swizzle, d->l2,
                                              d->oob);
        break;
    }
    return ds__cuda_err(r);
}

int ds__cuda_tensormap_replace(struct ds_backend *b, CUtensorMap *map, uint64_t addr)
{
    return ds__cuda_err(b->cu.cuTensorMapReplaceAddress(map, address(addr)));
}
