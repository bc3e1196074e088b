/*
 * Named fault domains (isolation=group:NAME, docs/reliability.md): the groups this
 * server runs, by index 1..DS_SHM_GROUPS (the control block's domains).  Under --mps
 * start each group has an MPS daemon of its own (mps.h, ds_mps_group_start), started
 * when the group's first tenant comes; tenants that come while it starts wait for it,
 * and are never refused for it: should it fail, they run in a domain of their own.  A
 * group, once made, lasts as long as the server, and so does its daemon (it costs a
 * process and no GPU memory while no client uses it); the server stops them as it
 * exits.  On the sim, which models MPS, a group has no daemon.
 */
#ifndef DS_CONTROL_GROUP_H
#define DS_CONTROL_GROUP_H

#include "mps.h"
#include "shm.h"

#include <stdint.h>
#include <uv.h>

struct control;
struct listener;
struct ds_waiter;

struct ds_group {
    char name[DS_GROUP_MAX + 1]; /* "" while the entry is free */
    int state;                   /* enum in group.c: no daemon, starting, up */
    uint64_t since_ns;           /* when its daemon was started */
    struct ds_mps_group mps;
    struct ds_waiter *waiting;     /* tenants waiting for its daemon, oldest first */
};

/* The index of group `name`, made when new (its name published in the control block),
 * or 0 when DS_SHM_GROUPS groups exist already. */
unsigned ds__group_index(struct control *c, const char *name);

/* Tenant `name` on client, of group g, waits for the group's daemon when it has to be
 * started or is starting: returns 1 and takes client; ds__intake_serve serves it once
 * the daemon takes clients (as DS_ISO_GROUP), or failed to (DS_ISO_OWN).  Returns 0 when
 * it need not wait: the daemon is up, or the group has none (the sim). */
int ds__group_wait(struct control *c, unsigned g, struct listener *l, uv_stream_t *client,
                   const char *name, int vouched);

/* The MPS pipe directory of group g's daemon, for its executors; NULL when it has none
 * (the sim). */
const char *ds__group_pipe(const struct control *c, unsigned g);

/* Child pid exited with status: 1 when it was a group's daemon, which is then down (and
 * started again when the group's next tenant comes). */
int ds__group_reaped(struct control *c, pid_t pid, int status);

/* The server stops: tenants still waiting are handed to ds__intake_serve, which
 * refuses them. */
void ds__group_cancel(struct control *c);

/* After the event loop: every group's daemon is stopped. */
void ds__group_stop_all(struct control *c);

#endif
