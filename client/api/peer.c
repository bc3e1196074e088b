/*
 * Peer access and copies between two servers' devices of one tenant (peer.h).
 *
 * A copy runs on the device of the stream it is ordered on, as in CUDA, where a copy
 * between two devices' memory goes in its stream's order on its stream's device.  The
 * side of another device is reached through a mapping of its whole allocation there:
 * that device's executor exports it (DS_PEER_EXPORT), the running device's maps it
 * (DS_PEER_OPEN), and the mapping is kept, one per allocation and device it is mapped
 * on, until the allocation is freed or the context it was mapped in ends (the executor
 * closes it then).  The copy is then a device-to-device copy pinned to the running
 * device's server (the mapping's address means nothing to the client's record of
 * addresses, and may coincide with memory of another device).  So PyTorch's copy from
 * cuda:0 to cuda:1, on cuda:0's stream, maps the destination on device 0; a copy on the
 * destination's stream maps the source there.
 *
 * Ordering, as in CUDA: an asynchronous copy runs after the work of its stream only (a
 * tenant orders it after the other device's work as natively, by making the stream wait
 * for an event of that device: xwait.h).  A synchronous one waits first for what the
 * other device's legacy stream was given (cuMemcpyPeer: for all the work of the source's
 * context), and returns once it is done.
 *
 * Peer access granted to or by a context goes when the context ends, as natively: a
 * later context with the same handle (a primary context retained again) starts with
 * none.
 */
#include "peer.h"

#include "ctx.h"
#include "dtod.h"
#include "mem.h"
#include "rpc.h"

#include <pthread.h>
#include <stdlib.h>

/* A mapping of allocation base (of device owner) on device on, at mapped, made in
 * context ctx (of device on). */
struct mapping {
    uint64_t base, mapped, ctx;
    int owner, on;
};

/* A context that enabled peer access to another's memory. */
struct access {
    uint64_t ctx, peer;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapping *maps;
static size_t nmaps, cap_maps;
static struct access *grants;
static size_t ngrants, cap_grants;

/* Room for one more element in *v (holding n of *cap). */
static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
    size_t want = *cap == 0 ? 8 : *cap * 2;
    void *p;

    if (n < *cap)
        return 0;
    if ((p = realloc(*v, want * elem)) == NULL)
        return -1;
    *v = p;
    *cap = want;
    return 0;
}

/* Context h has ended: the access it had, or gave, goes with it, and so do the
 * mappings made in it, which its executor closed. */
static void ctx_ended(uint64_t h)
{
    pthread_mutex_lock(&lock);
    for (size_t i = ngrants; i-- > 0;)
        if (grants[i].ctx == h || grants[i].peer == h)
            grants[i] = grants[--ngrants];
    for (size_t i = nmaps; i-- > 0;)
        if (maps[i].ctx == h)
            maps[i] = maps[--nmaps];
    pthread_mutex_unlock(&lock);
}

int ds__peer_access_set(uint64_t ctx, uint64_t peer, int on)
{
    int had = 0;

    ds__ctx_on_end(ctx_ended);
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < ngrants && !had; i++)
        if (grants[i].ctx == ctx && grants[i].peer == peer) {
            had = 1;
            if (!on)
                grants[i] = grants[--ngrants];
        }
    if (on && !had && grow((void **)&grants, &cap_grants, ngrants, sizeof(*grants)) == 0)
        grants[ngrants++] = (struct access){ ctx, peer };
    pthread_mutex_unlock(&lock);
    return had;
}

int ds__peer_across(CUdeviceptr dst, CUdeviceptr src, int *ddev, int *sdev)
{
    if (ds__rpc_device(1) == NULL)
        return 0;
    *ddev = ds__mem_device_of(dst);
    *sdev = ds__mem_device_of(src);
    return *ddev >= 0 && *sdev >= 0 && *ddev != *sdev;
}

/* Map allocation base of device owner on r's device into *mapped. */
static CUresult map_on(uint64_t base, int owner, const struct ds_peer_run *r, uint64_t *mapped)
{
    ds_dptr p = base;
    ds_peer_token_res t;
    ds_peer_open_args a = { .ctx = (ds_handle)(uintptr_t)r->ctx };
    ds_range_res res;
    CUresult rc;

    ds__route_pin(owner);
    rc = ds_rpc_peer_export(&p, &t);
    ds__route_unpin();
    if (rc != CUDA_SUCCESS)
        return rc;
    a.token = t.ds_peer_token_res_u.token;
    ds__route_pin(r->dev);
    rc = ds_rpc_peer_open(&a, &res);
    ds__route_unpin();
    if (rc == CUDA_SUCCESS)
        *mapped = res.ds_range_res_u.range.base;
    return rc;
}

