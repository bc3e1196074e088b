/*
 * The control block shared by the control process and every executor: the server's
 * settings and one slot per tenant.  It lives in a memfd that the control process hands
 * to each executor it spawns (and that the scheduler and admin API will map too), so it
 * needs no file name and disappears with the server.  The control process owns slot assignment
 * (state, pid) and clears a slot when it reaps the executor, which is what returns a
 * dead tenant's share of the sim device's memory; an executor writes only its own
 * slot.  Versioned with reserved space so later fields (gates, bindings) fit.
 */
#ifndef DS_SHM_H
#define DS_SHM_H

#include "detshare.h"
#include "ds_procs.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define DS_SHM_VERSION 19
#define DS_SHM_SLOTS 64
/* Exports of one tenant the CUDA IPC registry holds at once (server/ipcreg.h). */
#define DS_SHM_IPC_MAX 1024
#define DS_SHM_IPC_BLOB 64
/* SM-group sets remembered for warm executors (hot_groups). */
#define DS_SHM_HOT 4
/* What one executor may hold in host memory for its tenant's pending calls, unless the
 * server says otherwise (host_limit). */
#define DS_SHM_HOST_LIMIT (1ull << 30)
/* Quota rules the control process publishes (server/quota.h). */
#define DS_SHM_QUOTAS 64
/* Named fault domains (isolation=group:NAME) a server runs at most, and the longest name
 * of one: each is an MPS daemon of its own on a GPU. */
#define DS_SHM_GROUPS 8
#define DS_GROUP_MAX 31

/* What a tenant's device memory is, for its accounting (server/exec/account.h): the
 * kinds its quota counts.  Room is left for graph memory nodes as they come to be
 * served. */
enum ds_mem_kind { DS_MEM_DEVICE, DS_MEM_VMM, DS_MEM_POOL, DS_MEM_MANAGED, DS_MEM_KINDS };
#define DS_SHM_MEM_KINDS 8

/* Progress stamps a slot keeps: the control process sees completions while fewer stamps
 * than this are in flight (an executor stamps every 16th launch and the last before a
 * pause, server/exec/tenant.h), and at least this many stamps' launches otherwise. */
#define DS_SHM_STAMPS 32

/* A progress stamp (docs/design.md, "Gates and progress stamps").  After a tenant's
 * launch number n, its executor may have the device write n's low 32 bits into seq of the
 * next entry, in turn, once the work before it on its stream is done (cuda:
 * cuStreamWriteValue32; at_ns stays 0).  The sim knows when that will be and writes it at
 * once, with the modelled completion time in at_ns (ds_now_ns clock): UINT64_MAX first,
 * so that a reader never pairs a new seq with an old time.  ds_shm_stamps_done reads
 * them. */
struct ds_shm_stamp {
    atomic_uint seq;
    uint32_t pad;
    atomic_uint_fast64_t at_ns;
};

/* Trace entries a slot's ring holds (server/exec/trace.h): the control process drains
 * it every DS_TRACE_DRAIN_MS while a trace runs, so this many ops in that time fit. */
#define DS_SHM_TRACE 1024
#define DS_SHM_TRACE_NAME 64

/* What one trace entry is: an op on one of the tenant's streams, or a move. */
enum ds_trace_kind {
    DS_TRACE_KERNEL = 1,
    DS_TRACE_HTOD,
    DS_TRACE_DTOH,
    DS_TRACE_DTOD,
    DS_TRACE_MEMSET,
    DS_TRACE_GRAPH,
    DS_TRACE_MOVE,  /* the executor moved the tenant to SM groups `groups` (at start_ns) */
    DS_TRACE_HOLD,  /* the gate held the tenant (control process only, never in a ring) */
    DS_TRACE_KINDS
};

/* One entry, written by the executor alone: times are device times on the ds_now_ns
 * clock (trace.h says how they are found). */
