/* slo-aware's levels on made-up predictor samples, tick by tick, without a server: how
 * it fences best-effort work when a decoder (latency-critical, busy all the time) slows
 * down, how it probes its way back when the tenant has no SLO, and how it keeps a floor
 * for a sparse inference service and holds a flood only while the service has work. */
#include "policy.h"

#include <criterion/criterion.h>
#include <string.h>

#define GROUPS 16
#define TICKS_PER_S 200 /* slo-aware's tick is 5 ms */

/* One decoder (latency-critical) and one trainer (best-effort). */
static struct ds_sched_tenant t[2];
static struct ds_sched_view v = { .sm_groups = GROUPS, .sm_group_size = 8, .n = 2, .t = t };

static void setup(void)
{
    t[0] = (struct ds_sched_tenant){ .id = 0, .klass = DS_SCHED_LATENCY };
    t[1] = (struct ds_sched_tenant){ .id = 1, .klass = DS_SCHED_BEST_EFFORT };
    ds_policy_slo_aware.on_start(&v);
}

TestSuite(slo_aware, .init = setup);

/* The decoder's kernel time in the i-th tick, as the predictor would estimate it: noisy,
 * as a batch-1 decoder's mix of small kernels makes it.  Beside a trainer that has every
 * SM it takes 140 us (1.4x alone); on the SMs the trainer leaves at level 1, 115 us, in
 * the band where the policy neither raises nor lowers: one tick in ten at its alone
 * speed and one slowed down. */
static double pressed_us(int i)
{
    return i % 10 == 0 ? 100 : 140;
}

static double band_us(int i)
{
    return i % 10 == 0 ? 100 : i % 10 == 5 ? 130 : 115;
}

static void tick(double kernel_us, int trainer_busy)
{
    t[0].inflight = 4;
    t[0].new_launches = 20;
    t[0].new_done = 20;
    t[0].kernel_us = kernel_us;
    t[0].rate = 1e6 / kernel_us; /* one kernel after another: busy all the time */
    t[1].inflight = trainer_busy ? 16 : 0;
    t[1].new_launches = trainer_busy ? 8 : 0;
    t[1].new_done = trainer_busy ? 8 : 0;
    ds_policy_slo_aware.on_tick(&v);
}

/* The decoder alone for a second: its baseline. */
static void learn_alone(void)
{
    for (int i = 0; i < TICKS_PER_S; i++)
        tick(100, 0);
    cr_assert_eq(t[1].groups, 0, "nothing is fenced while the decoder runs at its speed");
}

/* Ticks with the trainer busy and the decoder's kernel time from `fenced` while the
 * trainer is fenced, from `whole` while it has every SM: how many moves from a fence to every SM (probes, or
 * lowerings), and how many ticks the trainer spent on every SM. */
static void run(int ticks, double (*fenced)(int), double (*whole)(int), int *lowered,
                int *whole_ticks)
{
    *lowered = *whole_ticks = 0;
    for (int i = 0; i < ticks; i++) {
        uint64_t before = t[1].groups;

        tick(t[1].groups == 0 ? whole(i) : fenced(i), 1);
        *lowered += before != 0 && t[1].groups == 0;
        *whole_ticks += t[1].groups == 0;
    }
}

Test(slo_aware, a_slowed_decoder_fences_the_trainer_to_three_quarters_without_an_slo)
{
    int lowered, whole;

    learn_alone();
    run(TICKS_PER_S / 2, pressed_us, pressed_us, &lowered, &whole);
    cr_expect_eq(t[1].groups, ds_groups_range(0, 12), "3/4 of the SMs: %#llx",
                 (unsigned long long)t[1].groups);
    cr_expect_lt(whole, 10, "raised within a few ticks, took %d", whole);
    cr_expect_eq(t[1].gated, 0, "never held without an SLO");
}

/* ResNet-50 inference beside a GEMM flood ran at 3.7x its alone median with the flood
 * on three quarters of the SMs (H200, issue 28): severe slowdowns take the levels past
 * three quarters without an SLO, until the decoder is only mildly slowed; mild
 * pressure there holds the level, and nothing is held at its gate. */
