/*
 * The bytes one side of a strided copy touches, as CUDA_MEMCPY3D describes a side: row
 * y of slice z starts at ptr + (z * rows + y) * pitch + x.  Shared by the client, which
 * walks the rows of host sides, and the executor, which checks device sides against the
 * tenant's memory, so that both judge a shape by the same rule.
 */
#ifndef DS_BOX_H
#define DS_BOX_H

#include <stdint.h>

struct ds_box_side {
    uint64_t ptr;
    uint64_t x, y, z; /* x in bytes */
    uint64_t pitch;   /* bytes from one row to the next */
    uint64_t rows;    /* rows from one slice to the next */
};

/* For a copy of depth slices of height rows of width bytes (each > 0): *first, the
 * side's first byte, and *extent, the bytes from it to the end of its last row.  Row ky
 * of slice kz then starts at *first + (kz * rows + ky) * pitch.  A single row needs no
 * pitch and a single slice no rows.  Returns 0, or DS_EINVAL when rows would overlap
 * (pitch below x + width, or rows below y + height, which the driver refuses too) or an
 * address would overflow. */
int ds_box_span(const struct ds_box_side *s, uint64_t width, uint64_t height, uint64_t depth,
                uint64_t *first, uint64_t *extent);

#endif
