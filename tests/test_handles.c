#include "handles.h"

#include <criterion/criterion.h>

static struct ds_handles t;
static int objs[1000];

TestSuite(handles, .init = NULL);

Test(handles, round_trip_and_type_check)
{
    uint64_t a, b;

    ds_handles_init(&t);
    a = ds_handles_add(&t, DS_H_STREAM, &objs[0]);
    b = ds_handles_add(&t, DS_H_EVENT, &objs[1]);
    cr_assert(a > 2 && b > 2, "never collides with the special stream values");
    cr_assert_eq(ds_handles_get(&t, a, DS_H_STREAM), &objs[0]);
    cr_assert_null(ds_handles_get(&t, a, DS_H_EVENT), "wrong type");
    cr_assert_null(ds_handles_get(&t, 0, DS_H_STREAM));
    cr_assert_null(ds_handles_get(&t, 1, DS_H_STREAM));
    cr_assert_null(ds_handles_get(&t, a + 1000, DS_H_STREAM), "made-up index");
    cr_assert_null(ds_handles_get(&t, ~0ull, DS_H_CTX));
    ds_handles_destroy(&t);
}

Test(handles, stale_handles_are_refused)
{
    uint64_t a, c;

    ds_handles_init(&t);
    a = ds_handles_add(&t, DS_H_CTX, &objs[0]);
    cr_assert_eq(ds_handles_remove(&t, a, DS_H_CTX), &objs[0]);
    cr_assert_null(ds_handles_remove(&t, a, DS_H_CTX), "double destroy");
    c = ds_handles_add(&t, DS_H_CTX, &objs[2]);
    cr_assert_neq(a, c, "a reused slot gets a new generation");
    cr_assert_null(ds_handles_get(&t, a, DS_H_CTX));
    cr_assert_eq(ds_handles_get(&t, c, DS_H_CTX), &objs[2]);
    ds_handles_destroy(&t);
}

Test(handles, iteration_sees_each_live_handle_once)
{
    uint64_t h[1000], got;
    uint32_t cur = 0;
    int seen = 0;

    ds_handles_init(&t);
    for (int i = 0; i < 1000; i++)
        h[i] = ds_handles_add(&t, (i % 2) ? DS_H_EVENT : DS_H_STREAM, &objs[i]);
    for (int i = 0; i < 1000; i += 4)
        ds_handles_remove(&t, h[i], DS_H_STREAM);
    while ((got = ds_handles_next(&t, DS_H_STREAM, &cur)) != 0) {
        int *o = ds_handles_remove(&t, got, DS_H_STREAM);

        cr_assert_not_null(o);
        cr_assert_eq((o - objs) % 4, 2);
        seen++;
    }
    cr_assert_eq(seen, 250);
    ds_handles_destroy(&t);
}
