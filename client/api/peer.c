/*
 * Peer access and copies between two servers' devices of one tenant (peer.h).
 *
 * A copy maps the source's whole allocation on the destination's device once: the
 * source's executor exports it (DS_PEER_EXPORT), the destination's maps it
 * (DS_PEER_OPEN), and the mapping is kept, one per allocation and destination device,
 * until the allocation is freed.  Each copy is then a device-to-device copy on the
 * destination's device, pinned to its server (the mapping's address means nothing to the
 * client's record of addresses, and may coincide with memory of another device).
 *
 * Ordering, as in CUDA: cuMemcpyPeerAsync runs after the work of its stream only (a
 * tenant orders it after the source's writer as natively, by making the stream wait for
 * an event of the source's device: xwait.h); cuMemcpyPeer is serialised with the work
 * the source's context had been given (its server is asked to synchronise it first).
 *
 * Peer access granted to or by a context goes when the context ends, as natively: a
 * later context with the same handle (a primary context retained again) starts with
 * none.
 */
#include "peer.h"

#include "copy.h"
#include "ctx.h"
#include "mem.h"
#include "rpc.h"

#include <pthread.h>
#include <stdlib.h>

/* A mapping of allocation base (of device sdev) on device ddev, at mapped. */
struct mapping {
    uint64_t base, mapped;
    int sdev, ddev;
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

/* Context h has ended: the access it had, or gave, goes with it. */
static void ctx_ended(uint64_t h)
{
    pthread_mutex_lock(&lock);
    for (size_t i = ngrants; i-- > 0;)
        if (grants[i].ctx == h || grants[i].peer == h)
            grants[i] = grants[--ngrants];
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

/* Map allocation base of sdev on ddev (in context ctx) into *mapped. */
static CUresult map_on(uint64_t base, int sdev, int ddev, CUcontext ctx, uint64_t *mapped)
{
    ds_dptr p = base;
    ds_peer_token_res t;
    ds_peer_open_args a = { .ctx = (ds_handle)(uintptr_t)ctx };
    ds_range_res r;
    CUresult rc;

    ds__route_pin(sdev);
    rc = ds_rpc_peer_export(&p, &t);
    ds__route_unpin();
    if (rc != CUDA_SUCCESS)
        return rc;
    a.token = t.ds_peer_token_res_u.token;
    ds__route_pin(ddev);
    rc = ds_rpc_peer_open(&a, &r);
    ds__route_unpin();
    if (rc == CUDA_SUCCESS)
        *mapped = r.ds_range_res_u.range.base;
    return rc;
}

/* The mapping of allocation base of sdev on ddev, made if need be. */
static CUresult mapping(uint64_t base, int sdev, int ddev, CUcontext ctx, uint64_t *mapped)
{
    CUresult rc;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps; i++)
        if (maps[i].base == base && maps[i].sdev == sdev && maps[i].ddev == ddev) {
            *mapped = maps[i].mapped;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    /* Only a tenant of several servers maps its memory on another device: it alone has
     * mappings to close when an allocation goes. */
    ds__mem_set_drop_hook(ds__peer_forget);
    rc = map_on(base, sdev, ddev, ctx, mapped);
    if (rc == CUDA_SUCCESS && grow((void **)&maps, &cap_maps, nmaps, sizeof(*maps)) != 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS)
        maps[nmaps++] = (struct mapping){ base, *mapped, sdev, ddev };
    pthread_mutex_unlock(&lock);
    return rc;
}

/* All the work src_ctx was given so far, done. */
static CUresult source_done(CUcontext src_ctx)
{
    CUresult rc = cuCtxPushCurrent_v2(src_ctx);

    if (rc != CUDA_SUCCESS)
        return rc;
    rc = cuCtxSynchronize();
    cuCtxPopCurrent_v2(NULL);
    return rc;
}

CUresult ds__peer_copy(CUdeviceptr dst, int ddev, CUcontext dst_ctx, CUdeviceptr src, int sdev,
                       CUcontext src_ctx, size_t n, CUstream s, int wait)
{
    uint64_t base, size, pool, mapped;
    unsigned sync;
    CUresult rc;

    if (!ds__mem_range(src, &base, &size, &pool, &sync) || n > base + size - src)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__route_dev_of((uint64_t)(uintptr_t)dst_ctx) != ddev ||
        ds__route_dev_of((uint64_t)(uintptr_t)src_ctx) != sdev)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((rc = mapping(base, sdev, ddev, dst_ctx, &mapped)) != CUDA_SUCCESS ||
        (wait && (rc = source_done(src_ctx)) != CUDA_SUCCESS) || n == 0)
        return rc;
    if ((rc = cuCtxPushCurrent_v2(dst_ctx)) != CUDA_SUCCESS)
        return rc;
    ds__route_pin(ddev);
    rc = ds__copy_dtod(dst, mapped + (src - base), n, s, wait);
    ds__route_unpin();
    cuCtxPopCurrent_v2(NULL);
    return rc;
}

void ds__peer_forget(uint64_t base, int dev)
{
    pthread_mutex_lock(&lock);
    for (size_t i = nmaps; i-- > 0;) {
        ds_dptr p = maps[i].mapped;
        ds_hyper_res r;

        if (maps[i].base != base || maps[i].sdev != dev)
            continue;
        ds__route_pin(maps[i].ddev);
        ds_rpc_ipc_mem_close(&p, &r);
        ds__route_unpin();
        maps[i] = maps[--nmaps];
    }
    pthread_mutex_unlock(&lock);
}