static double by_fence(int i)
{
    unsigned keep = (unsigned)__builtin_popcountll(t[1].groups);

    (void)i;
    return keep == 0 ? 370 : keep > 8 ? 300 : keep > 4 ? 150 : 105;
}

Test(slo_aware, a_severely_slowed_decoder_fences_the_trainer_past_three_quarters)
{
    int lowered, whole;

    learn_alone();
    run(TICKS_PER_S / 2, by_fence, by_fence, &lowered, &whole);
    cr_expect_eq(t[1].groups, ds_groups_range(0, 8), "half the SMs: %#llx",
                 (unsigned long long)t[1].groups);
    cr_expect_eq(t[1].gated, 0);
    run(2 * TICKS_PER_S, by_fence, by_fence, &lowered, &whole);
    cr_expect_eq(t[1].groups, ds_groups_range(0, 8), "mild pressure holds half: %#llx",
                 (unsigned long long)t[1].groups);
}

/* Slowed severely on any fence, the decoder gets best-effort kernels held while it works. */
static double always_severe(int i)
{
    (void)i;
    return 300;
}

Test(slo_aware, a_decoder_slowed_severely_on_every_fence_gets_the_trainer_held)
{
    int lowered, whole;

    learn_alone();
    run(TICKS_PER_S, always_severe, always_severe, &lowered, &whole);
    cr_expect_eq(t[1].gated, 1, "held: %s", t[1].why);
}

/* Without the probe, one burst of pressure left the trainer fenced for good while the
 * decoder sat in the band (on the H100, runs 95 and 100). */
Test(slo_aware, without_an_slo_a_fence_is_probed_away_once_the_pressure_is_gone)
{
    int lowered, whole;

    learn_alone();
    run(TICKS_PER_S / 2, band_us, pressed_us, &lowered, &whole);
    cr_assert_eq(t[1].groups, ds_groups_range(0, 12));
    run(TICKS_PER_S / 2, band_us, band_us, &lowered, &whole);
    cr_expect_eq(t[1].groups, ds_groups_range(0, 12), "no probe before a second in the band");
    run(TICKS_PER_S, band_us, band_us, &lowered, &whole);
    cr_expect_eq(lowered, 1, "one probe, %d", lowered);
    cr_expect_eq(t[1].groups, 0, "every SM lent again");
    run(5 * TICKS_PER_S, band_us, band_us, &lowered, &whole);
    cr_expect_eq(whole, 5 * TICKS_PER_S, "the probe held: the decoder stays in the band");
}

Test(slo_aware, a_probe_that_brings_pressure_back_is_tried_ever_more_rarely)
{
    int lowered, whole;

    learn_alone();
    run(20 * TICKS_PER_S, band_us, pressed_us, &lowered, &whole);
    /* After 1, 2, 4 and 8 s at the fence (about 1, 3, 7 and 15 s in). */
    cr_expect(lowered >= 3 && lowered <= 5, "probes in 20 s: %d", lowered);
    cr_expect_lt(whole, 20 * TICKS_PER_S / 50, "the decoder pressed in %d of %d ticks", whole,
                 20 * TICKS_PER_S);
    cr_expect_eq(t[1].groups, ds_groups_range(0, 12), "fenced at the end");
}

Test(slo_aware, every_sm_is_lent_back_once_the_decoder_stops)
{
    int lowered, whole;

    learn_alone();
    run(TICKS_PER_S / 2, band_us, pressed_us, &lowered, &whole);
    cr_assert_neq(t[1].groups, 0);
    for (int i = 0; i < TICKS_PER_S / 2; i++) {
        t[0].inflight = t[0].new_launches = t[0].new_done = 0;
        t[1].new_launches = 8;
        ds_policy_slo_aware.on_tick(&v);
    }
    cr_expect_eq(t[1].groups, 0, "every SM once the decoder has paused 200 ms");
}

/* Partition escapes: the trainer's clustered kernels ran on every SM instead of its fence,
 * on the SMs kept for the decoder.  It is held while the decoder works instead. */
