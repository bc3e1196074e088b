/*
 * The control process's connection intake: its listeners, and each connection from
 * accept until an executor takes it or it is refused.  Every tenant shows a preface
 * first (auth.h), so that its fault domain is chosen from its name and a connection that
 * never sends one costs no executor; an executor of that domain then gets the
 * connection (handover.h), whose hello it answers.  A data connection (protocol 24, TCP
 * striping) names its tenant instead, and goes to that tenant's executor, which checks
 * its secret.  A refusal costs a log line (a flood of them is summed up), a count for
 * metrics, and the reason, sent to the tenant.
 */
#ifndef DS_CONTROL_INTAKE_H
#define DS_CONTROL_INTAKE_H

#include "exec_spawn.h"

#include <stdint.h>
#include <uv.h>

struct control;
struct listener;

/* Listen on every address of the server's configuration, and take data connections
 * from then on.  Returns 0, or -1 (said why) once one cannot be listened on; those
 * opened stay, for ds__intake_close. */
int ds__intake_open(struct control *c);

/* Stop listening; a Unix socket's file is removed. */
void ds__intake_close(struct control *c);

/* Serve tenant `name` on client (its preface read; vouched: a token was checked for it)
 * in fault domain `isolation` and group: an executor takes it, or it is refused (the
 * server stops, no slot is free).  Closes client. */
void ds__intake_serve(struct listener *l, uv_stream_t *client, const char *name, int vouched,
                      uint32_t isolation, unsigned group);

/* Executor e (warm: started ahead) takes tenant `name` on fd, accepted on l: its slot
 * records who the tenant is (a new id, its peer, the name its hello must give), and the
 * policy places it before its first kernel runs.  vouched: a token was checked for it. */
void ds__intake_assign(struct listener *l, const struct ds_spawned *e, int warm, uv_os_fd_t fd,
                       const char *name, int vouched);

#endif