struct ds_shm_trace_ev {
    uint32_t kind;              /* enum ds_trace_kind */
    uint32_t reserved;
    uint64_t stream;            /* the tenant's stream handle; 0: the legacy stream */
    uint64_t start_ns, end_ns;
    uint64_t bytes;             /* copies and memsets */
    uint64_t groups;            /* SM groups it ran on (bound_groups; 0: the whole device) */
    char name[DS_SHM_TRACE_NAME]; /* a kernel's function name, cut to fit */
};

/* Binding: the control process writes `groups` (a mask of SM groups, 0 for the whole
 * device) and the time it decided (`bind_at_ns`, ds_now_ns clock), then bumps
 * `bind_gen`; the executor reads them at its next kernel boundary, rebinds, and reports
 * what it runs on in `bound_groups`. */
struct ds_shm_slot {
    atomic_uint state; /* 0 free, 1 taken */
    pid_t pid;
    char tenant[DS_NAME_MAX + 1];
    atomic_uint_fast64_t sim_mem_used;
    atomic_uint_fast64_t groups;
    atomic_uint_fast64_t bind_at_ns;
    atomic_uint bind_gen;
    atomic_uint migrations;
    atomic_uint_fast64_t bound_groups;
    /* Written by the executor for status: its tenant's class (DS_CLASS_*, from the
     * handshake), kernels and graphs launched to run now, device memory allocated. */
    atomic_int klass;
    /* The tenant's latency SLO in us (0: none), set through the admin API. */
    atomic_uint slo_us;
    atomic_uint_fast64_t launches;
    /* Device memory the tenant holds, as its executor counts it against its quota on
     * either backend: in all, and by enum ds_mem_kind. */
    atomic_uint_fast64_t mem_used;
    atomic_uint_fast64_t mem_kind[DS_SHM_MEM_KINDS];
    /* The gate: while the control process holds it closed (1), the executor starts
     * none of its tenant's kernels; it holds them, and what follows them, in a queue
     * (server/exec/held.h) and adds the time they waited to gated_ns.  Work already on
     * the GPU goes on. */
    atomic_uint gate;
    atomic_uint_fast64_t gated_ns;
    /* Written by the control process for status and metrics: the time the tenant had
     * work on the device (sched/predict.h, kernel_ns), and 1 while its kernel-time quota
     * holds its gate closed (server/control/throttle.h). */
    atomic_uint_fast64_t kernel_ns;
    atomic_uint throttled;
    /* 1 while a kernel-time quota applies to the tenant: its executor then gates on the
     * GPU too, whatever the policy (shm.h's gating is the policy's, for every tenant). */
    atomic_uint metered;
    /* Written by the executor as its tenant launches kernels and graphs (the ones that
     * run now, not those captured into a graph); stamps_off is set when the device
     * could not write stamps, and completions are then unknown. */
    struct ds_shm_stamp stamps[DS_SHM_STAMPS];
    atomic_uint stamps_off;
    /* Sim: CLOCK_MONOTONIC time at which the tenant's queued kernels end, so that
     * tenants on overlapping SMs slow each other down, and how long its last kernel
     * takes, so that a kernel arriving on its SMs can tell when the one running there
     * ends (docs/sim-device.md). */
    atomic_uint_fast64_t sim_busy_until;
    atomic_uint_fast64_t sim_kernel_ns;
    /* Who connected, from the Unix socket's peer credentials (SO_PEERCRED), written by
     * the control process before the handover; peer_pid 0 for a TCP tenant, whose
     * identity the kernel cannot vouch for. */
    pid_t peer_pid;
    uid_t peer_uid;
    gid_t peer_gid;
    /* The tenant name a TCP tenant's token was accepted for (its preface's, checked
     * against the token's name prefix by the control process before the handover);
     * its hello must give the same name.  Empty when no token was checked (a Unix
     * tenant, or a server started with --insecure and no token file). */
    char granted[DS_NAME_MAX + 1];
    /* 1 when granted is the name the tenant's token gives it (tokens.h, `as`): its hello
     * may give any name and gets this one. */
    uint32_t named;
    /* Entries of the slot's IPC table ever used (server/ipcreg.h): clearing stops there. */
    atomic_uint ipc_used;
    /* For metrics, by procedure number (ds_procs.h), written by the executor alone:
     * calls it decoded, and calls whose handler answered with an error (a batched call's
     * error is counted at that call, not again at the synchronous call that returns it). */
    atomic_uint_fast64_t calls[DS_PROC_MAX + 1];
    atomic_uint_fast64_t errors[DS_PROC_MAX + 1];
    /* Written by the control process before the handover: an id that no other
     * connection of this server's life had (slots are reused), for logs, status and
     * metrics; and the fault domain its executor runs in (enum ds_isolation), with
     * its group (1..DS_SHM_GROUPS, an index of ds_shm domains) for DS_ISO_GROUP, 0
     * otherwise. */
    uint64_t id;
    atomic_uint isolation;
    atomic_uint group;
    /* Written by the executor once its device context failed: the CUresult, when
     * (ds_now_ns clock), and whose kernel it says faulted (enum ds_fault_origin; a sim
     * executor knows, a GPU one may not). */
    atomic_int fault_cu;
    atomic_uint fault_origin;
    atomic_uint_fast64_t fault_ns;
    /* The id of the tenant whose fault cost this one its context (0: none, or not known). */
    atomic_uint_fast64_t lost_to;
    /* The quota rule the tenant falls under (ds_quota_key of its name), 0 for none:
     * every slot with the same key shares the rule's memory limit (server/quota.h).
     * Written by the executor at the hello and when it sees the rules change, and by
     * the control process as it publishes rules, so a tenant that allocates nothing
     * still counts under a rule made after it connected. */
    atomic_uint_fast64_t quota_key;
    /* Host memory the executor holds for the tenant's calls: large records being read
     * and calls held behind the gate (server/exec/account.h), against host_limit. */
    atomic_uint_fast64_t host_bytes;
    /* Partition escapes, written by the executor alone: kernels of the tenant that ran on
     * the whole device instead of its SM groups, because their thread-block clusters
     * did not fit there (backend.h, launch).  Policies see it (sched/policy.h). */
    atomic_uint_fast64_t escapes;
    /* Tracing (detshare-ctl trace): trace_on is set by the control process while a trace
     * of the tenant runs.  The executor then adds an entry to trace[] per op and move and
     * publishes it by raising trace_head (release); the control process reads entries up
     * to it and raises trace_tail.  An entry that finds the ring full is not written, and
     * counted in trace_dropped. */
    atomic_uint trace_on;
    atomic_uint_fast64_t trace_head, trace_tail, trace_dropped;
    struct ds_shm_trace_ev trace[DS_SHM_TRACE];
};

