/*
 * An executor serves one tenant on one connection, in its own process: it decodes the
 * tenant's calls, checks them, runs them on its backend and replies.  A crash here
 * takes down only this tenant.
 */
#ifndef DS_EXECUTOR_H
#define DS_EXECUTOR_H

#include "backend.h"
#include "exec_spawn.h"

/* The executor program, `detshare-server --executor SLOT` (exec_spawn.h): open the device,
 * wait for the tenant's connection, serve it until it disconnects, breaks the protocol
 * or SIGTERM arrives, then free everything the tenant held.  Returns a ds_exec_status,
 * the process's exit status. */
int ds_executor_main(const char *slot_arg);

/* The same in this process, for the fuzz target (fuzz/): serve a tenant on connected
 * socket fd (taken over) with the device `ops` opens from cfg (cfg->shm and cfg->slot
 * name a slot of a control block from ds_shm_create), until it disconnects or breaks the
 * protocol, then free everything it held.  Signals are the caller's.  Returns a
 * ds_exec_status. */
int ds__executor_serve(const struct ds_backend_ops *ops, const struct ds_backend_config *cfg,
                       int fd);

#endif
