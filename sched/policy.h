/*
 * Scheduling policies: the part of detshare that decides, for every tenant, which SM
 * groups it runs on.  The mechanism (binding a tenant's work to a set of SM groups at
 * its next kernel boundary) lives in the server; a policy only sees tenants and returns
 * their groups.  A policy is chosen at start (`detshare-server --policy NAME`) and can be
 * switched at run time (`detshare-ctl policy NAME`).
 *
 * A policy can also live outside the server's build, in a shared object that exports
 *     const struct ds_policy *detshare_policy(unsigned abi);
 * returning its policy when it speaks `abi` (DS_POLICY_ABI), else NULL.  It is named by
 * its path (anything with a '/'), at start or at run time; examples/policy/ has one.  It
 * runs inside the control process with the server's rights, so only the operator's own
 * code belongs there: the admin socket that can load one is owner-only.
 *
 * So far the interface has the start, join, leave and tick hooks, which is all the
 * baselines need; launch and completion hooks come with the policies that watch running
 * work.
 */
#ifndef DS_SCHED_POLICY_H
#define DS_SCHED_POLICY_H

#include <stddef.h>
#include <stdint.h>

enum ds_sched_class { DS_SCHED_LATENCY = 0, DS_SCHED_BEST_EFFORT = 1 };

struct ds_sched_tenant {
    int id;          /* the tenant's slot in the control block */
    uint64_t groups; /* in: what it was given last; out: bit i = SM group i, 0 = all SMs */
    int gated;       /* in: as last decided; out: 1 holds its next kernels back */
    int klass;       /* in: enum ds_sched_class, from the tenant's handshake */
    uint64_t launches; /* in: kernels it has launched so far */
};

struct ds_sched_view {
    unsigned sm_groups;     /* groups the device has (at most 64) */
    unsigned sm_group_size; /* SMs per group */
    int n;                  /* tenants, in the order they joined */
    struct ds_sched_tenant *t;
};

struct ds_policy {
    const char *name;
    const char *about; /* one line for --help */
    /* The policy takes over these tenants: at start, or switched to at run time. */
    void (*on_start)(struct ds_sched_view *v);
    void (*on_tenant_join)(struct ds_sched_view *v, int joined);
    void (*on_tenant_leave)(struct ds_sched_view *v);
    /* Called every tick_ms while the policy is in force, when not NULL. */
    void (*on_tick)(struct ds_sched_view *v);
    unsigned tick_ms;
    int gates; /* 1 when it closes gates (executors then also hold work on the GPU) */
};

/* What a policy's shared object must speak; raised whenever these structures change. */
#define DS_POLICY_ABI 1

/* The policy called `name`: a built-in one, or one loaded before; a name with a '/' is
 * a shared object's path, loaded on first use (ds_policy_load).  NULL when there is none
 * (logged when a load failed). */
const struct ds_policy *ds_policy_find(const char *name);

/* Load the policy in the shared object at `path` (once; later calls return it again).
 * NULL, logged, when it cannot be loaded, exports no detshare_policy, does not speak
 * DS_POLICY_ABI, lacks a hook every policy needs, or takes a built-in policy's name. */
const struct ds_policy *ds_policy_load(const char *path);

/* Every built-in policy, NULL-terminated; the baselines by name. */
extern const struct ds_policy *const ds_policies[];
extern const struct ds_policy ds_policy_shared, ds_policy_static, ds_policy_temporal,
    ds_policy_slo_aware;

/* "SM groups 0-7 (64 SMs)", "the whole device", "SM groups 0 2-3 (24 SMs)". */
void ds_groups_format(uint64_t groups, unsigned group_size, char *buf, size_t len);

#endif
