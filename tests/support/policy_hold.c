/* A policy for the gate tests: best-effort tenants are held (their gates closed) while a
 * latency-critical tenant is connected, and released when none is.  It looks again every
 * tick, since a tenant's class is known only after its hello, which comes after it joins. */
#include <detshare/policy.h>

static void decide(struct ds_sched_view *v)
{
    int latency = 0;

    for (int i = 0; i < v->n; i++)
        latency |= v->t[i].klass == DS_SCHED_LATENCY;
    for (int i = 0; i < v->n; i++) {
        v->t[i].groups = 0;
        v->t[i].gated = latency && v->t[i].klass == DS_SCHED_BEST_EFFORT;
    }
}

static void join(struct ds_sched_view *v, int joined)
{
    (void)joined;
    decide(v);
}

static const struct ds_policy hold = {
    .name = "hold-best-effort",
    .about = "best-effort tenants wait while a latency-critical one is connected",
    .on_start = decide,
    .on_tenant_join = join,
    .on_tenant_leave = decide,
    .on_tick = decide,
    .tick_ms = 5,
    .gates = 1,
};

const struct ds_policy *detshare_policy(unsigned abi)
{
    return abi == DS_POLICY_ABI ? &hold : NULL;
}