Test(slo_aware, a_trainer_whose_kernels_escape_its_fence_is_held_while_the_decoder_works)
{
    int lowered, whole;

    learn_alone();
    run(TICKS_PER_S / 2, pressed_us, pressed_us, &lowered, &whole);
    cr_assert_eq(t[1].groups, ds_groups_range(0, 12));
    cr_assert_eq(t[1].gated, 0);
    t[1].escapes = 3;
    tick(pressed_us(1), 1);
    cr_expect_eq(t[1].gated, 1, "a fence it escapes protects nothing");
    cr_expect_eq(t[1].groups, ds_groups_range(0, 12), "only the gate moves");
    cr_expect_not_null(strstr(t[1].why, "clusters"), "%s", t[1].why);
    for (int i = 0; i < 5; i++) {
        t[0].inflight = t[0].new_launches = t[0].new_done = 0;
        ds_policy_slo_aware.on_tick(&v);
    }
    cr_expect_eq(t[1].gated, 0, "the decoder idle, the trainer runs");
    cr_expect_eq(t[1].groups, ds_groups_range(0, 12));
    tick(pressed_us(1), 1);
    cr_expect_eq(t[1].gated, 1, "held again once the decoder works");
}

/* Escapes from a fence of 8 groups say nothing of a fence of 12. */
Test(slo_aware, a_fence_larger_than_the_one_escaped_fences_as_before)
{
    int i;

    learn_alone();
    for (i = 0; i < TICKS_PER_S && t[1].groups != ds_groups_range(0, 8); i++)
        tick(by_fence(i), 1);
    cr_assert_eq(t[1].groups, ds_groups_range(0, 8), "half the SMs: %#llx",
                 (unsigned long long)t[1].groups);
    t[1].escapes = 1;
    tick(100, 1);
    cr_expect_eq(t[1].gated, 1);
    for (i = 0; i < TICKS_PER_S && t[1].groups == ds_groups_range(0, 8); i++)
        tick(100, 1);
    cr_assert_eq(t[1].groups, ds_groups_range(0, 12), "the decoder at ease: %#llx",
                 (unsigned long long)t[1].groups);
    cr_expect_eq(t[1].gated, 0, "its clusters may fit 12 groups");
    t[1].escapes = 2;
    tick(100, 1);
    cr_expect_eq(t[1].gated, 1, "they did not");
}

/* A tenant joining the slot inherits nothing of the one that escaped. */
Test(slo_aware, a_new_tenant_in_the_slot_of_one_that_escaped_is_not_held)
{
    int lowered, whole;

    learn_alone();
    run(TICKS_PER_S / 2, pressed_us, pressed_us, &lowered, &whole);
    t[1].escapes = 3;
    tick(pressed_us(1), 1);
    cr_assert_eq(t[1].gated, 1);
    t[1] = (struct ds_sched_tenant){ .id = 1, .klass = DS_SCHED_BEST_EFFORT,
                                     .groups = t[1].groups };
    ds_policy_slo_aware.on_tenant_join(&v, 1);
    tick(pressed_us(1), 1);
    cr_expect_eq(t[1].gated, 0);
    cr_expect_eq(t[1].groups, ds_groups_range(0, 12));
}

/* An inference service (latency-critical) whose requests leave gaps, beside a flood
 * (best-effort, always busy): in a tick with a request it has 4 kernels in flight, which
 * take `kernel_us`; it keeps the device busy `share` of the time. */
static void service_tick(int busy, double kernel_us, double share)
{
    t[0].inflight = busy ? 4 : 0;
    t[0].new_launches = t[0].new_done = busy ? 4 : 0;
    t[0].kernel_us = kernel_us;
    t[0].rate = share * 1e6 / kernel_us;
    t[1].inflight = 16;
    t[1].new_launches = t[1].new_done = 8;
    ds_policy_slo_aware.on_tick(&v);
}

/* Its kernels take 1 ms alone, 3 ms beside the flood unless the flood is held (issue 28:
 * ResNet-50 beside a GEMM flood on an H200; before this, the flood ended on an eighth of
 * the SMs, held while requests ran, and kept 0.29x of its speed). */
