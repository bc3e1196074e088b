/* Device queries beyond the attribute table (device.c).  One device per server; two
 * servers' devices reach each other's memory through the executors' IPC exports (peer.h),
 * which is what peer access means here.  What the tenant's view of a device cannot tell
 * is asked of that device's executor. */
#include "cuda_api.h"

#include "ctx.h"
#include "peer.h"
#include "rpc.h"

#include <string.h>

/* Of a device the caller has checked. */
static int attr(CUdevice dev, CUdevice_attribute a)
{
    return ds__rpc_device(dev)->attrs.attrs_val[a];
}

/* A device has no peer access to itself; two servers' devices reach each other. */
CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    DS_NEED_INIT();
    if (can == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(dev) == NULL || ds__rpc_device(peer) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    *can = dev != peer;
    return CUDA_SUCCESS;
}

/* Peer attributes need two distinct devices: with one, every pair is refused. */
CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute a, CUdevice src, CUdevice dst)
{
    (void)a;
    (void)src;
    (void)dst;
    DS_NEED_INIT();
    return value == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGetP2PAtomicCapabilities(unsigned *caps, const CUatomicOperation *ops,
                                          unsigned count, CUdevice src, CUdevice dst)
{
    (void)count;
    (void)src;
    (void)dst;
    DS_NEED_INIT();
    return caps == NULL || ops == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_DEVICE;
}

/* The peer must be a context of ours on another device than the current one's (a device
 * cannot access itself as a peer): CUDA_SUCCESS with both contexts. */
static CUresult peer_check(CUcontext peer, uint64_t *cur)
{
    CUdevice d;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds__ctx_current(cur)) != CUDA_SUCCESS)
        return rc;
    if (peer == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((rc = cuCtxGetDevice_v2(&d, peer)) != CUDA_SUCCESS)
        return rc;
    return d == ds__route_dev_of(*cur) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
    uint64_t cur;
    CUresult rc;

    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = peer_check(peer, &cur)) != CUDA_SUCCESS)
        return rc;
    return ds__peer_access_set(cur, (uint64_t)(uintptr_t)peer, 1)
               ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
               : CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    uint64_t cur;
    CUresult rc = peer_check(peer, &cur);

    /* A context of the same device never had peer access to enable. */
    if (rc == CUDA_ERROR_INVALID_DEVICE)
        return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    if (rc != CUDA_SUCCESS)
        return rc;
    return ds__peer_access_set(cur, (uint64_t)(uintptr_t)peer, 0)
               ? CUDA_SUCCESS
               : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

/* The deprecated property block, from the attributes it summarises. */
CUresult cuDeviceGetProperties(CUdevprop *p, CUdevice dev)
{
    DS_NEED_INIT();
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    p->maxThreadsPerBlock = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p->maxThreadsDim[0] = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    p->maxThreadsDim[1] = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
    p->maxThreadsDim[2] = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    p->maxGridSize[0] = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    p->maxGridSize[1] = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    p->maxGridSize[2] = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    p->sharedMemPerBlock = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    p->totalConstantMemory = attr(dev, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
    p->SIMDWidth = attr(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    p->memPitch = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_PITCH);
    p->regsPerBlock = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    p->clockRate = attr(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    p->textureAlign = attr(dev, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
    return CUDA_SUCCESS;
}

/* Asks device dev's executor; on success r holds n answers the caller frees. */
static CUresult ask(CUdevice dev, ds_devq_args *a, ds_devq_res *r, unsigned n)
{
    CUresult rc = ds__ctx_pin(dev);

    if (rc != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_dev_query(a, r);
    ds__route_unpin();

    if (rc == CUDA_SUCCESS && r->ds_devq_res_u.values.values_len != n) {
        ds__rpc_free((xdrproc_t)xdr_ds_devq_res, r);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return rc;
}

CUresult cuDeviceGetLuid(char *luid, unsigned *mask, CUdevice dev)
{
    ds_devq_args a = { .kind = DS_DEVQ_LUID };
    ds_devq_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (luid == NULL || mask == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    if ((rc = ask(dev, &a, &r, 2)) != CUDA_SUCCESS)
        return rc;
    memcpy(luid, &r.ds_devq_res_u.values.values_val[0], 8);
    *mask = (unsigned)r.ds_devq_res_u.values.values_val[1];
    ds__rpc_free((xdrproc_t)xdr_ds_devq_res, &r);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t *width, CUarray_format fmt, unsigned channels,
                                            CUdevice dev)
{
    ds_devq_args a = { .kind = DS_DEVQ_TEX1D_LINEAR_WIDTH, .a = (int)fmt, .b = channels };
    ds_devq_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (width == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    if ((rc = ask(dev, &a, &r, 1)) != CUDA_SUCCESS)
        return rc;
    *width = (size_t)r.ds_devq_res_u.values.values_val[0];
    ds__rpc_free((xdrproc_t)xdr_ds_devq_res, &r);
    return CUDA_SUCCESS;
}

/* In pieces of at most DS_DEVQ_OPS_MAX operations. */
CUresult cuDeviceGetHostAtomicCapabilities(unsigned *caps, const CUatomicOperation *ops,
                                           unsigned count, CUdevice dev)
{
    DS_NEED_INIT();
    if (caps == NULL || ops == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    for (unsigned done = 0; done < count;) {
        unsigned n = count - done < DS_DEVQ_OPS_MAX ? count - done : DS_DEVQ_OPS_MAX;
        int wire[DS_DEVQ_OPS_MAX];
        ds_devq_args a = { .kind = DS_DEVQ_HOST_ATOMIC_CAPS };
        ds_devq_res r;
        CUresult rc;

        for (unsigned i = 0; i < n; i++)
            wire[i] = (int)ops[done + i];
        a.ops.ops_len = n;
        a.ops.ops_val = wire;
        if ((rc = ask(dev, &a, &r, n)) != CUDA_SUCCESS)
            return rc;
        for (unsigned i = 0; i < n; i++)
            caps[done + i] = (unsigned)r.ds_devq_res_u.values.values_val[i];
        ds__rpc_free((xdrproc_t)xdr_ds_devq_res, &r);
        done += n;
    }
    return CUDA_SUCCESS;
}

/* Execution affinity would have a tenant choose its SMs, which is the scheduler's
 * (contexts asking for it are refused, ctx.c): the device offers none to a tenant. */
CUresult cuDeviceGetExecAffinitySupport(int *pi, CUexecAffinityType type, CUdevice dev)
{
    DS_NEED_INIT();
    if (pi == NULL || (unsigned)type >= CU_EXEC_AFFINITY_TYPE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    *pi = 0;
    return CUDA_SUCCESS;
}

/* A tenant's context runs on the whole device, as far as it can tell. */
CUresult cuCtxGetExecAffinity(CUexecAffinityParam *p, CUexecAffinityType type)
{
    uint64_t cur;
    CUresult rc;

    DS_NEED_INIT();
    if (p == NULL || type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&cur)) != CUDA_SUCCESS)
        return rc;
    if (ds__rpc_device(ds__route_dev_of(cur)) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    p->type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
    p->param.smCount.val =
        (unsigned)attr(ds__route_dev_of(cur), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    return CUDA_SUCCESS;
}
