/*
 * Calls held back while the tenant's gate is closed.
 *
 * A closed gate (server/shm.h) means: start none of this tenant's kernels.  It must not
 * mean that the executor stops, or a held tenant could not be told its other threads'
 * replies, the replies whose fences have passed, or that the server is stopping.  So a
 * launch that meets a closed gate is not waited for in place: the call is held here with
 * its decoded arguments (the queue owns them), and so is every later call that could see
 * or change what held work does — copies, fills, event records and waits,
 * synchronisations, frees, destroys — in the order the tenant made them.  Calls that
 * cannot (creating things, loading modules, pure queries of state that stream work does
 * not change) run ahead, at once.  The executor's loop serves held calls again, in
 * order, before each poll, until a launch meets the gate still closed.
 *
 * One queue per tenant, not one per stream: the gate holds the whole tenant, and events
 * and the legacy stream tie its streams together, so the order the calls came in is the
 * one order that is always right without tracking which stream waits for which.
 */
#ifndef DS_HELD_H
#define DS_HELD_H

#include <stdint.h>

struct ds_held_call {
    unsigned long proc;
    uint32_t xid;
    void *args; /* decoded, owned by the queue until served */
    struct ds_held_call *next;
};

struct ds_held {
    struct ds_held_call *head, **tail;
    unsigned count;
    uint64_t since_ns; /* when the first call of the present backlog was held */
};

void ds__held_init(struct ds_held *q);

/* 1 when a call of procedure proc must be held now: either the backlog is not empty and
 * the call could see or change held work, or it is a launch and the gate is closed
 * (gate_closed says so; it is asked only for launches). */
int ds__held_must_hold(const struct ds_held *q, unsigned long proc, int (*gate_closed)(void));

/* 1 for the procedures that start kernels: a closed gate holds them. */
int ds__held_is_launch(unsigned long proc);

/* Append a call; args (malloc'd, decoded) is taken over.  Returns 0 or DS_ENOMEM (args is
 * then still the caller's). */
int ds__held_push(struct ds_held *q, unsigned long proc, uint32_t xid, void *args);

/* Take the oldest call off the queue: the caller serves it and frees its arguments.
 * *held_ns is set to how long the backlog lasted when this empties it, else 0. */
struct ds_held_call *ds__held_pop(struct ds_held *q, uint64_t *held_ns);

#endif