static double flooded_ms(void)
{
    return t[1].gated ? 1000 : 3000;
}

/* The service alone for a second, then `ticks` ticks beside the flood with a request in
 * one tick of three; counts the ticks the flood was held while the service was idle and
 * the fewest SM groups it had then. */
static void serve(int ticks, double share, int *held_idle, int *fewest)
{
    for (int i = 0; i < TICKS_PER_S; i++) {
        t[0].inflight = 4;
        t[0].new_launches = t[0].new_done = 4;
        t[0].kernel_us = 1000;
        t[0].rate = share * 1e3;
        t[1].inflight = t[1].new_launches = t[1].new_done = 0;
        ds_policy_slo_aware.on_tick(&v);
    }
    *held_idle = 0;
    *fewest = GROUPS;
    for (int i = 0; i < ticks; i++) {
        int busy = i % 3 == 0, n = t[1].groups ? __builtin_popcountll(t[1].groups) : GROUPS;

        service_tick(busy, flooded_ms(), share);
        if (!busy) {
            *held_idle += t[1].gated;
            n = t[1].groups ? __builtin_popcountll(t[1].groups) : GROUPS;
            *fewest = n < *fewest ? n : *fewest;
        }
    }
}

Test(slo_aware, a_slowed_sparse_service_gets_the_flood_held_only_while_it_has_work)
{
    int held_idle, fewest, held_busy = 0;

    serve(2 * TICKS_PER_S, 0.3, &held_idle, &fewest);
    for (int i = 0; i < 30; i++) {
        service_tick(i % 3 == 0, flooded_ms(), 0.3);
        held_busy += i % 3 == 0 && t[1].gated;
    }
    cr_expect_eq(held_busy, 10, "held in %d of the 10 ticks with a request", held_busy);
    cr_expect_eq(held_idle, 0, "never held while the service is idle: %d ticks", held_idle);
    cr_expect_geq(fewest, 12, "the rest of the device while released, %d groups", fewest);
}

/* The floor: groups no best-effort tenant runs on while a sparse latency-critical
 * tenant is about, so that a request arriving after a pause starts at once; sized by how
 * busy the tenant keeps the device, at most a quarter of it. */
Test(slo_aware, a_sparse_service_keeps_a_floor_sized_by_its_demand)
{
    int held_idle, fewest;
    unsigned light, busier;

    serve(TICKS_PER_S, 0.05, &held_idle, &fewest);
    light = GROUPS - (unsigned)__builtin_popcountll(t[1].groups);
    cr_expect(t[1].groups != 0 && (t[1].groups & ~ds_groups_range(0, GROUPS - light)) == 0,
              "the flood on the lower groups: %#llx", (unsigned long long)t[1].groups);
    ds_policy_slo_aware.on_start(&v);
    serve(TICKS_PER_S, 0.3, &held_idle, &fewest);
    busier = GROUPS - (unsigned)__builtin_popcountll(t[1].groups);
    cr_expect(light >= 1 && light < busier && busier <= GROUPS / 4,
              "floors of %u groups at 5%% busy, %u at 30%%", light, busier);
    cr_expect_eq(t[0].groups, 0, "the service itself on every SM");
}

/* Holding ends with the service's work: the first idle tick releases the flood, on the
 * same SMs as before. */
Test(slo_aware, the_flood_is_released_the_first_tick_the_service_is_idle)
{
    int held_idle, fewest;
    uint64_t on;

    serve(TICKS_PER_S, 0.3, &held_idle, &fewest);
    service_tick(1, flooded_ms(), 0.3);
    service_tick(1, flooded_ms(), 0.3);
    cr_assert_eq(t[1].gated, 1, "held while a request runs: %s", t[1].why);
    on = t[1].groups;
    service_tick(0, flooded_ms(), 0.3);
    cr_expect_eq(t[1].gated, 0, "released: %s", t[1].why);
    cr_expect_eq(t[1].groups, on);
}

