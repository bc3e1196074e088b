/*
 * The sim's tensor maps.  The sim runs no kernels, so a map only has to be refused when
 * an H100's driver would refuse it and otherwise be the same bytes for the same
 * arguments.  The rules are those cuda.h documents above cuTensorMapEncodeTiled and
 * cuTensorMapEncodeIm2col; the bytes are the arguments packed into the 16 words as
 * docs/sim-device.md describes, so a map read in a debugger says what it was made from.
 * cuda.h says cuTensorMapEncodeIm2colWide is for compute capability 10.0 and up, but the
 * H100's driver (580) encodes one, so the sim does too, with im2col's rules.
 */
#include "sim_core.h"

#include "ds_error.h"

#include <string.h>

/* q[0]'s low 48 bits: "DSTMAP" in memory order; then the kind and the address's
 * alignment, which cuTensorMapReplaceAddress must keep. */
#define MAGIC 0x50414d545344ull
#define MAGIC_MASK ((1ull << 48) - 1)

/* In-memory size of one element in nibbles: the packed 16 x U4 and U6 types take 8 or
 * 16 bytes per 16 values. */
static const unsigned nibbles[] = {
    [CU_TENSOR_MAP_DATA_TYPE_UINT8] = 2,         [CU_TENSOR_MAP_DATA_TYPE_UINT16] = 4,
    [CU_TENSOR_MAP_DATA_TYPE_UINT32] = 8,        [CU_TENSOR_MAP_DATA_TYPE_INT32] = 8,
    [CU_TENSOR_MAP_DATA_TYPE_UINT64] = 16,       [CU_TENSOR_MAP_DATA_TYPE_INT64] = 16,
    [CU_TENSOR_MAP_DATA_TYPE_FLOAT16] = 4,       [CU_TENSOR_MAP_DATA_TYPE_FLOAT32] = 8,
    [CU_TENSOR_MAP_DATA_TYPE_FLOAT64] = 16,      [CU_TENSOR_MAP_DATA_TYPE_BFLOAT16] = 4,
    [CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ] = 8,   [CU_TENSOR_MAP_DATA_TYPE_TFLOAT32] = 8,
    [CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ] = 8,  [CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B] = 1,
    [CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B] = 2, [CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B] = 2,
};

static int packed16(CUtensorMapDataType t)
{
    return t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B || t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
}

static int floating(CUtensorMapDataType t)
{
    return t >= CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && t <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}

/* Bytes the swizzle pattern spans, which bounds the box's inner dimension; 0: none. */
static unsigned swizzle_span(CUtensorMapSwizzle s)
{
    switch (s) {
    case CU_TENSOR_MAP_SWIZZLE_NONE:
        return 0;
    case CU_TENSOR_MAP_SWIZZLE_32B:
        return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B:
        return 64;
    default:
        return 128;
    }
}

static int swizzle_allowed(const struct ds_tensormap_desc *d)
{
    CUtensorMapSwizzle s = d->swizzle;
    int common = s == CU_TENSOR_MAP_SWIZZLE_NONE || s == CU_TENSOR_MAP_SWIZZLE_128B ||
                 s == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B;

    if (d->interleave == CU_TENSOR_MAP_INTERLEAVE_32B && s != CU_TENSOR_MAP_SWIZZLE_32B)
        return 0;
    if (d->dtype == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B)
        return common;
    if (d->dtype == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B)
        return common || s == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B;
    return 1;
}

/* The alignment of the address and of the strides. */
static uint64_t alignment(const struct ds_tensormap_desc *d)
{
    return d->interleave == CU_TENSOR_MAP_INTERLEAVE_32B || packed16(d->dtype) ? 32 : 16;
}

/* What tiled and im2col maps share: address, dimensions, strides, element strides and
 * the layout enums.  inner: the box's inner dimension in elements. */
