/* A policy written for an ABI this server does not speak: the server must refuse it. */
#include <detshare/policy.h>

static void nothing(struct ds_sched_view *v)
{
    (void)v;
}

static void nothing_join(struct ds_sched_view *v, int joined)
{
    (void)v;
    (void)joined;
}

static const struct ds_policy old = {
    .name = "old-abi",
    .on_start = nothing,
    .on_tenant_join = nothing_join,
    .on_tenant_leave = nothing,
};

const struct ds_policy *detshare_policy(unsigned abi)
{
    return abi == DS_POLICY_ABI + 1000 ? &old : NULL;
}