/* A decoder with an SLO beside a flood, on the sim's contention model (docs/sim-device.md):
 * a kernel gets half of the SMs another tenant's kernels occupy, so on every SM beside a
 * flood fenced to `keep` of the 16 groups it has 16 - keep/2 groups' worth, and all 16
 * while the flood is held.  Its decode step, one kernel in flight at a time (as
 * bench/eval's llm stand-in's), takes `alone_us` alone, give or take 3% from tick to
 * tick: 2x beside the flood on every SM, 1.6x on 3/4, 1.33x on 1/2, 1.14x on 1/4. */
static double alone_us = 2500;

static double sim_step_us(int i)
{
    double keep = t[1].groups ? __builtin_popcountll(t[1].groups) : GROUPS;
    double noise = 1 + 0.01 * (i % 7 - 3);

    return noise * (t[1].gated ? alone_us : alone_us * GROUPS / (GROUPS - keep / 2));
}

static void step_tick(double step_us)
{
    t[0].inflight = 1;
    t[0].new_launches = t[0].new_done = 2;
    t[0].kernel_us = step_us;
    t[0].rate = 1e6 / step_us; /* one step after another: busy all the time */
    t[1].inflight = 16;
    t[1].new_launches = t[1].new_done = 8;
    ds_policy_slo_aware.on_tick(&v);
}

/* Over `ticks` ticks beside the flood: the flood's SM groups on average (none while
 * held), the share of the decoder's steps over `slo_us`, and the lends (moves to more
 * groups). */
struct lending {
    double groups, over;
    int lends;
};

static struct lending beside_flood(int ticks, double slo_us)
{
    struct lending r = { 0, 0, 0 };

    for (int i = 0; i < ticks; i++) {
        unsigned before = t[1].groups ? (unsigned)__builtin_popcountll(t[1].groups) : GROUPS;
        double step = sim_step_us(i);
        unsigned after;

        step_tick(step);
        after = t[1].groups ? (unsigned)__builtin_popcountll(t[1].groups) : GROUPS;
        r.groups += t[1].gated ? 0 : after;
        r.over += step > slo_us;
        r.lends += after > before;
    }
    r.groups /= ticks;
    r.over /= ticks;
    return r;
}

static void learn_steps_alone(void)
{
    for (int i = 0; i < TICKS_PER_S; i++) {
        t[1].inflight = t[1].new_launches = t[1].new_done = 0;
        t[0].inflight = 1;
        t[0].new_launches = t[0].new_done = 2;
        t[0].kernel_us = alone_us;
        t[0].rate = 1e6 / alone_us;
        ds_policy_slo_aware.on_tick(&v);
    }
}

/* A 4 ms SLO leaves the decoder slack on half the SMs (3.3 ms a step): the flood keeps
 * half of them from the start, and lends to 3/4 (4 ms a step, near the SLO) fail and are
 * tried ever more rarely.  Steering on the decoder's baseline first fenced the flood to a
 * quarter (1.14x alone, in the band; 6.6 groups on average in the first 5 s), then, as
 * the baseline drifted up with the slowed decoder, lent by going over the SLO: 11% of
 * the steps over it in the next 20 s, in 64 lends. */
Test(slo_aware, with_an_slo_that_leaves_slack_the_flood_is_lent_what_the_decoder_can_spare)
{
    struct lending settle, r;

    t[0].slo_us = 4000;
    learn_steps_alone();
    settle = beside_flood(5 * TICKS_PER_S, 4000);
    r = beside_flood(20 * TICKS_PER_S, 4000);
    cr_log_info("first 5 s: %.1f groups, %.1f%% over, %d lends; next 20 s: %.1f, %.1f%%, %d",
                settle.groups, 100 * settle.over, settle.lends, r.groups, 100 * r.over, r.lends);
    cr_expect_geq(settle.groups, 7.5, "the flood on %.1f groups in the first 5 s",
                  settle.groups);
    cr_expect_geq(r.groups, 7.5, "the flood on %.1f groups on average", r.groups);
    cr_expect_lt(r.over, 0.01, "%.1f%% of the steps over the SLO", 100 * r.over);
    cr_expect_lt(settle.over, 0.05, "%.1f%% of the steps over the SLO while settling",
                 100 * settle.over);
    cr_expect(r.lends >= 1 && r.lends <= 4, "lends that fail, ever more rarely: %d in 20 s",
              r.lends);
    cr_expect_eq(t[1].gated, 0);
}

