/*
 * The control process's state, shared by its parts: control.c (the event loop, the
 * executors, signals, the admin and metrics endpoints), intake.c (listeners, and
 * connections until an executor takes them), handover.c (executors taking their
 * tenants' connections, with their TLS stream keys) and placement.c (what runs where:
 * the policy, the tenants it places, their progress, and the quota rules that bound it).
 */
#ifndef DS_CONTROL_INT_H
#define DS_CONTROL_INT_H

#include "admin.h"
#include "auth.h"
#include "domain.h"
#include "control.h"
#include "exec_spawn.h"
#include "group.h"
#include "intake.h"
#include "exposition.h"
#include "metrics.h"
#include "policy.h"
#include "predict.h"
#include "status.h"
#include "quota.h"
#include "recovery.h"
#include "shm.h"
#include "throttle.h"
#include "tracectl.h"

#include <uv.h>

struct listener {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_pipe_t pipe;
        uv_tcp_t tcp;
    } h;
    struct ds_addr addr;
    struct control *ctl;
};

struct control {
    const struct ds_server_config *cfg;
    uv_loop_t *loop;
    struct listener ls[DS_MAX_LISTEN];
    int nls;
    uv_signal_t sig_chld, sig_term, sig_int, sig_hup;
    uv_timer_t grace;
    uv_timer_t tick; /* every DS_SCHED_SAMPLE_MS: progress stamps, and the policy's on_tick */
    uv_timer_t watch; /* SM shares of tenants whose name appeared (DS_WATCH_MS) */
    uv_timer_t refill; /* a warm executor started again after one came up without MPS */
    int no_mps;        /* warm executors in a row that came up without MPS */
    uint64_t next_tick_ns; /* when the policy's on_tick is due */
    struct ds_decisions decisions; /* the policy's callbacks, timed (placement.c) */
    struct ds_shm *shm;
    int shm_fd;
    struct ds_spawned warm[DS_MAX_WARM]; /* started, device open, no tenant yet */
    int nwarm;
    /* The last failure to start a warm executor, when it was logged, and how many alike
     * since: every refused connection at capacity retries the pool, and a flood of them
     * must not flood the log. */
    int warm_errno;
    uint64_t warm_logged_ms;
    unsigned warm_unlogged;
    /* By warm executor: the faults seen in the shared domain when it was started (a
     * later one may have ended its context: it is stale), and whether it was told to go. */
    unsigned warm_gen[DS_MAX_WARM];
    unsigned char warm_killed[DS_MAX_WARM];
    struct ds_sched_tenant tenants[DS_SHM_SLOTS]; /* served now, in the order they joined */
    int ntenants;
    /* By slot: what the stamps tell of the tenant's running work, its counts at the
     * policy's last tick, and its kernel-time bucket. */
    struct {
        struct ds_predict p;
        uint64_t launches, done;
        struct ds_throttle bucket;
    } track[DS_SHM_SLOTS];
    uint64_t sampled_ns; /* when running work was last sampled */
    const struct ds_policy *policy;
    struct ds_admin *admin;
    struct ds_metrics *metrics;
    struct ds_auth_list authing; /* connections whose preface is awaited */
    struct handover *handovers;  /* connections handed over, not yet taken (handover.c) */
    /* By slot: the executor's end of its pair, kept once it took its tenant, on which the
     * tenant's data connections are handed to it (handover.h); -1 when none. */
    int attach_ctl[DS_SHM_SLOTS];
    struct ds_domains domains;   /* fault domains: quarantine, faults by name */
    struct ds_traces *traces;    /* detshare-ctl trace's, once one was asked (trace.h) */
    struct ds_group groups[DS_SHM_GROUPS + 1]; /* named domains by index, [0] unused */
    uv_timer_t group_poll;       /* while a group's MPS daemon starts (group.c) */
    struct ds_recovery recovery[DS_SHM_GROUPS + 1]; /* MPS domains after a fault */
    uv_timer_t recovery_timer;   /* their deadline (recovery.c) */
    uint64_t next_id;            /* the last tenant id given (shm.h, slot id) */
    uint64_t refused_window_ns;  /* refusals logged in the second that began then */
    unsigned refused_logged, refused_quiet;
    struct ds_tokens *minted;    /* added through the admin API (tokens.h) */
    struct ds_tokens *reloaded;  /* the tokens read on SIGHUP, once any were */
    struct ds_shm_quota rules[DS_SHM_QUOTAS]; /* the quotas in force, as published */
    unsigned nrules;
    int live;
    int stopping;
    int mps_up; /* the MPS daemon this server started has not exited */
    /* For metrics: tenants handed to an executor, connections refused. */
    uint64_t served;
    uint64_t refused[DS_REFUSED_COUNT];
};

/* control.c's executors, for the intake (intake.h), the handover (handover.h) and the
 * groups (group.h).  Start an executor on a slot of its own, in fault domain `isolation`
 * (enum ds_isolation) and, for DS_ISO_GROUP, group `group` (group.h).  Returns 0, or -1
 * with errno set (EBUSY: no slot is free). */
int ds__control_spawn(struct control *c, struct ds_spawned *out, uint32_t isolation,
                      unsigned group);

/* An executor for a tenant of domain `isolation` (and group): a warm one for the shared
 * domain when one is fresh (*warm set), else a new one.  Returns 0, or -1 with errno
 * set. */
int ds__control_take(struct control *c, uint32_t isolation, unsigned group,
                     struct ds_spawned *out, int *warm);

/* The shared domain's MPS clients lost their contexts to a fault: its warm executors,
 * which have no tenant to find out, leave (and are started again after). */
void ds__control_kill_warm(struct control *c);

/* Start warm executors of the shared domain until --warm of them wait. */
void ds__control_refill(struct control *c);

/* Make rules v[0..n) the quotas in force (placement.c): executors see them at their next
 * allocation, bindings at once. */
void ds__place_set_rules(struct control *c, const struct ds_shm_quota *v, unsigned n);

/* Tenant `slot` was handed to its executor, or its executor was reaped: the policy
 * places it, or takes its SM groups back. */
void ds__place_joined(struct control *c, int slot);
void ds__place_left(struct control *c, int slot);

/* The policy in force starts its clock, and executors learn whether it gates. */
void ds__place_start(struct control *c);

/* The admin API's hooks: status, policy, a tenant's class and phase, quotas. */
void ds__place_admin_hooks(struct control *c, struct ds_admin_hooks *h);

#endif
