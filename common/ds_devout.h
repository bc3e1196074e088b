/*
 * Device output of a local tenant.  The CUDA driver writes what kernels printed (printf,
 * failed asserts) to the process that holds the context, on its fd 1 and 2, at
 * synchronisation points; that process is the tenant's executor.  So the client hands
 * its own stdout and stderr over right after connecting, like the host arena
 * (ds_arena.h), as marker bytes with the descriptors attached, and the executor puts
 * them on its fd 1 and 2 (server/exec/devout.h).
 */
#ifndef DS_DEVOUT_H
#define DS_DEVOUT_H

#define DS_STDOUT_MARKER 'O'
#define DS_STDERR_MARKER 'E'

/* Hand this process's fd 1 and 2 over on socket sock.  A closed one (or sock itself,
 * which takes a closed one's place) goes as /dev/null, so that the device's output goes
 * nowhere, as it would natively, rather than to the server or into the connection.
 * Returns 0 or DS_EIO. */
int ds_devout_send(int sock);

#endif
