/*
 * An executor serves one tenant on one connection, in its own process: it decodes the
 * tenant's calls, checks them, runs them on its backend and replies.  A crash here
 * takes down only this tenant.
 */
#ifndef DS_EXECUTOR_H
#define DS_EXECUTOR_H

#include "backend.h"

/* Exit statuses, read by the control process to log why a tenant left. */
enum ds_exec_status {
    DS_EXEC_DISCONNECTED = 0, /* the tenant closed its connection */
    DS_EXEC_FAILED = 1,       /* the executor could not start (backend, memory) */
    DS_EXEC_PROTOCOL = 2,     /* malformed bytes or a refused handshake */
    DS_EXEC_STOPPED = 3,      /* the server is shutting down */
};

struct ds_exec_config {
    const struct ds_backend_ops *backend;
    struct ds_backend_config be;
    unsigned spin_us; /* poll this long for the tenant's next request before sleeping */
};

/* Serve the tenant on connected socket `fd` until it disconnects, breaks the protocol
 * or SIGTERM arrives.  Closes fd and frees everything the tenant held.  Returns a
 * ds_exec_status. */
int ds_executor_run(int fd, const struct ds_exec_config *cfg);

#endif
