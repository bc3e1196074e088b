/* The check a tenant makes of the device facts the server sends for NVML
 * (common/ds_devfacts.h): what is out of bounds or malformed is left unserved, the rest
 * kept as it came. */
#include "ds_devfacts.h"

#include <criterion/criterion.h>
#include <string.h>

static void good(struct ds_devfacts *d)
{
    memset(d, 0, sizeof(*d));
    ds_devfacts_set(d, DS_FACT_TEMP_GPU, 40);
    ds_devfacts_set(d, DS_FACT_PSTATE, 32);
    ds_devfacts_set(d, DS_FACT_ENERGY, UINT64_MAX);
    strcpy(d->text[DS_TEXT_DRIVER_VERSION], "580.159.04");
    d->cpus[0] = 0xff;
    d->ncpu_words = 1;
    d->nnode_words = DS_FACT_NODE_WORDS_ROOM;
}

Test(devfacts, what_is_well_formed_is_kept)
{
    struct ds_devfacts d, want;

    good(&d);
    want = d;
    cr_expect_eq(ds_devfacts_sanitize(&d), 0);
    cr_expect_eq(memcmp(&d, &want, sizeof(d)), 0);
}

Test(devfacts, values_beyond_their_bounds_are_unserved)
{
    struct ds_devfacts d;

    good(&d);
    d.v[DS_FACT_TEMP_GPU] = 1001;
    d.v[DS_FACT_PSTATE] = 33;
    d.v[DS_FACT_BOARD_ID] = 7; /* not served: reads 0 */
    d.served |= 1ull << DS_FACT_COUNT;
    cr_expect_eq(ds_devfacts_sanitize(&d), 3);
    cr_expect_eq(d.served, 1ull << DS_FACT_ENERGY, "served %#llx",
                 (unsigned long long)d.served);
    cr_expect_eq(d.v[DS_FACT_TEMP_GPU], 0);
    cr_expect_eq(d.v[DS_FACT_BOARD_ID], 0);
    cr_expect_eq(d.v[DS_FACT_ENERGY], UINT64_MAX);
}

Test(devfacts, malformed_texts_and_counts_are_unserved)
{
    struct ds_devfacts d;

    good(&d);
    strcpy(d.text[DS_TEXT_SERIAL], "abc\n");
    memset(d.text[DS_TEXT_VBIOS], 'x', DS_FACT_TEXT_LEN); /* no NUL */
    d.text[DS_TEXT_NVML_VERSION][0] = (char)0xc3;
    d.ncpu_words = DS_FACT_CPU_WORDS_ROOM + 1;
    d.nnode_words = DS_FACT_NODE_WORDS_ROOM + 1;
    cr_expect_eq(ds_devfacts_sanitize(&d), 5);
    cr_expect_str_eq(d.text[DS_TEXT_SERIAL], "");
    cr_expect_str_eq(d.text[DS_TEXT_VBIOS], "");
    cr_expect_str_eq(d.text[DS_TEXT_NVML_VERSION], "");
    cr_expect_str_eq(d.text[DS_TEXT_DRIVER_VERSION], "580.159.04");
    cr_expect_eq(d.ncpu_words, 0);
    cr_expect_eq(d.nnode_words, 0);
}
