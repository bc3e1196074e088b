#include "ds_box.h"

#include "ds_error.h"

/* a * b + c into *out; 0, or -1 on overflow. */
static int mul_add(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    if (b != 0 && a > UINT64_MAX / b)
        return -1;
    if (a * b > UINT64_MAX - c)
        return -1;
    *out = a * b + c;
    return 0;
}

/* Whether the rows (and slices) of s stay apart. */
static int apart(const struct ds_box_side *s, uint64_t width, uint64_t height, uint64_t depth)
{
    if ((height > 1 || depth > 1) &&
        (s->x > UINT64_MAX - width || s->pitch < s->x + width))
        return 0;
    if (depth > 1 && (s->y > UINT64_MAX - height || s->rows < s->y + height))
        return 0;
    return 1;
}

int ds_box_span(const struct ds_box_side *s, uint64_t width, uint64_t height, uint64_t depth,
                uint64_t *first, uint64_t *extent)
{
    uint64_t row0, offset, last_row;

    if (width == 0 || height == 0 || depth == 0 || !apart(s, width, height, depth))
        return DS_EINVAL;
    if (mul_add(s->z, s->rows, s->y, &row0) != 0 || mul_add(row0, s->pitch, s->x, &offset) != 0 ||
        offset > UINT64_MAX - s->ptr)
        return DS_EINVAL;
    if (mul_add(depth - 1, depth > 1 ? s->rows : 0, height - 1, &last_row) != 0 ||
        mul_add(last_row, height > 1 || depth > 1 ? s->pitch : 0, width, extent) != 0 ||
        *extent > UINT64_MAX - (s->ptr + offset))
        return DS_EINVAL;
    *first = s->ptr + offset;
    return 0;
}
