/*
 * The client's connections to its executors, one per server the tenant uses (one device
 * each: route.h says which call goes where), shared by every application thread.  What
 * follows holds for each connection on its own.
 * Calls leave one at a time, under a sending lock; a synchronous call then waits for its
 * reply without holding it, so the tenant's other threads go on calling meanwhile, as
 * with the driver.  Replies may come in any order and are matched to their calls by
 * xid: one waiting thread at a time reads the socket, hands each reply to its caller,
 * and passes the reading on once its own reply is in.
 *
 * Batched calls get no reply and are buffered, which is what lets a tenant issue
 * asynchronous work at memory speed.  A buffer leaves with the next synchronous call,
 * once it is 20 us old when more calls come, or after 200 us when the tenant stops
 * calling (a flusher thread sends it), so the GPU does not wait for the tenant's next
 * synchronisation to start on work already issued; the first batched call after a
 * synchronous one leaves at once, since the device may be idle until it comes.
 *
 * A transport failure, whenever it happens, is reported to the application as
 * CUDA_ERROR_DEVICE_UNAVAILABLE and logged once: every call waiting for a reply fails
 * with it, and so does every later call; the session does not come back.
 */
#ifndef DS_RPC_H
#define DS_RPC_H

#include "ds_procs.h"
#include "route.h"

#include <cuda.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* Connect to the servers (route.h: DETSHARE_SERVER, CUDA_VISIBLE_DEVICES) and shake
 * hands, once; owner answers which device a device address is on.  Returns
 * CUDA_SUCCESS, or CUDA_ERROR_NO_DEVICE after one line on stderr saying why (naming the
 * server that failed); then no connection stays open. */
CUresult ds__rpc_init(ds_route_owner_fn owner);

/* 1 once ds__rpc_init has succeeded. */
int ds__rpc_ready(void);

/* How many devices the tenant sees (one per server); 0 before ready. */
int ds__rpc_devices(void);

/* Device dev as its server described it at the handshake; NULL before ready or for a
 * device the tenant does not have. */
const ds_device_desc *ds__rpc_device(int dev);

/* Device dev's primary context's handle (tagged, route.h), known from the handshake on;
 * 0 before, or for a device the tenant does not have. */
uint64_t ds__rpc_primary(int dev);

/* The scheduling flags (CU_CTX_SCHED_*) of the context the tenant made current or
 * created: how a synchronous call awaits its reply.  SPIN and YIELD never sleep,
 * BLOCKING_SYNC sleeps at once, AUTO polls for DETSHARE_SPIN_US (default 200) first. */
void ds__rpc_sched_flags(unsigned flags);

/* Send `arg` to procedure `proc` and decode the reply into `res`, whose first member is
 * the CUresult; returns that CUresult, or CUDA_ERROR_DEVICE_UNAVAILABLE when the
 * transport failed, or CUDA_ERROR_NOT_SUPPORTED when arg names objects of two devices
 * (res then holds nothing to free). */
CUresult ds__rpc_call(unsigned long proc, xdrproc_t xarg, void *arg, xdrproc_t xres, void *res);

/* A synchronous call waiting for its reply, in the caller's storage from ds__rpc_post
 * until ds__rpc_collect returns.  The fields belong to rpc.c. */
struct ds_session;
struct ds_rpc_pending {
    struct ds_rpc_pending *next;
    unsigned long proc;
    uint32_t xid;
    xdrproc_t xres;
    void *res;
    uint64_t t0;
    struct ds_session *session;
    atomic_int done;       /* the reply is decoded into res */
    int sleeping;          /* the caller sleeps on *wake */
    pthread_cond_t *wake;  /* the calling thread's */
};