static int check_common(const struct ds_tensormap_desc *d, uint64_t inner)
{
    uint64_t align = alignment(d);
    unsigned span = swizzle_span(d->swizzle);

    if (d->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && d->rank < 3)
        return DS_EINVAL;
    if (d->addr % align != 0)
        return DS_EINVAL;
    for (unsigned i = 0; i < d->rank; i++)
        if (d->dim[i] == 0 || d->dim[i] > (1ull << 32))
            return DS_EINVAL;
    if ((packed16(d->dtype) && d->dim[0] % 128 != 0) ||
        (d->dtype == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && d->dim[0] % 2 != 0))
        return DS_EINVAL;
    for (unsigned i = 0; i + 1 < d->rank; i++)
        if (d->stride[i] % align != 0 || d->stride[i] >= (1ull << 40))
            return DS_EINVAL;
    /* Without interleave the first element stride is ignored, so any value passes. */
    for (unsigned i = d->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE; i < d->rank; i++)
        if (d->elem_stride[i] == 0 || d->elem_stride[i] > 8)
            return DS_EINVAL;
    if (d->dtype == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B &&
        d->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE)
        return DS_EINVAL;
    if (!swizzle_allowed(d))
        return DS_EINVAL;
    if (d->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && span != 0 &&
        inner * nibbles[d->dtype] > 2ull * span)
        return DS_EINVAL;
    if (d->oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !floating(d->dtype))
        return DS_EINVAL;
    return 0;
}

static int check_tiled(const struct ds_tensormap_desc *d)
{
    for (unsigned i = 0; i < d->rank; i++)
        if (d->box[i] == 0 || d->box[i] > 256)
            return DS_EINVAL;
    if (d->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE &&
        (uint64_t)d->box[0] * nibbles[d->dtype] % 32 != 0)
        return DS_EINVAL;
    if (packed16(d->dtype) && d->box[0] != 128)
        return DS_EINVAL;
    return check_common(d, d->box[0]);
}

/* Each corner offset of a rank 3, 4 or 5 map fits in 16, 8 or 5 bits, signed. */
static int check_im2col(const struct ds_tensormap_desc *d)
{
    static const int bound[] = { [3] = 32768, [4] = 128, [5] = 16 };
    int lim = bound[d->rank];

    for (unsigned i = 0; i + 2 < d->rank; i++)
        if (d->lower[i] < -lim || d->lower[i] >= lim || d->upper[i] < -lim || d->upper[i] >= lim)
            return DS_EINVAL;
    if (d->channels == 0 || d->channels > 256 || d->pixels == 0 || d->pixels > 1024)
        return DS_EINVAL;
    return check_common(d, d->channels);
}

static uint64_t u16(int v)
{
    return (uint16_t)v;
}

int ds__sim_tensormap_encode(struct ds_backend *b, const struct ds_tensormap_desc *d,
                             CUtensorMap *out)
{
    uint64_t *q = out->opaque;
    int rc;

    (void)b;
    rc = d->kind == DS_TENSORMAP_KIND_TILED ? check_tiled(d) : check_im2col(d);
    if (rc != 0)
        return rc;
    memset(out, 0, sizeof(*out));
    q[0] = MAGIC | (uint64_t)d->kind << 48 | alignment(d) << 56;
    q[1] = d->addr;
    q[2] = (uint64_t)d->dtype | (uint64_t)d->rank << 8 | (uint64_t)d->interleave << 16 |
           (uint64_t)d->swizzle << 24 | (uint64_t)d->l2 << 32 | (uint64_t)d->oob << 40 |
           (uint64_t)d->mode << 48;
    for (unsigned i = 0; i < d->rank; i++) {
        /* Ignored, so written as the 1 it stands for: equal maps stay equal bytes. */
        uint64_t es = i == 0 && d->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE ? 1 : d->elem_stride[i];

        q[3 + i] = d->dim[i];
        if (i + 1 < d->rank)
            q[8 + i] = d->stride[i];
        if (i < 4)
            q[12] |= (uint64_t)d->box[i] << (16 * i);
        else
            q[13] |= d->box[i];
        q[13] |= es << (16 + 8 * i);
    }
    for (unsigned i = 0; i + 2 < d->rank && d->kind == DS_TENSORMAP_KIND_IM2COL; i++) {
        q[14] |= u16(d->lower[i]) << (16 * i);
        q[15] |= u16(d->upper[i]) << (16 * i);
    }
    q[14] |= (uint64_t)d->channels << 48;
    q[15] |= (uint64_t)d->pixels << 48;
    return 0;
}

/* Only a map the sim made can be changed; its address keeps the alignment it needed. */
int ds__sim_tensormap_replace(struct ds_backend *b, CUtensorMap *map, uint64_t addr)
{
    uint64_t *q = map->opaque;
    uint64_t kind = q[0] >> 48 & 0xff, align = q[0] >> 56;

    (void)b;
    if ((q[0] & MAGIC_MASK) != MAGIC || kind > DS_TENSORMAP_KIND_IM2COL ||
        (align != 16 && align != 32) || addr % align != 0)
        return DS_EINVAL;
    q[1] = addr;
    return 0;
}
