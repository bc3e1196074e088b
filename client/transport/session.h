/*
 * Setting up the client's session with each of its servers (route.h names them), before
 * any call goes over it (rpc.h).  For each in turn: connect; on a Unix socket, check
 * that root, the tenant's own user or DETSHARE_SERVER_UID runs the server, before
 * anything is sent; show the preface (the tenant's name, and its token when one is set:
 * token.h), through TLS over TCP when the tenant asks for TLS, whose stream keys then
 * protect the rest of the stream; a local tenant hands over its host arena, stdout and
 * stderr, and a call ring (DETSHARE_RING=0: none); then the hello, whose answer
 * describes the device, and gives the tenant's id, the secret its data connections show
 * (stripe.h) and the device address ranges the executor reserved, which the tenant
 * reserves too (vaspace.h).
 */
#ifndef DS_CLIENT_SESSION_H
#define DS_CLIENT_SESSION_H

#include "detshare.h"
#include "ds_addr.h"
#include "route.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>

struct ds_rpc_pending;
struct ds_wire;

/*
 * One server's session: its connection and what its hello said, set up here, and the
 * state of the calls that go over it, which rpc.c keeps.
 *
 * Two locks, so that reading replies never waits for a send: the executor writes a
 * reply whole before it reads another call, so a sender blocked on a full socket may be
 * waiting for exactly the reply the reader is taking in.  `lock` is the sending side's
 * (the wire's send stream and ring, the flusher's state) and may be held across a
 * blocking send; `wait` guards the calls waiting for replies and the reader role, and
 * is never held across I/O.  When both are taken, `lock` comes first; of two sessions',
 * the lower device's first.
 */
struct ds_session {
    pthread_mutex_t lock;
    pthread_cond_t queued; /* a first call was queued while the flusher slept */
    pthread_mutex_t wait;
    struct ds_rpc_pending *pending; /* under wait */
    atomic_int reading;             /* written under wait: a thread reads replies */
    atomic_uint wait_spin_us;       /* how long a caller awaits its reply before sleeping */
    struct ds_wire *wire;
    atomic_int lost;
    int flusher_idle;
    int after_sync; /* the last call sent awaits a reply: the device may be idle */
    int dev;
    ds_hello_res hello;
    char where[300];
    struct ds_addr addr;
    int tls;
};

/* Set up the sessions of every server the tenant uses, device k's in sess[k], into
 * sess[0 .. *n), whose locks are made already; *spin_us is how long a reply is awaited
 * before sleeping when the context's flags leave it to the client (DETSHARE_SPIN_US).
 * Returns CUDA_SUCCESS, or CUDA_ERROR_NO_DEVICE after one line on stderr saying why,
 * naming the server that failed; then no session stays connected, so that a later
 * cuInit starts afresh. */
CUresult ds__session_open_all(struct ds_session sess[DS_ROUTE_MAX], int *n, unsigned *spin_us);

#endif
