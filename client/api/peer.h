/*
 * Between the devices of a tenant with several servers on one host (route.h): peer
 * access as the tenant enabled it, and copies from one device's memory to another's,
 * which run on the device of the stream they are ordered on, reaching the other
 * device's side through a mapping of its allocation there (the executors' CUDA IPC
 * exports, server/exec/ops/ops_ipc.c), never through the tenant.
 */
#ifndef DS_PEER_H
#define DS_PEER_H

#include "cuda_api.h"

#include <stdint.h>

/* Note that context ctx has (on != 0) or has not peer access to context peer's memory.
 * Returns whether it had before. */
int ds__peer_access_set(uint64_t ctx, uint64_t peer, int on);

/* 1 with *sdev and *ddev when src and dst are device memory of two devices of the
 * tenant; 0 otherwise, at the cost of one comparison with one server. */
int ds__peer_across(CUdeviceptr dst, CUdeviceptr src, int *ddev, int *sdev);

/* Where a copy between devices runs: on stream `stream`, of context ctx, of device dev. */
struct ds_peer_run {
    CUstream stream;
    CUcontext ctx;
    int dev;
};

/* The run of a copy ordered on stream s: s's context and device; for the NULL and
 * legacy streams, those of ctx, or with ctx NULL of the calling thread's current
 * context (CUDA_ERROR_INVALID_CONTEXT without one). */
CUresult ds__peer_run_on(CUstream s, CUcontext ctx, struct ds_peer_run *r);

/* In *out, where r's device reaches [p, p+n) of device dev's memory: p itself on dev,
 * else in a mapping of p's allocation there, made the first time and kept until the
 * allocation is freed or the context it was made in ends.  CUDA_ERROR_INVALID_VALUE when
 * [p, p+n) is not inside one allocation of dev's. */
CUresult ds__peer_reach(const struct ds_peer_run *r, uint64_t p, int dev, uint64_t n,
                        uint64_t *out);

/* Before a synchronous copy between devices ddev and sdev: the work given so far to the
 * legacy stream (and so, as in CUDA, to the blocking streams) of each of them that is
 * not r's device, done. */
CUresult ds__peer_settle(const struct ds_peer_run *r, int ddev, int sdev);

/* The calling thread's calls go to r's device, with r's context current, until
 * ds__peer_leave: for a copy naming a mapping, which only that device knows. */
CUresult ds__peer_enter(const struct ds_peer_run *r);
void ds__peer_leave(void);

/* Copy n bytes from src (device sdev's memory) to dst (device ddev's) on r's stream.
 * wait: first once the work given so far to context settle is done (NULL: to the
 * legacy streams of the copy's devices other than r's, ds__peer_settle), and return once
 * the copy is done; else in the stream's order only. */
CUresult ds__peer_copy(const struct ds_peer_run *r, CUdeviceptr dst, int ddev, CUdeviceptr src,
                       int sdev, size_t n, CUcontext settle, int wait);

/* Allocation base of device dev is freed: close its mappings on other devices. */
void ds__peer_forget(uint64_t base, int dev);

#endif
