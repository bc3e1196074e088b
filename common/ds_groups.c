#include "ds_groups.h"

#include <stdio.h>

void ds_groups_format(uint64_t groups, unsigned group_size, char *buf, size_t len)
{
    size_t off;
    int i = 0;

    if (groups == 0) {
        snprintf(buf, len, "the whole device");
        return;
    }
    off = (size_t)snprintf(buf, len, "SM groups");
    while (i < 64 && off < len) {
        int j = i;

        if (!(groups >> i & 1)) {
            i++;
            continue;
        }
        while (j + 1 < 64 && (groups >> (j + 1) & 1))
            j++;
        off += (size_t)snprintf(buf + off, len - off, j > i ? " %d-%d" : " %d", i, j);
        i = j + 1;
    }
    if (off < len)
        snprintf(buf + off, len - off, " (%u SMs)",
                 (unsigned)__builtin_popcountll(groups) * group_size);
}
