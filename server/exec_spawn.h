/*
 * Executors are separate programs: `detshare-server --executor SLOT`, started with
 * posix_spawn by the control process, never forked from it (the control process runs
 * libuv and, later, scheduler and admin threads; a fork of such a process may inherit
 * locks held by threads that do not exist in the child).  An executor gets two
 * descriptors at fixed numbers: the control block (shm.h) and one end of a socket pair
 * on which the control process later hands it its tenant's connection.  Starting an
 * executor before a tenant arrives lets it initialise the device ahead of time.
 */
#ifndef DS_EXEC_SPAWN_H
#define DS_EXEC_SPAWN_H

#include <signal.h>
#include <sys/types.h>

/* Exit statuses, read by the control process to log why a tenant left. */
enum ds_exec_status {
    DS_EXEC_DISCONNECTED = 0, /* the tenant closed its connection */
    DS_EXEC_FAILED = 1,       /* the executor could not start (backend, memory) */
    DS_EXEC_PROTOCOL = 2,     /* malformed bytes or a refused handshake */
    DS_EXEC_STOPPED = 3,      /* the server is shutting down */
    DS_EXEC_DEVICE_LOST = 4,  /* the tenant's device context failed for good (a kernel's
                               * fault, or under MPS a neighbour's) */
    DS_EXEC_STUCK = 5,        /* the tenant left, the executor stayed stuck in the driver,
                               * and its watchdog ended it (exec/watchdog.h) */
    DS_EXEC_NO_MPS = 6,       /* a warm executor whose context is no MPS client, though
                               * the server runs MPS: another is started (shm.h) */
    DS_EXEC_NO_HELLO = 7,     /* the tenant sent no hello before its deadline
                               * (server/exec/executor.c, HELLO_DEADLINE_MS) */
};

#define DS_EXEC_SHM_FD 3 /* the control block's memfd */
#define DS_EXEC_CTL_FD 4 /* socket pair end on which the tenant's connection arrives */

struct ds_spawned {
    pid_t pid;
    int ctl; /* the control process's end of the socket pair, -1 once handed over */
    int slot;
};

/* Start an executor for control block slot `slot`, with this process's environment but
 * for CUDA_MPS_PIPE_DIRECTORY=mps_pipe when mps_pipe is not NULL (an executor of a fault
 * domain of its own, shm.h).  Returns 0, or -1 with errno set. */
int ds_spawn_executor(int shm_fd, int slot, const char *mps_pipe, struct ds_spawned *out);

/* Give the executor its tenant's connection, keeping the control end open for the
 * executor's word that it took it (ds_spawn_taken).  The executor need not have
 * finished starting: the descriptor waits in the socket.  Returns 0, or -1 with errno
 * set (EPIPE: the executor is leaving, or has died).  keys, when not NULL, are a TLS
 * tenant's stream keys (ds_tls.h), sent with the descriptor. */
struct ds_tls_keys;
int ds_spawn_handover(struct ds_spawned *e, int tenant_fd, const struct ds_tls_keys *keys);

/* Whether the executor took the connection handed to it: 1 when it said so, 0 when it
 * has not yet, -1 when it never will (it closed its end: it has died).  Does not wait. */
int ds_spawn_taken(struct ds_spawned *e);

/* Hand executor's pair end ctl (kept after its tenant was taken) a data connection
 * fd that claims to be its tenant's, with the secret it showed (DS_ATTACH_SECRET
 * bytes), which the executor checks (ds_spawn_take_attach).  Returns 0, or -1 with
 * errno set. */
int ds_spawn_attach(int ctl, int fd, const unsigned char *secret);

/* Close the control process's end of e's pair (e->ctl becomes -1). */
void ds_spawn_close(struct ds_spawned *e);

/* Executor side.  A thread of the executor's own takes the tenant's connection from
 * DS_EXEC_CTL_FD the moment it comes and says so to the control process, whatever the
 * executor's main thread is doing meanwhile (opening the device takes seconds on a GPU
 * under MPS): the control process kills an executor that does not, as stopped or
 * stuck (server/control/handover.c, HANDOVER_DEADLINE_MS).  Returns 0 or an errno
 * value (the thread could not be started). */
int ds_spawn_listen(void);

/* Whether the tenant's connection has come.  Does not wait. */
int ds_spawn_tenant_came(void);

/* Take no tenant from now on: a handover after this fails with EPIPE, while one that
 * came before it is still there for ds_spawn_await_tenant. */
void ds_spawn_stop_taking(void);

/* Once the tenant was taken: wait for a data connection handed over by ds_spawn_attach,
 * and the secret it showed (DS_ATTACH_SECRET bytes).  Returns 0 with *fd set
 * (close-on-exec), or -1 when the pair ended (the control process closed it, or
 * ds_spawn_stop_attaching). */
int ds_spawn_take_attach(int *fd, unsigned char *secret);

/* Make a ds_spawn_take_attach waiting in another thread return -1. */
void ds_spawn_stop_attaching(void);

/* Wait for the tenant's connection, looking at *stop every 100 ms.  Returns its
 * descriptor (close-on-exec), or -1 when *stop was set first or none will come (the
 * control process closed the pair: it stops, or has died; or ds_spawn_stop_taking). */
int ds_spawn_await_tenant(const volatile sig_atomic_t *stop);

/* The stream keys that came with a TLS tenant's connection: 1 with *k set (and the
 * executor's copy wiped), 0 for a tenant without TLS. */
int ds_spawn_tenant_keys(struct ds_tls_keys *k);

#endif
