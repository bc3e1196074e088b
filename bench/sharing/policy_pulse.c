/*
 * A policy for measuring the mechanism on a GPU box, not for use: it moves or gates every
 * tenant on a fixed beat, so that what a move or a gate costs can be timed from outside.
 * DS_PULSE (read when the server loads it):
 *   fixed  every tenant on the first half of the SM groups, always (the reference);
 *   flip   every tenant between the first and the second half each tick: as many SMs
 *          either way, so a slowdown is the cost of moving, not of fewer SMs;
 *   gate   every tenant's gate closed one tick and open the next; each change is logged
 *          on stderr with its CLOCK_REALTIME time, for gate-check.sh to compare with when
 *          the tenant's kernels started.
 * DS_PULSE_MS: the tick (a multiple of 5; default 10, i.e. 100 moves or gate changes a
 * second).
 */
#define _POSIX_C_SOURCE 200809L

#include <detshare/policy.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum pulse { FIXED, FLIP, GATE };

static enum pulse mode;
static unsigned beat;

static uint64_t half(const struct ds_sched_view *v, int second)
{
    unsigned n = v->sm_groups / 2;
    uint64_t first = n >= 64 ? ~0ull : (1ull << n) - 1;

    return second ? first << n : first;
}

static void log_gate(int closed)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    fprintf(stderr, "pulse: gate %s at %lld\n", closed ? "closed" : "opened",
            (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
}

static void decide(struct ds_sched_view *v)
{
    for (int i = 0; i < v->n; i++) {
        v->t[i].groups = half(v, mode == FLIP && beat % 2 == 1);
        v->t[i].gated = mode == GATE && beat % 2 == 1;
        v->t[i].why = "pulse";
    }
    if (mode == GATE && v->n > 0)
        log_gate(beat % 2 == 1);
}

static void join(struct ds_sched_view *v, int joined)
{
    (void)joined;
    decide(v);
}

static void tick(struct ds_sched_view *v)
{
    beat++;
    decide(v);
}

static struct ds_policy pulse = {
    .name = "pulse",
    .about = "moves or gates every tenant on a fixed beat (bench/sharing, measurement only)",
    .on_start = decide,
    .on_tenant_join = join,
    .on_tenant_leave = decide,
    .on_tick = tick,
    .tick_ms = 10,
};

const struct ds_policy *detshare_policy(unsigned abi)
{
    const char *m = getenv("DS_PULSE"), *ms = getenv("DS_PULSE_MS");

    if (abi != DS_POLICY_ABI)
        return NULL;
    mode = m == NULL || strcmp(m, "fixed") == 0 ? FIXED : strcmp(m, "flip") == 0 ? FLIP : GATE;
    pulse.gates = mode == GATE;
    if (ms != NULL && atoi(ms) >= DS_SCHED_SAMPLE_MS)
        pulse.tick_ms = (unsigned)atoi(ms);
    return &pulse;
}
