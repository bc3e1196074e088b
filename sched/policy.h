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
 * runs inside the control process with the server's rights (its constructors as soon as
 * it is opened), so only the operator's own code belongs there: at start, any path the
 * command line gives; at run time, through the admin API, only files in the directory
 * --policy-dir names, which nobody but root and the server's user can change.
 *
 * What a policy sees of running work comes from progress stamps (the device records each
 * launch's completion in the control block) sampled by the control process every
 * DS_SCHED_SAMPLE_MS: per tenant, what is in flight, how fast its work completes, and how
 * long one of its kernels takes (sched/predict.h).  Launches and completions are counted
 * since the last tick rather than reported one by one, so that no decision is ever made on
 * the launch path: a policy that watches running work sets on_tick and decides there.
 *
 * ABI 2 added slo_ms, phase, the predictor's fields, why and the view's now_ns to ABI 1's
 * groups, gated, class and launches; ABI 3 (this one) added escapes.
 */
#ifndef DS_SCHED_POLICY_H
#define DS_SCHED_POLICY_H

#include <stddef.h>
#include <stdint.h>

enum ds_sched_class { DS_SCHED_LATENCY = 0, DS_SCHED_BEST_EFFORT = 1 };

/* What an LLM-serving tenant is doing, as the operator says (detshare-ctl tenant NAME
 * phase ...); AUTO leaves it to the policy, which can tell from the predictor's fields. */
enum ds_sched_phase { DS_SCHED_AUTO = 0, DS_SCHED_DECODE = 1, DS_SCHED_PREFILL = 2 };

struct ds_sched_tenant {
    int id;          /* the tenant's slot in the control block */
    uint64_t groups; /* in: what it was given last; out: bit i = SM group i, 0 = all SMs */
    int gated;       /* in: as last decided; out: 1 holds its next kernels back */
    int klass;       /* in: enum ds_sched_class, from the handshake or the operator */
    uint64_t launches; /* in: kernels and graphs it has launched so far */
    unsigned slo_ms;   /* in: its latency SLO in ms, 0 when it has none */
    int phase;         /* in: enum ds_sched_phase, the operator's hint */
    /* In, from the predictor, as of the last sample: */
    uint64_t done;         /* launches the device has completed */
    uint64_t inflight;     /* launches - done */
    uint64_t new_launches; /* launched since the last tick (or since it joined) */
    uint64_t new_done;     /* completed since the last tick */
    double rate;           /* completions per second, recent */
    double launch_rate;    /* launches per second, recent */
    double kernel_us;      /* one kernel's estimated duration in us, 0 until known */
    /* Out: a few words on why it is placed and gated so, for status (a string that
     * lives as long as the policy), or NULL. */
    const char *why;
    /* In: partition escapes so far, kernels of it that ran on the whole device instead
     * of its groups because their thread-block clusters did not fit there.  Such a
     * kernel runs on SMs the policy meant for others. */
    uint64_t escapes;
};
struct ds_sched_view {
    unsigned sm_groups;     /* groups the device has (at most 64) */
    unsigned sm_group_size; /* SMs per group */
    int n;                  /* tenants, in the order they joined */
    struct ds_sched_tenant *t;
    uint64_t now_ns;        /* when the view was taken (CLOCK_MONOTONIC) */
};

/* How often the control process samples progress stamps (and the shortest useful
 * tick_ms). */
#define DS_SCHED_SAMPLE_MS 5

struct ds_policy {
    const char *name;
    const char *about; /* one line for --help */
    /* The policy takes over these tenants: at start, or switched to at run time. */
    void (*on_start)(struct ds_sched_view *v);
    void (*on_tenant_join)(struct ds_sched_view *v, int joined);
    void (*on_tenant_leave)(struct ds_sched_view *v);
    /* Called every tick_ms (a multiple of DS_SCHED_SAMPLE_MS) while the policy is in
     * force, when not NULL. */
    void (*on_tick)(struct ds_sched_view *v);
    unsigned tick_ms;
    int gates; /* 1 when it closes gates (executors then also hold work on the GPU) */
};

/* What a policy's shared object must speak; raised whenever these structures change. */
#define DS_POLICY_ABI 3

/* The policy called `name`: a built-in one, or one loaded before (a name with a '/' is
 * the path it was loaded from).  NULL when there is none.  Never loads anything. */
const struct ds_policy *ds_policy_find(const char *name);

/* Load the policy in the shared object at `path` (once; later calls return it again),
 * whoever can change that file: for the operator's own command line only.  NULL, logged,
 * when it cannot be loaded, exports no detshare_policy, does not speak DS_POLICY_ABI,
 * lacks a hook every policy needs, or takes a built-in policy's name. */
const struct ds_policy *ds_policy_load(const char *path);

/* Let ds_policy_admit load from directory `dir` (--policy-dir): it and every directory
 * above it must be owned by root or this process's user, and it must not be writable by
 * group or others (those above may be, when sticky).  Returns 0, or DS_EINVAL (it does not
 * resolve) or DS_EPERM (not safe) with why. */
int ds_policy_set_dir(const char *dir, char *why, size_t len);

/* For the admin API: the policy loaded before from `path`, or the one in the shared object
 * at `path` when, resolved, it is a regular file inside the ds_policy_set_dir directory
 * that nobody but root and this process's user can change, nor any directory leading to
 * it.  All of that is checked before the file is opened as a library (its constructors run
 * then).  NULL, logged and said in why, when there is no such directory or the file is
 * refused or cannot be loaded (as ds_policy_load). */
const struct ds_policy *ds_policy_admit(const char *path, char *why, size_t len);

/* Every built-in policy, NULL-terminated; the baselines by name. */
extern const struct ds_policy *const ds_policies[];
extern const struct ds_policy ds_policy_shared, ds_policy_static, ds_policy_temporal,
    ds_policy_slo_aware, ds_policy_tpot_first;

/* The groups first .. first+count-1 as a mask (count 64 or more: every group). */
uint64_t ds_groups_range(unsigned first, unsigned count);

#endif
