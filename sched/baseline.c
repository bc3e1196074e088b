/*
 * The baselines every other policy is compared with, in the same build:
 * - shared: every tenant on every SM, no control (what MPS alone gives);
 * - static: equal disjoint partitions, recomputed when a tenant joins or leaves (what a
 *   MIG-like split gives, without MIG's fixed sizes);
 * - temporal: one tenant's kernels at a time, each in turn for a quantum, on every SM
 *   (what time-slicing without MPS gives, at kernel boundaries).
 */
#include "policy.h"

static void everyone_everywhere(struct ds_sched_view *v)
{
    for (int i = 0; i < v->n; i++) {
        v->t[i].groups = 0;
        v->t[i].gated = 0;
    }
}

static void shared_join(struct ds_sched_view *v, int joined)
{
    (void)joined;
    everyone_everywhere(v);
}

/* Tenant i gets groups [i*k, i*k+k) with k = groups / tenants.  A lone tenant gets the
 * whole device, including the SMs no group holds.  With more tenants than groups,
 * partitions can no longer be disjoint: tenants then share groups round-robin. */
static void split_equally(struct ds_sched_view *v)
{
    unsigned k;

    if (v->n <= 1 || v->sm_groups == 0) {
        everyone_everywhere(v);
        return;
    }
    k = v->sm_groups / (unsigned)v->n;
    for (int i = 0; i < v->n; i++) {
        unsigned first = k > 0 ? (unsigned)i * k : (unsigned)i % v->sm_groups;

        v->t[i].groups = ds_groups_range(first, k > 0 ? k : 1);
        v->t[i].gated = 0;
    }
}

static void static_join(struct ds_sched_view *v, int joined)
{
    (void)joined;
    split_equally(v);
}

const struct ds_policy ds_policy_shared = {
    .name = "shared",
    .about = "every tenant on every SM (MPS-like)",
    .on_start = everyone_everywhere,
    .on_tenant_join = shared_join,
    .on_tenant_leave = everyone_everywhere,
};

const struct ds_policy ds_policy_static = {
    .name = "static",
    .about = "equal disjoint SM partitions, redrawn as tenants come and go",
    .on_start = split_equally,
    .on_tenant_join = static_join,
    .on_tenant_leave = split_equally,
};

/* The tenant whose turn it is, by id so that joins and leaves keep the order. */
static int turn = -1;

static void gate_all_but_turn(struct ds_sched_view *v)
{
    int found = 0;

    for (int i = 0; i < v->n; i++)
        found |= v->t[i].id == turn;
    if (!found)
        turn = v->n > 0 ? v->t[0].id : -1;
    for (int i = 0; i < v->n; i++) {
        v->t[i].groups = 0;
        v->t[i].gated = v->t[i].id != turn;
    }
}

static void temporal_join(struct ds_sched_view *v, int joined)
{
    (void)joined;
    gate_all_but_turn(v);
}

static void next_turn(struct ds_sched_view *v)
{
    for (int i = 0; i < v->n; i++)
        if (v->t[i].id == turn) {
            turn = v->t[(i + 1) % v->n].id;
            break;
        }
    gate_all_but_turn(v);
}

const struct ds_policy ds_policy_temporal = {
    .name = "temporal",
    .about = "one tenant's kernels at a time, 50 ms turns",
    .on_start = gate_all_but_turn,
    .on_tenant_join = temporal_join,
    .on_tenant_leave = gate_all_but_turn,
    .on_tick = next_turn,
    .tick_ms = 50,
    .gates = 1,
};