/* One export in the CUDA IPC registry (server/ipcreg.h), written only by its tenant's
 * executor, or by the control process clearing the slot once that executor is gone. */
struct ds_shm_ipc {
    atomic_uint seq;  /* even while stable, odd while being rewritten */
    uint32_t kind;    /* 0 when free, else enum ds_ipcreg_kind */
    uint32_t uid;     /* the exporting tenant's user */
    uint32_t reserved0;
    uint64_t size;    /* memory: the allocation's bytes */
    uint64_t key[2];  /* random: a tenant's handle to the entry carries the same */
    unsigned char blob[DS_SHM_IPC_BLOB]; /* the backend's: what opening it takes */
    uint64_t reserved[3];
};

enum ds_shm_device { DS_SHM_SIM = 1, DS_SHM_CUDA = 2 };

/* Fault domains (docs/reliability.md).  Under MPS a kernel's fault ends the context of
 * every client of the MPS server, so the tenants that share SMs share their faults:
 * `shared` executors are clients of the server's MPS daemon; a `group` executor is a
 * client of its named group's daemon; an `own` executor is none (it takes turns with
 * the others on the GPU), and a fault in one domain stays in it.  0 in a quota rule:
 * not set there. */
enum ds_isolation { DS_ISO_UNSET = 0, DS_ISO_SHARED = 1, DS_ISO_OWN = 2, DS_ISO_GROUP = 3 };

