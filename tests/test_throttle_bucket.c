/* The token bucket behind kernel-time quotas (server/control/throttle.h), on made-up
 * steps: a tenant busy all the time runs about PCT percent of it, in bursts; a tenant
 * within its share is never held; time held is not charged, but for the first step
 * after the gate closed; lifting the limit releases. */
#include "throttle.h"

#include <criterion/criterion.h>

#define MS 1000000ull

/* Steps of 5 ms for `ms`, the tenant busy whenever it is not held; returns the share of
 * the time it ran. */
static double run_busy(struct ds_throttle *t, unsigned pct, uint64_t *kernel_ns, int ms)
{
    uint64_t ran = 0;
    int held = t->held;

    for (int i = 0; i < ms / 5; i++) {
        if (!held) {
            *kernel_ns += 5 * MS;
            ran += 5 * MS;
        }
        held = ds_throttle_step(t, pct, *kernel_ns, 5 * MS, held);
    }
    return (double)ran / ((double)ms * MS);
}

Test(throttle_bucket, a_busy_tenant_runs_its_share_in_bursts)
{
    struct ds_throttle t = { 0 };
    uint64_t k = 0;
    double share;

    ds_throttle_step(&t, 25, k, 0, 0);
    share = run_busy(&t, 25, &k, 500);
    cr_expect(share > 0.3, "the burst first: %.2f", share);
    share = run_busy(&t, 25, &k, 20000);
    cr_expect(share > 0.23 && share < 0.27, "25%% over 20 s, ran %.3f", share);
}

Test(throttle_bucket, a_tenant_within_its_share_is_never_held)
{
    struct ds_throttle t = { 0 };
    uint64_t k = 0;

    ds_throttle_step(&t, 50, k, 0, 0);
    for (int i = 0; i < 4000; i++) {
        k += i % 4 == 0 ? 5 * MS : 0; /* busy a quarter of the time */
        cr_assert_eq(ds_throttle_step(&t, 50, k, 5 * MS, 0), 0, "held at step %d", i);
    }
}

Test(throttle_bucket, time_held_is_not_charged_but_its_first_step_and_lifting_releases)
{
    struct ds_throttle t = { 0 };
    uint64_t k = 0;

    ds_throttle_step(&t, 10, k, 0, 0);
    while (!t.held)
        ds_throttle_step(&t, 10, k += 5 * MS, 5 * MS, 0);
    /* Held: its queued work looks in flight, but that is not charged, so it comes back. */
    int steps = 0;
    while (t.held && steps < 1000) {
        ds_throttle_step(&t, 10, k += 5 * MS, 5 * MS, 1);
        steps++;
    }
    cr_expect_lt(steps, 1000, "never released");
    /* 10% of 50 ms to earn back at 0.5 ms a step, after the overdraft of the step that
     * closed the gate and the 5 ms of the first step held, which is charged: what
     * started before the close runs on. */
    cr_expect(steps >= 20 && steps <= 30, "released after %d steps", steps);
    while (!t.held)
        ds_throttle_step(&t, 10, k += 5 * MS, 5 * MS, 0);
    cr_expect_eq(ds_throttle_step(&t, 0, k += 5 * MS, 5 * MS, 1), 0, "no limit, no hold");
    cr_expect_eq(ds_throttle_step(&t, 100, k += 5 * MS, 5 * MS, 0), 0);
}
