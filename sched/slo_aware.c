/*
 * slo-aware, first version: latency-critical tenants keep most of the GPU to themselves
 * while they run, and lend all of it back when they stop.
 *
 * Every tick it looks at whether a latency-critical tenant launched kernels since the
 * last tick.  The first launch raises the fence: best-effort tenants run on the first
 * BE_GROUPS SM groups and latency-critical ones on the others, disjoint, so a
 * latency-critical kernel never waits for SMs held by best-effort work.  The fence drops,
 * and everyone runs on every SM again, only after HOLD ticks without a latency-critical
 * launch: a decoding service pauses between requests and while a library compiles
 * kernels (cuDNN: 50-100 ms per new shape), and a 20 ms hold made the fence flap 250 times
 * in a 30 s run on the H100, each flap moving every tenant.  There is no predictor and no
 * SLO yet: the fence is fixed-size and taken whenever latency-critical work is present.
 */
#include "policy.h"

#define BE_GROUPS 2
#define HOLD 40 /* ticks of 5 ms */

static uint64_t last_launches[64];
static int quiet_ticks = HOLD + 1;

static uint64_t range(unsigned first, unsigned count)
{
    uint64_t mask = count >= 64 ? ~0ull : (1ull << count) - 1;

    return mask << first;
}

static void place(struct ds_sched_view *v, int fenced)
{
    int any_be = 0;

    for (int i = 0; i < v->n; i++)
        any_be |= v->t[i].klass == DS_SCHED_BEST_EFFORT;
    fenced = fenced && any_be && v->sm_groups > BE_GROUPS;
    for (int i = 0; i < v->n; i++) {
        struct ds_sched_tenant *t = &v->t[i];

        t->gated = 0;
        if (!fenced)
            t->groups = 0;
        else if (t->klass == DS_SCHED_BEST_EFFORT)
            t->groups = range(0, BE_GROUPS);
        else
            t->groups = range(BE_GROUPS, v->sm_groups - BE_GROUPS);
    }
}

/* Whether a latency-critical tenant launched since the last look. */
static int latency_work(struct ds_sched_view *v)
{
    int busy = 0;

    for (int i = 0; i < v->n; i++) {
        struct ds_sched_tenant *t = &v->t[i];

        if (t->id < 0 || t->id >= 64)
            continue;
        if (t->klass == DS_SCHED_LATENCY && t->launches != last_launches[t->id])
            busy = 1;
        last_launches[t->id] = t->launches;
    }
    return busy;
}

static void tick(struct ds_sched_view *v)
{
    quiet_ticks = latency_work(v) ? 0 : quiet_ticks + 1;
    place(v, quiet_ticks <= HOLD);
}

static void start(struct ds_sched_view *v)
{
    quiet_ticks = HOLD + 1;
    for (int i = 0; i < 64; i++)
        last_launches[i] = 0;
    place(v, 0);
}

static void join(struct ds_sched_view *v, int joined)
{
    (void)joined;
    place(v, quiet_ticks <= HOLD);
}

static void leave(struct ds_sched_view *v)
{
    place(v, quiet_ticks <= HOLD);
}

const struct ds_policy ds_policy_slo_aware = {
    .name = "slo-aware",
    .about = "best-effort fenced while latency-critical work runs (first version)",
    .on_start = start,
    .on_tenant_join = join,
    .on_tenant_leave = leave,
    .on_tick = tick,
    .tick_ms = 5,
};
