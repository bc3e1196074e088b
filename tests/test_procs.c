/* The procedure list is the one source for dispatch, stubs and names: check it is
 * consistent with itself and with the .x numbering. */
#include "ds_procs.h"

#include <criterion/criterion.h>
#include <string.h>

#define COUNT_S(n, P, A, R) +1
#define COUNT_B(n, P, A) +1
#define LIST_S(n, P, A, R) { P, #n, 0 },
#define LIST_B(n, P, A) { P, #n, 1 },

static const struct {
    unsigned long proc;
    const char *name;
    int batched;
} procs[] = { DS_PROCS(LIST_S, LIST_B) };

Test(procs, every_entry_has_its_name_and_kind)
{
    size_t n = 0 DS_PROCS(COUNT_S, COUNT_B);

    cr_assert_eq(n, sizeof(procs) / sizeof(procs[0]));
    for (size_t i = 0; i < n; i++) {
        cr_assert(procs[i].proc > 0 && procs[i].proc <= DS_PROC_MAX);
        cr_assert_str_eq(ds_proc_name(procs[i].proc), procs[i].name);
        cr_assert_eq(ds_proc_batched(procs[i].proc), procs[i].batched, "%s", procs[i].name);
        for (size_t j = 0; j < i; j++)
            cr_assert_neq(procs[i].proc, procs[j].proc, "%s and %s share a number",
                          procs[i].name, procs[j].name);
    }
}

Test(procs, unknown_numbers_are_unknown)
{
    cr_assert_null(ds_proc_name(0));
    cr_assert_null(ds_proc_name(DS_PROC_MAX + 1));
    cr_assert_null(ds_proc_name(9));
    cr_assert_eq(ds_proc_batched(9), -1);
    cr_assert_eq(ds_proc_batched(~0ul), -1);
}

Test(procs, async_work_is_batched_and_queries_are_not)
{
    cr_assert_eq(ds_proc_batched(DS_MEMCPY_HTOD_ASYNC), 1);
    cr_assert_eq(ds_proc_batched(DS_EVENT_RECORD), 1);
    cr_assert_eq(ds_proc_batched(DS_MEMCPY_DTOH), 0);
    cr_assert_eq(ds_proc_batched(DS_STREAM_QUERY), 0);
}
