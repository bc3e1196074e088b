/* The device facts NVML serves a tenant (ds_devfacts.h): their bounds, and the check the
 * client makes of what the executor sent. */
#include "ds_devfacts.h"

#include <string.h>

static const uint64_t bound[DS_FACT_COUNT] = {
#define DS_DEVFACT_BOUND(name, max) [DS_FACT_##name] = (max),
    DS_DEVFACTS(DS_DEVFACT_BOUND)
#undef DS_DEVFACT_BOUND
};

void ds_devfacts_set(struct ds_devfacts *d, enum ds_devfact f, uint64_t v)
{
    d->v[f] = v;
    d->served |= 1ull << f;
}

/* Printable ASCII, NUL-terminated within its room: what NVML's strings are. */
static int good_text(const char *s)
{
    for (size_t i = 0; i < DS_FACT_TEXT_LEN; i++) {
        if (s[i] == '\0')
            return 1;
        if (s[i] < 0x20 || s[i] > 0x7e)
            return 0;
    }
    return 0;
}

unsigned ds_devfacts_sanitize(struct ds_devfacts *d)
{
    unsigned dropped = 0;

    for (unsigned f = DS_FACT_COUNT; f < 64; f++)
        if (d->served & (1ull << f)) {
            d->served &= ~(1ull << f);
            dropped++;
        }
    for (unsigned f = 0; f < DS_FACT_COUNT; f++) {
        if (!(d->served & (1ull << f))) {
            d->v[f] = 0;
        } else if (d->v[f] > bound[f]) {
            d->served &= ~(1ull << f);
            d->v[f] = 0;
            dropped++;
        }
    }
    for (unsigned i = 0; i < DS_TEXT_COUNT; i++) {
        if (!good_text(d->text[i])) {
            memset(d->text[i], 0, sizeof(d->text[i]));
            dropped++;
        }
    }
    if (d->ncpu_words > DS_FACT_CPU_WORDS_ROOM) {
        d->ncpu_words = 0;
        dropped++;
    }
    if (d->nnode_words > DS_FACT_NODE_WORDS_ROOM) {
        d->nnode_words = 0;
        dropped++;
    }
    return dropped;
}
