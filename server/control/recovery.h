/*
 * Recovery of an MPS domain after a kernel's fault (docs/reliability.md, "Recovery").
 * Under MPS a fault ends the context of every client of the domain's daemon, and the
 * daemon admits no new client until every one of them has exited: a tenant whose
 * executor opened the device in between was refused by the driver (run 120, H200: the
 * first tenant after a fault, 470 ms after it, got "device error").  So when an executor
 * of a domain (the shared one, or a named group) leaves with its context lost, the
 * executors of that domain still alive are noted, and tenants of the domain that come
 * meanwhile wait until all of those have exited (at most RECOVERY_WAIT_MS), and are then
 * served, never refused for it.  The sim, which models MPS's blast radius, waits alike.
 */
#ifndef DS_CONTROL_RECOVERY_H
#define DS_CONTROL_RECOVERY_H

#include "control.h"
#include "shm.h"

#include <sys/types.h>
#include <uv.h>

struct control;
struct listener;
struct ds_waiter;

/* Domains: 0 the shared one, 1..DS_SHM_GROUPS a named group's (shm.h). */
struct ds_recovery {
    int active;                  /* a fault's clients are still exiting */
    pid_t pids[DS_SHM_SLOTS + DS_MAX_WARM]; /* those alive when the fault was seen */
    int npids;
    uint64_t since_ns;           /* when it was seen */
    unsigned lost_seen;          /* the domain's lost count (shm.h) looked at last */
    struct ds_waiter *waiting;    /* tenants that came since, oldest first */
};

/* An executor of domain dom found its context lost, or left so: note every live executor
 * of the domain (its tenants' and, for the shared one, the warm ones) as what must exit
 * first. */
void ds__recovery_begin(struct control *c, unsigned dom);

/* Every sample (5 ms): a domain whose executors counted a lost context since (shm.h,
 * lost) begins its recovery, before the first of them has even left. */
void ds__recovery_watch(struct control *c);

/* Tenant `name` on client, of domain dom, waits while that domain recovers: returns 1 and
 * takes client (ds__intake_serve serves it later), else 0. */
int ds__recovery_wait(struct control *c, unsigned dom, struct listener *l,
                      uv_stream_t *client, const char *name, int vouched, uint32_t isolation);

/* Child pid exited: once a recovering domain's last noted executor has, its waiting
 * tenants are served. */
void ds__recovery_reaped(struct control *c, pid_t pid);

/* The deadline timer's callback and the server's stop: waiting tenants are served (or,
 * stopping, refused by ds__intake_serve). */
void ds__recovery_on_timer(uv_timer_t *t);
void ds__recovery_cancel(struct control *c);

#endif
