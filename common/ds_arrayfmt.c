#include "ds_arrayfmt.h"

static unsigned classic_bytes(int format)
{
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

unsigned ds_array_elem(int format, unsigned channels)
{
    static const unsigned counts[3] = { 1, 2, 4 };
    unsigned b = classic_bytes(format);

    if (b != 0)
        return channels == 1 || channels == 2 || channels == 4 ? b * channels : 0;
    /* UNORM_INT8X1 .. SNORM_INT16X4: 8-bit then 16-bit, each in 1, 2 and 4 channels. */
    if (format >= CU_AD_FORMAT_UNORM_INT8X1 && format <= CU_AD_FORMAT_SNORM_INT16X4) {
        unsigned i = (unsigned)(format - CU_AD_FORMAT_UNORM_INT8X1);
        unsigned n = counts[i % 3];

        return channels == n ? (i % 6 < 3 ? 1 : 2) * n : 0;
    }
    if (format == CU_AD_FORMAT_UNORM_INT_101010_2)
        return channels == 4 ? 4 : 0;
    return 0;
}

int ds_array_format_refused(int format)
{
    return (format >= CU_AD_FORMAT_BC1_UNORM && format <= CU_AD_FORMAT_Y416) ||
           (format >= CU_AD_FORMAT_Y444_PLANAR8 &&
            format <= CU_AD_FORMAT_YUV444_16bit_SemiPlanar);
}

static uint64_t halve(uint64_t v, unsigned level)
{
    if (v == 0)
        return 0;
    v = level >= 64 ? 0 : v >> level;
    return v ? v : 1;
}

void ds_array_level(uint64_t width, uint64_t height, uint64_t depth, int layered,
                    unsigned level, uint64_t out[3])
{
    out[0] = halve(width, level);
    out[1] = halve(height, level);
    out[2] = layered ? depth : halve(depth, level);
}

unsigned ds_array_max_levels(uint64_t width, uint64_t height, uint64_t depth, int layered)
{
    uint64_t m = width > height ? width : height;
    unsigned n = 1;

    if (!layered && depth > m)
        m = depth;
    while (m > 1) {
        m >>= 1;
        n++;
    }
    return n;
}

uint64_t ds_array_bytes(uint64_t width, uint64_t height, uint64_t depth, unsigned elem)
{
    return width * (height ? height : 1) * (depth ? depth : 1) * elem;
}
