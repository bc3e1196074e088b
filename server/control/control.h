/*
 * The control process: listens, hands each tenant connection to an executor of its own
 * (exec_spawn.h; a few are kept started ahead, with the device open), reaps them and logs
 * why each tenant left.  It never touches a tenant's data path and holds no
 * device context.
 */
#ifndef DS_CONTROL_H
#define DS_CONTROL_H

#include "ds_addr.h"
#include "policy.h"
#include "registry.h"
#include "shm.h"
#include "tokens.h"

#include <sys/types.h>

#define DS_MAX_LISTEN 8
#define DS_MAX_WARM 16

struct ds_server_config {
    const struct ds_backend_entry *backend; /* for its name: executors run it, not this */
    unsigned device;                      /* enum ds_shm_device of the backend */
    int gpu;
    int sim_sms;
    uint64_t sim_memory;
    /* Host memory an executor may hold for its tenant's pending calls, and all of them
     * together (shm.h host_limit, host_total); 0: no limit. */
    uint64_t host_limit, host_total;
    unsigned spin_us; /* how long an executor polls for the next request before sleeping */
    unsigned sync_spin_us; /* ... and for the GPU while its tenant waits in a synchronisation */
    int warm;         /* executors kept started ahead of tenants, 0..DS_MAX_WARM */
    const struct ds_policy *policy; /* at start; detshare-ctl may switch it */
    struct ds_sm_groups sm;
    char mps[64];     /* for status: how executors share the GPU */
    const char *mps_mode; /* for metrics: "started", "external", "off" or "none" (sim) */
    uint64_t device_memory; /* bytes, 0 when not known to the control process */
    char admin[108];  /* admin socket path, empty for none */
    gid_t admin_gid;  /* the admin socket's group (--admin-group), (gid_t)-1 for none */
    int has_metrics;
    struct ds_addr metrics; /* where /metrics is served, when has_metrics */
    pid_t mps_daemon; /* the MPS control daemon this server started, or 0 */
    struct ds_addr listen[DS_MAX_LISTEN];
    int nlisten;
    /* What a TCP tenant's token preface is checked against (auth.h); NULL accepts any
     * (--insecure, or no TCP listener).  Read from token_file, which SIGHUP reads
     * again (NULL: none). */
    const struct ds_tokens *tokens;
    const char *token_file;
    /* --unix-token: Unix tenants show a known token too (a pod's socket is shared by
     * every pod of the node, whose uids say nothing). */
    int unix_token;
    /* --tls-cert and --tls-key: TCP tenants may shake hands in TLS 1.3 with this context
     * (NULL: none); --tls-only: they must. */
    struct ds_tls_ctx *tls;
    int tls_only;
    /* The quota rules at start, from the config file (config.h), which SIGHUP reads
     * again (NULL: none). */
    const char *config;
    struct ds_shm_quota quotas[DS_SHM_QUOTAS];
    unsigned nquotas;
    /* Fault domains (shm.h, domain.h): the domain of tenants whose rule sets none
     * (--isolation, with a group's name), how long a name whose kernel faulted in a
     * shared domain runs in its own (--quarantine, 0: never), and the MPS pipe directory
     * an `own` executor is given, where no daemon listens ("" where executors are no MPS
     * clients anyway). */
    uint32_t isolation;
    char isolation_group[DS_GROUP_MAX + 1]; /* for DS_ISO_GROUP */
    uint64_t quarantine_ns;
    char own_mps_pipe[256];
    /* The server's MPS directory (--mps start; "" otherwise): each named group's daemon
     * gets its pipes and logs under it (mps.h, ds_mps_group_start). */
    char mps_dir[200];
};

/* Run until SIGTERM or SIGINT, then close every tenant and return 0; returns 1 when
 * the server cannot start (a listener, the admin socket or the metrics endpoint cannot
 * be opened, say), after logging why.  On SIGHUP, read the config file and the token
 * file again: each replaces what is in force when it reads without error, and is
 * ignored, logged, when it does not. */
int ds_control_run(const struct ds_server_config *cfg);

#endif
