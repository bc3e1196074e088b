#include "ds_slo.h"

#include "ds_error.h"

#include <stdio.h>

int ds_slo_parse(const char *ms, uint32_t *us)
{
    uint64_t v = 0;
    int digits = 0, decimals = -1;

    if (ms == NULL)
        return DS_EINVAL;
    for (const char *p = ms; *p != '\0'; p++) {
        if (*p == '.' && decimals < 0 && digits > 0) {
            decimals = 0;
            continue;
        }
        if (*p < '0' || *p > '9' || decimals == 3)
            return DS_EINVAL;
        /* Eleven digits are over an hour however they are split: no overflow below. */
        if (++digits > 11)
            return DS_EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
        decimals += decimals >= 0;
    }
    if (digits == 0 || decimals == 0)
        return DS_EINVAL;
    for (int d = decimals < 0 ? 0 : decimals; d < 3; d++)
        v *= 10;
    if (v == 0 || v > DS_SLO_MAX_US)
        return DS_EINVAL;
    *us = (uint32_t)v;
    return 0;
}

void ds_slo_format(uint32_t us, char *buf, size_t len)
{
    char frac[4];
    int n;

    if (us % 1000 == 0) {
        snprintf(buf, len, "%u", us / 1000);
        return;
    }
    n = snprintf(frac, sizeof(frac), "%03u", us % 1000);
    while (n > 0 && frac[n - 1] == '0')
        frac[--n] = '\0';
    snprintf(buf, len, "%u.%s", us / 1000, frac);
}

uint32_t ds_slo_ms_ceil(uint32_t us)
{
    return us / 1000 + (us % 1000 != 0);
}