/* The mapping of allocation base of device owner on r's device, made if need be. */
static CUresult mapping(uint64_t base, int owner, const struct ds_peer_run *r,
                        uint64_t *mapped)
{
    CUresult rc;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps; i++)
        if (maps[i].base == base && maps[i].owner == owner && maps[i].on == r->dev) {
            *mapped = maps[i].mapped;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    /* Only a tenant of several servers maps its memory on another device: it alone has
     * mappings to close when an allocation or a context goes. */
    ds__mem_set_drop_hook(ds__peer_forget);
    ds__ctx_on_end(ctx_ended);
    rc = map_on(base, owner, r, mapped);
    if (rc == CUDA_SUCCESS && grow((void **)&maps, &cap_maps, nmaps, sizeof(*maps)) != 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS)
        maps[nmaps++] = (struct mapping){ base, *mapped, (uint64_t)(uintptr_t)r->ctx, owner,
                                          r->dev };
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult ds__peer_run_on(CUstream s, CUcontext ctx, struct ds_peer_run *r)
{
    uint64_t cur = (uint64_t)(uintptr_t)ctx;
    CUresult rc = CUDA_SUCCESS;

    r->stream = s;
    if (s != NULL && s != CU_STREAM_LEGACY)
        rc = cuStreamGetCtx(s, &ctx);
    else if (ctx == NULL && (rc = ds__ctx_current(&cur)) == CUDA_SUCCESS)
        ctx = (CUcontext)(uintptr_t)cur;
    if (rc != CUDA_SUCCESS)
        return rc;
    r->ctx = ctx;
    r->dev = ds__route_dev_of((uint64_t)(uintptr_t)ctx);
    return ctx != NULL && ds__rpc_device(r->dev) != NULL ? CUDA_SUCCESS
                                                         : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult ds__peer_reach(const struct ds_peer_run *r, uint64_t p, int dev, uint64_t n,
                        uint64_t *out)
{
    uint64_t base, size, pool, mapped;
    unsigned sync;
    CUresult rc;

    if (!ds__mem_range(p, &base, &size, &pool, &sync) || n > base + size - p)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev == r->dev) {
        *out = p;
        return CUDA_SUCCESS;
    }
    if ((rc = mapping(base, dev, r, &mapped)) == CUDA_SUCCESS)
        *out = mapped + (p - base);
    return rc;
}

/* Device dev's legacy stream's work done, unless dev is r's device. */
static CUresult legacy_done(const struct ds_peer_run *r, int dev)
{
    ds_handle legacy = (ds_handle)(uintptr_t)CU_STREAM_LEGACY;
    ds_void_res res;
    CUresult rc;

    if (dev == r->dev)
        return CUDA_SUCCESS;
    ds__route_pin(dev);
    rc = ds_rpc_stream_synchronize(&legacy, &res);
    ds__route_unpin();
    return rc;
}

CUresult ds__peer_settle(const struct ds_peer_run *r, int ddev, int sdev)
{
    CUresult rc = legacy_done(r, sdev);

    return rc != CUDA_SUCCESS ? rc : legacy_done(r, ddev);
}

CUresult ds__peer_enter(const struct ds_peer_run *r)
{
    CUresult rc = cuCtxPushCurrent_v2(r->ctx);

    if (rc == CUDA_SUCCESS)
        ds__route_pin(r->dev);
    return rc;
}

void ds__peer_leave(void)
{
    ds__route_unpin();
    cuCtxPopCurrent_v2(NULL);
}

/* All the work ctx was given so far, done. */
static CUresult ctx_done(CUcontext ctx)
{
    CUresult rc = cuCtxPushCurrent_v2(ctx);

    if (rc != CUDA_SUCCESS)
        return rc;
    rc = cuCtxSynchronize();
    cuCtxPopCurrent_v2(NULL);
    return rc;
}

/* Before a synchronous copy: all of settle's work done, or without it the other
 * devices' legacy streams'. */
static CUresult settled(const struct ds_peer_run *r, int ddev, int sdev, CUcontext settle)
{
    return settle != NULL ? ctx_done(settle) : ds__peer_settle(r, ddev, sdev);
}

CUresult ds__peer_copy(const struct ds_peer_run *r, CUdeviceptr dst, int ddev, CUdeviceptr src,
                       int sdev, size_t n, CUcontext settle, int wait)
{
    uint64_t to, from;
    CUresult rc;

    if ((rc = ds__peer_reach(r, src, sdev, n, &from)) != CUDA_SUCCESS ||
        (rc = ds__peer_reach(r, dst, ddev, n, &to)) != CUDA_SUCCESS ||
        (wait && (rc = settled(r, ddev, sdev, settle)) != CUDA_SUCCESS) || n == 0)
        return rc;
    if ((rc = ds__peer_enter(r)) != CUDA_SUCCESS)
        return rc;
    rc = ds__dtod_copy(to, from, n, r->stream, wait);
    ds__peer_leave();
    return rc;
}

/* Close mapping i on its device and forget it (lock held). */
static void unmap(size_t i)
{
    ds_dptr p = maps[i].mapped;
    ds_hyper_res r;

    ds__route_pin(maps[i].on);
    ds_rpc_ipc_mem_close(&p, &r);
    ds__route_unpin();
    maps[i] = maps[--nmaps];
}

void ds__peer_forget(uint64_t base, int dev)
{
    pthread_mutex_lock(&lock);
    for (size_t i = nmaps; i-- > 0;)
        if (maps[i].base == base && maps[i].owner == dev)
            unmap(i);
    pthread_mutex_unlock(&lock);
}
