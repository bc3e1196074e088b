/*
 * The client's one connection to its executor.  Every call is serialised under one
 * lock, so the library is safe to use from any number of application threads.
 * Synchronous calls wait for the reply; batched calls get none and are buffered, which
 * is what lets a tenant issue asynchronous work at memory speed.  A buffer leaves with
 * the next synchronous call, once it is 20 us old when more calls come, or after 200 us
 * when the tenant stops calling (a flusher thread sends it), so the GPU does not wait
 * for the tenant's next synchronisation to start on work already issued.
 *
 * A transport failure, whenever it happens, is reported to the application as
 * CUDA_ERROR_DEVICE_UNAVAILABLE and logged once; the session does not come back.
 */
#ifndef DS_RPC_H
#define DS_RPC_H

#include "ds_procs.h"

#include <cuda.h>

/* Connect to the server (DETSHARE_SERVER or the default socket) and shake hands, once.
 * Returns CUDA_SUCCESS, or CUDA_ERROR_NO_DEVICE after one line on stderr saying why. */
CUresult ds__rpc_init(void);

/* 1 once ds__rpc_init has succeeded. */
int ds__rpc_ready(void);

/* The device as the server described it at the handshake; valid once ready. */
const ds_device_desc *ds__rpc_device(void);

/* The primary context's handle, known from the handshake on; 0 before. */
uint64_t ds__rpc_primary(void);

/* The scheduling flags (CU_CTX_SCHED_*) of the context the tenant made current or
 * created: how a synchronous call awaits its reply.  SPIN and YIELD never sleep,
 * BLOCKING_SYNC sleeps at once, AUTO polls for DETSHARE_SPIN_US (default 200) first. */
void ds__rpc_sched_flags(unsigned flags);

/* Send `arg` to procedure `proc` and decode the reply into `res`, whose first member is
 * the CUresult; returns that CUresult, or CUDA_ERROR_DEVICE_UNAVAILABLE when the
 * transport failed (res then holds nothing to free). */
CUresult ds__rpc_call(unsigned long proc, xdrproc_t xarg, void *arg, xdrproc_t xres, void *res);

/* Several synchronous calls in flight, for copies over TCP, whose round trips would
 * otherwise leave each side idle in turn: ds__rpc_hold takes the connection (returns
 * CUDA_SUCCESS, or CUDA_ERROR_DEVICE_UNAVAILABLE without holding it), ds__rpc_post sends
 * calls, ds__rpc_collect reads their replies oldest first (each must be collected,
 * whatever it returns), ds__rpc_release lets other threads call again. */
CUresult ds__rpc_hold(void);
CUresult ds__rpc_post(unsigned long proc, xdrproc_t xarg, void *arg, uint32_t *xid);
CUresult ds__rpc_collect(unsigned long proc, uint32_t xid, xdrproc_t xres, void *res);
void ds__rpc_release(void);

/* Queue a batched call.  Returns CUDA_SUCCESS or CUDA_ERROR_DEVICE_UNAVAILABLE. */
CUresult ds__rpc_send(unsigned long proc, xdrproc_t xarg, void *arg);

/* How many calls have been sent so far, synchronous and batched alike. */
uint64_t ds__rpc_calls(void);

/* What ds__rpc_calls returned right after the calling thread's last call was sent:
 * equal to ds__rpc_calls() when nothing has been sent since. */
uint64_t ds__rpc_my_last(void);

/* Free what decoding put into `res` (variable-length fields). */
void ds__rpc_free(xdrproc_t xres, void *res);

/* Typed stubs, one per procedure: ds_rpc_<name>(&args, &res) or ds_rpc_<name>(&args). */
#define DS_RPC_STUB_S(n, P, A, R)                                             \
    static inline CUresult ds_rpc_##n(A *a, R *r)                             \
    {                                                                         \
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
