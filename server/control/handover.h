/*
 * The handover watch: a tenant's connection handed to its executor stays the control
 * process's too until the executor says it took it.  Another executor gets the tenant
 * when the first turns out to be leaving, leaves before taking it, or does not take it
 * in time (stopped, or starved of CPU); docs/reliability.md, "An executor that does not
 * take its tenant".
 */
#ifndef DS_CONTROL_HANDOVER_H
#define DS_CONTROL_HANDOVER_H

#include "control_int.h"
#include "ds_tls.h"

/* Hand the tenant on fd (the control process's own descriptor, taken) to executor e,
 * the tries-th offered it, and keep fd until e says it took it: another executor gets
 * it when e turns out to be leaving (a warm executor that came up as no MPS client
 * shuts its end first: the handover fails with EPIPE), leaves before taking it, or does
 * not take it within HANDOVER_DEADLINE_MS (handover.c).  Takes e's end of the pair.
 * keys, when not NULL, are the tenant's TLS stream keys, which go with the connection
 * (copied: the caller wipes its own). */
void ds__handover_offer(struct listener *l, struct ds_spawned *e, int fd, const char *name,
                        int vouched, int tries, const struct ds_tls_keys *keys);

/* The server stops: connections handed over and not yet taken are left to their
 * executors, which stop too. */
void ds__handover_forget_all(struct control *c);

#endif