/* Several synchronous calls in flight from one thread, for copies over TCP, whose round
 * trips would otherwise leave each side idle in turn.  ds__rpc_hold keeps the other
 * threads from sending to the server that a call of proc with arguments arg would go
 * to, not from waiting for their replies (returns CUDA_SUCCESS, or
 * CUDA_ERROR_DEVICE_UNAVAILABLE or CUDA_ERROR_NOT_SUPPORTED without holding); the calls
 * posted go to that server; ds__rpc_post sends a call whose reply
 * is to be decoded into res (returns CUDA_SUCCESS or CUDA_ERROR_DEVICE_UNAVAILABLE);
 * ds__rpc_release lets the others send again; ds__rpc_collect waits for a posted
 * call's reply, in any order, and returns as ds__rpc_call does.  Every p given to
 * ds__rpc_post must be collected, whatever post returned.  The calls leave back to
 * back, and the thread sends nothing else until it has collected them all: the
 * executor writes a reply whole before it reads on, so a thread that had to wait to
 * send while a reply of its own is unread could wait for ever. */
CUresult ds__rpc_hold(unsigned long proc, xdrproc_t xarg, void *arg);

/* The device whose session serves proc's call with arg, or -1 when that session is lost
 * or the call names two devices' objects. */
int ds__rpc_device_of(unsigned long proc, xdrproc_t xarg, void *arg);

/* What device dev's session gives to attach data connections (stripe.h): 1, with the
 * server's address, the tenant id, the hello's secret (DS_ATTACH_SECRET bytes) and the
 * server's name for the log (len bytes), for a cleartext TCP session; else 0. */
int ds__rpc_attach_info(int dev, struct ds_addr *a, unsigned long long *id,
                        unsigned char *secret, char *where, size_t len);
CUresult ds__rpc_post(struct ds_rpc_pending *p, unsigned long proc, xdrproc_t xarg, void *arg,
                      xdrproc_t xres, void *res);
void ds__rpc_release(void);
CUresult ds__rpc_collect(struct ds_rpc_pending *p);

/* Queue a batched call.  Returns CUDA_SUCCESS, CUDA_ERROR_DEVICE_UNAVAILABLE, or
 * CUDA_ERROR_NOT_SUPPORTED when arg names objects of two devices. */
CUresult ds__rpc_send(unsigned long proc, xdrproc_t xarg, void *arg);

/* ds__rpc_send, sent at once with the calls batched before it: a call whose data
 * follows on other connections (stripe.h), which the executor reads only once the call
 * has come. */
CUresult ds__rpc_send_now(unsigned long proc, xdrproc_t xarg, void *arg);

/* How many calls have been sent so far, synchronous and batched alike. */
uint64_t ds__rpc_calls(void);

/* What ds__rpc_calls returned right after the calling thread's last call was sent:
 * equal to ds__rpc_calls() when nothing has been sent since. */
uint64_t ds__rpc_my_last(void);

/* Free what decoding put into `res` (variable-length fields). */
void ds__rpc_free(xdrproc_t xres, void *res);

/* Typed stubs, one per procedure: ds_rpc_<name>(&args, &res) or ds_rpc_<name>(&args).
 * The result is zeroed first: TI-RPC's decoders write a variable-length field into the
 * buffer its pointer names when that is not NULL, so a caller's uninitialised result
 * would have the reply written through a stray pointer. */
#define DS_RPC_STUB_S(n, P, A, R)                                             \
    static inline CUresult ds_rpc_##n(A *a, R *r)                             \
    {                                                                         \
        memset(r, 0, sizeof(*r));                                             \
        return ds__rpc_call(P, (xdrproc_t)xdr_##A, a, (xdrproc_t)xdr_##R, r); \
    }
#define DS_RPC_STUB_B(n, P, A)                        \
    static inline CUresult ds_rpc_##n(A *a)           \
    {                                                 \
        return ds__rpc_send(P, (xdrproc_t)xdr_##A, a); \
    }
DS_PROCS(DS_RPC_STUB_S, DS_RPC_STUB_B)
#undef DS_RPC_STUB_S
#undef DS_RPC_STUB_B

/* For the API functions: return CUDA_ERROR_NOT_INITIALIZED before cuInit. */
#define DS_NEED_INIT()                       \
    do {                                     \
        if (!ds__rpc_ready())                \
            return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)

#endif
