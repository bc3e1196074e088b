/* Replies waiting on the device must not put the executor to sleep for good: a device
 * that faulted never runs the host function that would wake it (seen on the H100: a
 * tenant whose kernel wrote through a wild pointer hung in its synchronisation), so with
 * fences armed ds__waits_arm always gives a time to look again. */
#include "waits.h"

#include "ds_clock.h"
#include "ds_error.h"

#include <criterion/criterion.h>
#include <stdlib.h>

/* A fence as the cuda backend arms one: woken by the device, no time of its own. */
struct ds_bfence {
    int armed;
};

static int query(struct ds_backend *b, struct ds_bfence *f)
{
    (void)b;
    (void)f;
    return DS_ENOTREADY;
}

static int arm(struct ds_backend *b, struct ds_bfence *f, int efd, uint64_t *wake_ns)
{
    (void)b;
    (void)efd;
    f->armed = 1;
    *wake_ns = 0;
    return 0;
}

static void destroy(struct ds_backend *b, struct ds_bfence *f)
{
    (void)b;
    free(f);
}

static const struct ds_backend_ops ops = {
    .name = "fake", .fence_query = query, .fence_arm = arm, .fence_destroy = destroy,
};

Test(fence_look, no_waits_no_wake_up)
{
    struct ds_waits w;

    cr_assert_eq(ds__waits_init(&w), 0);
    cr_expect_eq(ds__waits_arm(&w, &ops, NULL), 0);
    ds__waits_fini(&w);
}

Test(fence_look, an_armed_fence_still_gives_a_time_to_look_again)
{
    struct ds_waits w;
    struct ds_call call = { .proc = 1, .xid = 7 };
    struct ds_bfence *f = calloc(1, sizeof(*f));
    uint64_t now, again;

    cr_assert_eq(ds__waits_init(&w), 0);
    cr_assert_eq(ds__waits_add(&w, &ops, NULL, &call, f), 0);
    now = ds_now_ns();
    again = ds__waits_arm(&w, &ops, NULL);
    cr_expect(f->armed, "the fence was armed");
    cr_expect_gt(again, now, "a time to look again, not a sleep without end");
    cr_expect_leq(again - now, 1000000000ull, "and soon: %llu ns", (unsigned long long)(again - now));
    /* Armed already: the next sleep looks again too. */
    cr_expect_neq(ds__waits_arm(&w, &ops, NULL), 0);
    ds__waits_drop(&w, &ops, NULL);
    ds__waits_fini(&w);
}
