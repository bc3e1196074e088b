/* tpot-first's placements on made-up predictor samples, tick by tick, without a server:
 * prefill confined to a quarter of the SMs while another tenant decodes, and a decoder
 * never confined for its own decoding. */
#include "policy.h"

#include <criterion/criterion.h>

#define GROUPS 16
#define HOLD_TICKS 40 /* tpot-first keeps prefill confined 200 ms after the last decode */
#define QUARTER ((1ull << (GROUPS / 4)) - 1)

static struct ds_sched_tenant t[3];
static struct ds_sched_view v = { .sm_groups = GROUPS, .sm_group_size = 8, .t = t };

/* Tenant i's sample for this tick: busy or not, with kernels of kernel_us. */
static void sample(int i, int busy, double kernel_us)
{
    t[i].inflight = busy ? 4 : 0;
    t[i].new_launches = busy ? 16 : 0;
    t[i].new_done = busy ? 16 : 0;
    t[i].kernel_us = kernel_us;
}

/* n ticks of: decoder 0 at dec_us (0: idle), tenant 1 busy with 2 ms kernels, and, with
 * three tenants, decoder 2 at other_us (0: idle). */
static void ticks(int n, double dec_us, double other_us)
{
    for (int k = 0; k < n; k++) {
        sample(0, dec_us > 0, dec_us);
        sample(1, 1, 2000);
        if (v.n == 3)
            sample(2, other_us > 0, other_us);
        ds_policy_tpot_first.on_tick(&v);
    }
}

static void start(int n)
{
    t[0] = (struct ds_sched_tenant){ .id = 0, .klass = DS_SCHED_LATENCY };
    t[1] = (struct ds_sched_tenant){ .id = 1, .klass = DS_SCHED_BEST_EFFORT };
    t[2] = (struct ds_sched_tenant){ .id = 2, .klass = DS_SCHED_LATENCY };
    v.n = n;
    ds_policy_tpot_first.on_start(&v);
}

Test(tpot_first, prefill_is_confined_while_a_decoder_works_and_let_go_after)
{
    start(2);
    ticks(10, 100, 0);
    cr_assert_eq(t[0].groups, 0, "the decoder keeps every SM");
    cr_assert_eq(t[1].groups, QUARTER, "the trainer is on a quarter of the SMs");
    cr_assert_eq(t[1].gated, 0, "prefill is never held");
    ticks(HOLD_TICKS - 1, 0, 0);
    cr_assert_eq(t[1].groups, QUARTER, "a pause shorter than the hold keeps the placement");
    ticks(2, 0, 0);
    cr_assert_eq(t[1].groups, 0, "the decoder quiet for the hold, the trainer has every SM");
}

/* Its own prompt's kernels (4x its shortest and more) make it count as prefill, with
 * nobody else decoding: it stays on every SM, and the trainer stays confined, since the
 * decoder will decode again in a moment. */
Test(tpot_first, a_lone_decoder_is_not_confined_by_its_own_decoding)
{
    start(2);
    ticks(10, 100, 0);
    ticks(5, 800, 0);
    cr_assert_eq(t[0].groups, 0, "a lone decoder's prompt was confined for its own sake");
    cr_assert_eq(t[1].groups, QUARTER);
    ticks(5, 100, 0);
    cr_assert_eq(t[0].groups, 0);
    cr_assert_eq(t[1].groups, QUARTER);
}

/* With a second decoder at work, a decoder's prompt is prefill like any other. */
Test(tpot_first, a_decoders_prompt_is_confined_while_another_decodes)
{
    start(3);
    ticks(10, 100, 120);
    ticks(5, 800, 120);
    cr_assert_eq(t[0].groups, QUARTER, "its prompt slows the other decoder's steps");
    cr_assert_eq(t[2].groups, 0);
    ticks(3, 100, 120);
    cr_assert_eq(t[0].groups, 0, "decoding again, it has every SM");
}

/* The last decoder gone, those left are placed for each other at once. */
Test(tpot_first, the_last_decoder_leaving_lets_prefill_go)
{
    start(2);
    ticks(10, 100, 0);
    cr_assert_eq(t[1].groups, QUARTER);
    t[0] = t[1];
    v.n = 1;
    ds_policy_tpot_first.on_tenant_leave(&v);
    cr_assert_eq(t[0].groups, 0);
}

/* A tenant joining a slot inherits nothing of the decoder that had it. */
Test(tpot_first, a_new_tenant_in_a_decoders_slot_is_not_taken_for_it)
{
    start(2);
    ticks(10, 100, 0);
    t[0] = (struct ds_sched_tenant){ .id = 0, .klass = DS_SCHED_BEST_EFFORT };
    ds_policy_tpot_first.on_tenant_join(&v, 0);
    ticks(1, 0, 0);
    cr_assert_eq(t[1].groups, 0, "the trainer was kept confined for a decoder that left");
}

/* A decoder with an SLO whose kernels a neighbour stretched (the same as a prompt of its
 * own would, by kernel times alone) is still decoding: the trainer stays confined.  On an
 * H200 (run 129) the trainer was let go instead, for good. */
Test(tpot_first, a_decoder_with_an_slo_stays_protected_when_its_kernels_stretch)
{
    start(2);
    t[0].slo_us = 5000;
    ticks(10, 100, 0);
    cr_assert_eq(t[1].groups, QUARTER);
    ticks(HOLD_TICKS * 3, 900, 0);
    cr_assert_eq(t[1].groups, QUARTER, "the trainer was let onto every SM");
    cr_assert_eq(t[0].groups, 0, "the decoder keeps every SM");
}