/* One domain of executors that share an MPS server, and so their faults: the shared
 * domain, or a named group.  An executor of the domain whose own kernel faulted writes
 * its tenant's id and name here, then bumps faults: on the sim, which models MPS, every
 * other context of the domain then fails as under MPS, and the executors of the tenants
 * it cost can name the culprit.  An MPS client that finds its context failed bumps lost:
 * the other executors of its domain then look at theirs. */
struct ds_shm_domain {
    char group[DS_GROUP_MAX + 1]; /* the group's name, written by the control process
                                   * before its first executor starts; "" for shared */
    atomic_uint faults;
    atomic_uint lost;
    atomic_uint_fast64_t fault_by;
    char fault_name[DS_NAME_MAX + 1];
};

/* Whose kernel ended a failed context, as its executor tells it. */
enum ds_fault_origin { DS_FAULT_NONE = 0, DS_FAULT_OWN = 1, DS_FAULT_NEIGHBOUR = 2,
                       DS_FAULT_UNKNOWN = 3 };
enum ds_shm_mps { DS_SHM_MPS_NONE, DS_SHM_MPS_WARN, DS_SHM_MPS_RETRY };

/* One quota rule: the limits of the tenants whose name it matches (server/quota.h). */
struct ds_shm_quota {
    char name[DS_NAME_MAX + 1]; /* a tenant name, or a prefix followed by '*' */
    uint64_t memory;            /* bytes; 0: no limit */
    uint32_t sm_share;          /* percent of the SM groups, 1..100; 0: no limit */
    uint32_t kernel_time;       /* percent of the time the tenant may have work on the
                                 * device, 1..100; 0: no limit (throttle.h) */
    uint32_t klass;             /* enum ds_quota_class: the class the tenant gets,
                                 * whatever its hello claims */
    uint32_t isolation;         /* enum ds_isolation: the tenant's fault domain */
    char group[DS_GROUP_MAX + 1]; /* its name, for DS_ISO_GROUP */
    uint32_t uid;               /* with has_uid: the Unix user the rule is bound to */
    uint32_t has_uid;
};

struct ds_shm {
    uint32_t version;
    uint32_t nslots;
    uint64_t sim_mem_total;
    /* Written once by the control process before any executor starts. */
    uint32_t device; /* enum ds_shm_device */
    int32_t gpu;
    int32_t sim_sms;
    uint32_t spin_us;
    uint32_t sync_spin_us; /* --sync-spin-us */
    uint32_t sm_group_size, sm_groups; /* ds_sm_groups of the device */
    /* enum ds_shm_mps: whether executors should be MPS clients (--mps start or external;
     * the sim models MPS), and what one that is not does.  Its tenant would take turns
     * instead of sharing SMs, so it says so loudly; a warm one, with no tenant yet,
     * leaves for another to start (DS_EXEC_NO_MPS) until the control process gives up. */
    atomic_uint mps_expected;
    /* 1 while the policy in force uses gates: executors then also make the GPU wait on
     * the gate before each kernel (backend gate), which costs a driver call. */
    atomic_uint gating;
    /* Raised by the control process each time an executor of the shared domain left
     * because its device context failed (DS_EXEC_DEVICE_LOST): under MPS a fault ends
     * every client's context, so each executor then asks its device whether its own has
     * failed too. */
    atomic_uint faults;
    /* SM-group sets the control process bound tenants to lately, newest last (0: none):
     * warm executors make their contexts before a tenant needs one (server/exec/binder.h). */
    atomic_uint_fast64_t hot_groups[DS_SHM_HOT];
    /* The shared domain ([0]) and the named groups ([1..DS_SHM_GROUPS]). */
    struct ds_shm_domain domains[1 + DS_SHM_GROUPS];
    /* Host memory an executor may hold for its tenant's pending calls, and all
     * executors together (slot host_bytes), in bytes; 0: no limit.  Set by the control
     * process before any tenant connects (ds_shm_create's defaults otherwise). */
    uint64_t host_limit;
    uint64_t host_total;
    uint64_t reserved[2];
    /* The quota rules, written only by the control process under a sequence lock:
     * quota_seq is odd while they are rewritten (ds_quota_publish, ds_quota_lookup). */
    atomic_uint quota_seq;
    uint32_t nquotas;
    struct ds_shm_quota quotas[DS_SHM_QUOTAS];
    struct ds_shm_slot slots[DS_SHM_SLOTS];
    /* Slot i's IPC exports: 128 KiB each, touched only as far as it exports. */
    struct ds_shm_ipc ipc[DS_SHM_SLOTS][DS_SHM_IPC_MAX];
};

