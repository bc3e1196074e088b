/* A policy that places nothing and says, in each tenant's decision (status), the SLO it
 * sees.  Built twice: as ABI 4 speaks (slo_us and slo_ms), and with DS_TEST_ABI 3 as a
 * policy written for ABI 3, which knew only slo_ms. */
#include <detshare/policy.h>

#include <stdio.h>

#ifndef DS_TEST_ABI
#define DS_TEST_ABI DS_POLICY_ABI
#endif

static char said[64][48];

static void tell(struct ds_sched_view *v)
{
    for (int i = 0; i < v->n; i++) {
        struct ds_sched_tenant *t = &v->t[i];

        if (t->id < 0 || t->id >= 64)
            continue;
#if DS_TEST_ABI >= 4
        snprintf(said[t->id], sizeof(said[t->id]), "slo_us %u, slo_ms %u", t->slo_us, t->slo_ms);
#else
        snprintf(said[t->id], sizeof(said[t->id]), "slo_ms %u", t->slo_ms);
#endif
        t->groups = 0;
        t->gated = 0;
        t->why = said[t->id];
    }
}

static void join(struct ds_sched_view *v, int joined)
{
    (void)joined;
    tell(v);
}

static const struct ds_policy slo = {
#if DS_TEST_ABI >= 4
    .name = "slo-seen",
#else
    .name = "slo-seen-abi3",
#endif
    .on_start = tell,
    .on_tenant_join = join,
    .on_tenant_leave = tell,
    .on_tick = tell,
    .tick_ms = DS_SCHED_SAMPLE_MS,
};

const struct ds_policy *detshare_policy(unsigned abi)
{
    return abi == DS_TEST_ABI ? &slo : NULL;
}
