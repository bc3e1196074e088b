/*
 * The control process's half of detshare-ctl trace (docs/admin.md, "Tracing a tenant").
 * A trace is of a tenant name, for a number of seconds: every tenant connected under that
 * name, and every one that connects while it runs, gets trace_on in its slot (shm.h), and
 * every DS_TRACE_DRAIN_MS the entries its executor put in the slot's ring are moved here,
 * up to DS_TRACE_EVENTS a trace (more are counted as dropped).  Gate holds are recorded
 * here, where the gates are closed.  After its seconds, a trace waits to be fetched (the
 * stop request), for DS_TRACE_KEEP_MS at most.  One trace of a name runs at a time: a
 * second start is refused while one runs.
 */
#ifndef DS_TRACECTL_H
#define DS_TRACECTL_H

#include <msgpack.h>

#define DS_TRACE_DRAIN_MS 10
#define DS_TRACE_EVENTS 100000
#define DS_TRACE_KEEP_MS 60000
#define DS_TRACE_MAX_SECONDS 3600
/* Traces (of different names) at once. */
#define DS_TRACES 8

struct control;

/* The admin API's trace request (admin.h): start a trace of tenants `name` for
 * `seconds`, or with stop != 0, end it now if it runs and answer with what it holds.
 * Packs the answer; ctx is the control process. */
void ds__tracectl_admin(void *ctx, const char *name, int stop, unsigned seconds,
                     msgpack_packer *pk);

/* Slot `slot`'s gate was closed (1) or opened (0) now. */
void ds__tracectl_gate(struct control *c, int slot, int closed);

/* Slot `slot`'s executor is gone: what its ring still holds is taken before the slot is
 * cleared. */
void ds__tracectl_left(struct control *c, int slot);

/* Free every trace and close the timer (the control process's end). */
void ds__tracectl_close(struct control *c);

#endif
