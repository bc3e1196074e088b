/*
 * detshare's scheduling-policy ABI: what a policy built outside detshare's tree sees of
 * the server.  This header is all such a policy needs (installed as
 * PREFIX/include/detshare/policy.h; examples/policy/ builds against it):
 *
 *     cc -shared -fPIC -I PREFIX/include -o mine.so mine.c
 *     detshare-server --policy ./mine.so        (or: detshare-ctl policy $PWD/mine.so)
 *
 * A policy decides, for every tenant, which SM groups it runs on.  The mechanism (binding
 * a tenant's work to a set of SM groups at its next kernel boundary) lives in the server;
 * a policy only sees tenants and returns their groups.  Its shared object exports
 * detshare_policy(), below; it is named by its path (anything with a '/'), at start or at
 * run time, and runs inside the server's control process with the server's rights (its
 * constructors as soon as it is opened), so only the operator's own code belongs there
 * (docs/policies.md says who may load what).
 *
 * What a policy sees of running work comes from progress stamps (the device records each
 * launch's completion in the control block) sampled by the control process every
 * DS_SCHED_SAMPLE_MS: per tenant, what is in flight, how fast its work completes, and how
 * long one of its kernels takes.  Launches and completions are counted since the last
 * tick rather than reported one by one, so that no decision is ever made on the launch
 * path: a policy that watches running work sets on_tick and decides there.
 *
 * Versioned by DS_POLICY_ABI, raised whenever these structures change; the server asks
 * an object for its own ABI first, then for each older one these structures still lay
 * out as it did, down to DS_POLICY_ABI_OLDEST, and refuses an object that speaks none of
 * them.  ABI 2 added slo_ms, phase, the predictor's fields, why and the view's now_ns to
 * ABI 1's groups, gated, class and launches; ABI 3 added escapes; ABI 4 (this one) added
 * slo_us, in what was padding after id, so that a policy built for ABI 3 reads the same
 * structures and still loads.
 */
#ifndef DETSHARE_POLICY_H
#define DETSHARE_POLICY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ds_sched_class { DS_SCHED_LATENCY = 0, DS_SCHED_BEST_EFFORT = 1 };

/* What an LLM-serving tenant is doing, as the operator says (detshare-ctl tenant NAME
 * phase ...); AUTO leaves it to the policy, which can tell from the predictor's fields. */
enum ds_sched_phase { DS_SCHED_AUTO = 0, DS_SCHED_DECODE = 1, DS_SCHED_PREFILL = 2 };

struct ds_sched_tenant {
    int id;          /* the tenant's slot in the control block */
    unsigned slo_us; /* in: its latency SLO in us, 0 when it has none */
    uint64_t groups; /* in: what it was given last; out: bit i = SM group i, 0 = all SMs */
    int gated;       /* in: as last decided; out: 1 holds its next kernels back */
    int klass;       /* in: enum ds_sched_class, from the handshake or the operator */
    uint64_t launches; /* in: kernels and graphs it has launched so far */
    unsigned slo_ms;   /* in: slo_us in whole ms, rounded up (a 0.5 ms SLO reads 1) */
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

/* What a policy's shared object speaks best; raised whenever these structures change.
 * The server also takes one that speaks no older than DS_POLICY_ABI_OLDEST. */
#define DS_POLICY_ABI 4
#define DS_POLICY_ABI_OLDEST 3

/* What a policy's shared object exports: its policy when it speaks `abi`, else NULL.
 * The server calls it when it loads the object: with its DS_POLICY_ABI, then, while the
 * answer is NULL, with each older ABI down to DS_POLICY_ABI_OLDEST. */
const struct ds_policy *detshare_policy(unsigned abi);

#ifdef __cplusplus
}
#endif

#endif
