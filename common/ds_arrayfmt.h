/*
 * CUDA array shapes: the bytes of one element of a format, a mipmapped array's level
 * shapes, and the bytes an array holds.  Shared by the executor, which checks shapes and
 * counts arrays against the quota, and the sim, which stores them, so both agree.
 */
#ifndef DS_ARRAYFMT_H
#define DS_ARRAYFMT_H

#include <cuda.h>
#include <stdint.h>

/* The largest width, height or depth served: above every limit a GPU has, and small
 * enough that no product of them with an element size overflows 64 bits. */
#define DS_ARRAY_DIM_MAX (1ull << 18)

/* Bytes of one element of `format` with `channels` channels, or 0 for a format that is
 * not served (block-compressed and YUV formats) or a channel count it does not take:
 * 1, 2 or 4 for the classic formats, the count in the name for the normalised ones. */
unsigned ds_array_elem(int format, unsigned channels);

/* 1 for a format CUDA defines that detshare does not serve (block-compressed, YUV and
 * multi-planar), 0 otherwise. */
int ds_array_format_refused(int format);

/* The shape of level `level` of a mipmapped array of shape (width, height, depth): each
 * dimension halved per level, never below 1, a 0 staying 0, and layers (layered: the
 * depth) never shrinking. */
void ds_array_level(uint64_t width, uint64_t height, uint64_t depth, int layered,
                    unsigned level, uint64_t out[3]);

/* Levels a mipmapped array of that shape can have: one more than log2 of its largest
 * dimension that halves. */
unsigned ds_array_max_levels(uint64_t width, uint64_t height, uint64_t depth, int layered);

/* Bytes of an array of that shape with elements of elem bytes: rows of width elements,
 * max(height, 1) rows a slice, max(depth, 1) slices.  Dimensions at most
 * DS_ARRAY_DIM_MAX, so it cannot overflow. */
uint64_t ds_array_bytes(uint64_t width, uint64_t height, uint64_t depth, unsigned elem);

#endif
