/*
 * The handover watch: a tenant's connection handed to its executor stays the control
 * process's too until the executor says it took it.  Another executor gets the tenant
 * when the first turns out to be leaving, leaves before taking it, or does not take it
 * in time (stopped, or starved of CPU); docs/reliability.md, "An executor that does not
 * take its tenant".  A TLS tenant's stream keys go with its connection to each executor
 * offered it: the control process shook hands, the executor carries on the stream.
 */
#ifndef DS_CONTROL_HANDOVER_H
#define DS_CONTROL_HANDOVER_H

#include "control_int.h"
#include "ds_tls.h"

/* Hand tenant `name` (vouched: a token was checked for it), its preface answered on
 * client, to executor e, the first offered it, with the stream keys of its TLS session
 * when it has one (auth.h); fd is the control process's own descriptor of the
 * connection (taken), kept until e says it took it.  Another executor gets the tenant
 * when e turns out to be leaving (a warm executor that came up as no MPS client shuts
 * its end first: the handover fails with EPIPE), leaves before taking it, or does not
 * take it within HANDOVER_DEADLINE_MS (handover.c); the keys go to each.  Takes e's end
 * of the pair.  client stays the caller's, to close. */
void ds__handover_start(struct listener *l, struct ds_spawned *e, uv_stream_t *client, int fd,
                        const char *name, int vouched);

/* The server stops: connections handed over and not yet taken are left to their
 * executors, which stop too. */
void ds__handover_forget_all(struct control *c);

/* Executor pair end kept for slot's tenant (once it took it, for its data connections)
 * is closed: the tenant left. */
void ds__handover_forget_slot(struct control *c, int slot);

/* The pair end on which tenant id's executor takes data connections
 * (ds_spawn_attach), or -1 when no such tenant is served. */
int ds__handover_attach_ctl(struct control *c, unsigned long long id);

#endif
