#include "ds_recmark.h"

#include "ds_error.h"

int ds_recmark_scan(struct ds_recmark *m, const void *p, size_t n)
{
    const unsigned char *b = p;

    while (n > 0) {
        if (m->left > 0) {
            size_t skip = n < m->left ? n : m->left;

            m->left -= (uint32_t)skip;
            b += skip;
            n -= skip;
            continue;
        }
        m->mark = (m->mark << 8) | *b++;
        n--;
        if (++m->have < 4)
            continue;
        m->left = m->mark & 0x7fffffffu;
        m->have = 0;
        m->mark = 0;
        if (m->left % 4 != 0)
            return DS_EPROTO;
    }
    return 0;
}
