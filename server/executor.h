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

/* The executor program, `detshare-server --executor SLOT` (exec_spawn.h): open the device,
 * wait for the tenant's connection, serve it until it disconnects, breaks the protocol
 * or SIGTERM arrives, then free everything the tenant held.  Returns a ds_exec_status,
 * the process's exit status. */
int ds_executor_main(const char *slot_arg);

/* 1 once SIGTERM asked this executor to stop: long waits give up on it. */
int ds_executor_stopping(void);

#endif