/* Create and map a zeroed block in a new memfd (close-on-exec), returned in *fd.
 * Returns NULL on failure (errno set).  Free with ds_shm_unmap. */
struct ds_shm *ds_shm_create(uint64_t sim_mem_total, int *fd);

/* Map the block in memfd `fd` made by ds_shm_create in another process.  Returns NULL
 * when fd is not a control block of this version. */
struct ds_shm *ds_shm_attach(int fd);

void ds_shm_unmap(struct ds_shm *shm);

/* Take a free slot; returns its index or -1 when all are taken. */
int ds_shm_slot_take(struct ds_shm *shm);

/* Return a slot to the free pool, forgetting everything its tenant held, its IPC exports
 * included. */
void ds_shm_slot_clear(struct ds_shm *shm, int idx);

/* Account `size` bytes of sim device memory to slot idx.  Returns 0, or DS_ENOMEM when
 * the device has less than that free.  Concurrent reservations never overcommit: each
 * adds first and backs out if the sum went over. */
int ds_shm_sim_reserve(struct ds_shm *shm, int idx, uint64_t size);
void ds_shm_sim_release(struct ds_shm *shm, int idx, uint64_t size);

/* The default host_total: half the machine's memory, and no less than
 * DS_SHM_HOST_LIMIT. */
uint64_t ds_shm_default_host_total(void);

/* Account size bytes of host memory to slot idx's executor (its host_bytes).  Returns 0,
 * or DS_ENOMEM when that takes the slot past host_limit or all slots together past
 * host_total; concurrent reservations never overcommit, as with ds_shm_sim_reserve. */
int ds_shm_host_reserve(struct ds_shm *shm, int idx, uint64_t size);
void ds_shm_host_release(struct ds_shm *shm, int idx, uint64_t size);

/* Ask slot idx's executor to run on SM groups `groups` from its next kernel on (and
 * wake whoever waits in ds_shm_bind_wait); `groups` joins hot_groups. */
void ds_shm_bind(struct ds_shm *shm, int idx, uint64_t groups);

/* Wake whoever waits in ds_shm_bind_wait on slot idx, with nothing new. */
void ds_shm_bind_wake(struct ds_shm *shm, int idx);

/* Wait up to timeout_ms for slot idx's bind_gen to differ from `seen`; returns it. */
unsigned ds_shm_bind_wait(struct ds_shm *shm, int idx, unsigned seen, int timeout_ms);

/* Close (1) or open (0) slot idx's gate.  The executor looks at it before each launch,
 * and while it holds calls, every 200 us. */
void ds_shm_gate(struct ds_shm *shm, int idx, int closed);

/* How many of slot idx's `launches` the device had completed at time now_ns, from its
 * progress stamps: at most launches, and possibly fewer than were really done while
 * DS_SHM_STAMPS or more stamps are in flight (the caller keeps the largest answer it got).
 * `launches` when stamps are off. */
uint64_t ds_shm_stamps_done(const struct ds_shm *shm, int idx, uint64_t launches,
                            uint64_t now_ns);

/* The MPS domain slot s's executor shares, by its isolation and group: the shared
 * domain's or its group's, or NULL for a domain of its own. */
struct ds_shm_domain *ds_shm_domain_of(struct ds_shm *shm, const struct ds_shm_slot *s);

/* Sim device bytes in use by all tenants. */
uint64_t ds_shm_sim_used(const struct ds_shm *shm);

#endif
