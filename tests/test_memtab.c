#include "ds_error.h"
#include "ds_memtab.h"

#include <criterion/criterion.h>

static struct ds_memtab t;

static void setup(void)
{
    ds_memtab_init(&t);
}

static void teardown(void)
{
    ds_memtab_destroy(&t);
}

TestSuite(memtab, .init = setup, .fini = teardown);

static int add(uint64_t base, uint64_t size)
{
    struct ds_memtab_entry e = { .base = base, .size = size };

    return ds_memtab_insert(&t, &e);
}

Test(memtab, finds_whole_ranges_only)
{
    cr_assert_eq(add(0x1000, 0x100), 0);
    cr_assert_eq(add(0x3000, 0x100), 0);
    cr_assert_not_null(ds_memtab_find(&t, 0x1000, 0x100));
    cr_assert_not_null(ds_memtab_find(&t, 0x10ff, 1));
    cr_assert_null(ds_memtab_find(&t, 0x10ff, 2), "a range running past the end");
    cr_assert_null(ds_memtab_find(&t, 0x1100, 0), "one past the end");
    cr_assert_null(ds_memtab_find(&t, 0x0fff, 1), "just before");
    cr_assert_null(ds_memtab_find(&t, 0x2000, 1), "between ranges");
    cr_assert_eq(ds_memtab_find(&t, 0x3050, 0x10)->base, 0x3000);
}

Test(memtab, refuses_overlap_and_overflow)
{
    cr_assert_eq(add(0x1000, 0x100), 0);
    cr_assert_eq(add(0x10ff, 0x10), DS_EINVAL);
    cr_assert_eq(add(0x0f00, 0x101), DS_EINVAL);
    cr_assert_eq(add(0x1100, 0x10), 0, "adjacent is fine");
    cr_assert_eq(add(UINT64_MAX - 4, 16), DS_EINVAL);
    cr_assert_eq(add(0x9000, 0), DS_EINVAL);
}

Test(memtab, find_never_overflows)
{
    cr_assert_eq(add(UINT64_MAX - 0x1000, 0x1000), 0);
    cr_assert_not_null(ds_memtab_find(&t, UINT64_MAX - 0x1000, 0x1000));
    cr_assert_null(ds_memtab_find(&t, UINT64_MAX - 0x10, UINT64_MAX));
    cr_assert_null(ds_memtab_find(&t, UINT64_MAX - 1, 2));
}

Test(memtab, remove_and_overlap)
{
    struct ds_memtab_entry out;

    for (uint64_t i = 0; i < 100; i++)
        cr_assert_eq(add(0x10000 + i * 0x1000, 0x800), 0);
    cr_assert_eq(ds_memtab_total(&t), 100 * 0x800);
    cr_assert_eq(ds_memtab_remove(&t, 0x10800, NULL), DS_ERANGE, "not a base");
    cr_assert_eq(ds_memtab_remove(&t, 0x15000, &out), 0);
    cr_assert_eq(out.size, 0x800);
    cr_assert_null(ds_memtab_find(&t, 0x15000, 0));
    cr_assert_eq(ds_memtab_overlap(&t, 0x15800, 0x1000)->base, 0x16000);
    cr_assert_null(ds_memtab_overlap(&t, 0x15000, 0x800));
    cr_assert_eq(t.n, 99);
}

Test(memtab, first_fit_finds_the_lowest_aligned_gap)
{
    uint64_t a;

    cr_assert_eq(ds_memtab_first_fit(&t, 0x1000, 0x9000, 0x100, 0x100, &a), 0);
    cr_assert_eq(a, 0x1000, "an empty table: the start");
    cr_assert_eq(add(0x0f00, 0x180), 0);  /* reaches into the window from below */
    cr_assert_eq(add(0x1200, 0x100), 0);
    cr_assert_eq(add(0x1400, 0x1000), 0);
    cr_assert_eq(ds_memtab_first_fit(&t, 0x1000, 0x9000, 0x100, 0x100, &a), 0);
    cr_assert_eq(a, 0x1100, "after the range that started below the window");
    cr_assert_eq(ds_memtab_first_fit(&t, 0x1000, 0x9000, 0x200, 0x100, &a), 0);
    cr_assert_eq(a, 0x2400, "too big for the holes: after the last range");
    cr_assert_eq(ds_memtab_first_fit(&t, 0x1000, 0x2500, 0x200, 0x100, &a), DS_ENOMEM);
    cr_assert_eq(ds_memtab_first_fit(&t, 0x1000, 0x9000, UINT64_MAX, 0x100, &a), DS_ENOMEM);
}