/* A looser SLO (5 ms) leaves slack on 3/4 of the SMs (4 ms a step): the flood keeps 3/4. */
Test(slo_aware, a_looser_slo_lends_more)
{
    struct lending r;

    t[0].slo_us = 5000;
    learn_steps_alone();
    beside_flood(5 * TICKS_PER_S, 5000);
    r = beside_flood(20 * TICKS_PER_S, 5000);
    cr_expect_geq(r.groups, 11.5, "the flood on %.1f groups on average", r.groups);
    cr_expect_lt(r.over, 0.01, "%.1f%% of the steps over the SLO", 100 * r.over);
}

/* The SLO to the microsecond: 3.2 ms is missed on half the SMs (3.3 ms a step), so the
 * flood gets at most a quarter (2.9 ms).  Its whole milliseconds rounded up, 4, which is
 * what a policy reading slo_ms sees, would leave the flood half and most steps over. */
Test(slo_aware, a_fractional_slo_is_steered_by_to_the_microsecond)
{
    struct lending r;

    t[0].slo_us = 3200;
    t[0].slo_ms = 4;
    learn_steps_alone();
    beside_flood(5 * TICKS_PER_S, 3200);
    r = beside_flood(20 * TICKS_PER_S, 3200);
    cr_expect_leq(r.groups, 4.5, "the flood on %.1f groups on average", r.groups);
    cr_expect_lt(r.over, 0.05, "%.1f%% of the steps over 3.2 ms", 100 * r.over);
}

/* An SLO below what the decoder can reach even alone (2 ms against 2.5 ms): protected as
 * before, the flood on an eighth of the SMs and held while the decoder works, never lent
 * more. */
Test(slo_aware, an_slo_out_of_reach_holds_the_flood)
{
    struct lending r;

    t[0].slo_us = 2000;
    learn_steps_alone();
    beside_flood(2 * TICKS_PER_S, 2000);
    r = beside_flood(10 * TICKS_PER_S, 2000);
    cr_expect_eq(t[1].gated, 1, "held: %s", t[1].why);
    cr_expect_eq(t[1].groups, ds_groups_range(0, 2), "%#llx", (unsigned long long)t[1].groups);
    cr_expect_eq(r.lends, 0, "lent %d times", r.lends);
    cr_expect_not_null(strstr(t[1].why, "SLO"), "%s", t[1].why);
}

/* Without an SLO, the same decoder keeps the baseline's rule: the flood on 3/4 of the SMs
 * (the decoder at 1.6x alone, pressed, but three quarters is as far as it goes). */
Test(slo_aware, without_an_slo_the_same_decoder_fences_the_flood_to_three_quarters)
{
    struct lending r;

    learn_steps_alone();
    r = beside_flood(10 * TICKS_PER_S, 1e9);
    cr_expect_eq(t[1].groups, ds_groups_range(0, 12), "%#llx", (unsigned long long)t[1].groups);
    cr_expect_eq(t[1].gated, 0);
    cr_expect_gt(r.groups, 11.5, "%.1f groups", r.groups);
}

/* A decoder that spent a second over its SLO is not lent from as soon as it is at ease
 * again: its share of ticks over the SLO must fall under the budget first. */
Test(slo_aware, recent_violations_delay_the_next_lend)
{
    int first = -1;

    t[0].slo_us = 4000;
    learn_steps_alone();
    for (int i = 0; i < TICKS_PER_S; i++)
        step_tick(6000); /* over the SLO whatever the flood has: held at the top */
    cr_assert_eq(t[1].gated, 1);
    for (int i = 0; i < 10 * TICKS_PER_S && first < 0; i++) {
        step_tick(2000); /* comfortably under it on any fence */
        if (t[1].gated == 0)
            first = i;
    }
    cr_expect_gt(first, TICKS_PER_S, "lent after %d ticks at ease", first);
}
