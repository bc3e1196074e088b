/*
 * Memory pools and the stream-ordered allocator (cudaMallocAsync and its users).  The
 * executor owns the pools and checks every call (server/exec/ops_pool.c); the client
 * marshals, and notes allocations as device memory for cuMemcpy and pointer attributes.
 * An allocation waits for its reply, which carries the pointer: one round trip.  A free
 * is batched like other stream work; a bad pointer is reported by the next synchronous
 * call, as CUDA reports asynchronous errors.
 *
 * Export and import of pools between processes are not served (their stubs refuse
 * them): docs/api-coverage.md says why.
 */
#include "cuda_api.h"

#include "ctx.h"
#include "mem.h"
#include "rpc.h"
#include "stream.h"

#include <string.h>

/* The calling thread's context must exist for work on a default stream. */
static CUresult stream_ready(CUstream s)
{
    uint64_t ctx;

    if (s != NULL && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD)
        return CUDA_SUCCESS;
    return ds__ctx_current(&ctx);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s)
{
    ds_alloc_async_args a = { .pool = (ds_handle)(uintptr_t)pool, .size = size };
    ds_pool_alloc_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (dptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_ready(s)) != CUDA_SUCCESS)
        return rc;
    a.stream = ds__stream_of(s);
    rc = ds_rpc_mem_alloc_async(&a, &r);
    if (rc == CUDA_SUCCESS) {
        *dptr = r.ds_pool_alloc_res_u.alloc.ptr;
        ds__mem_remember_pool(*dptr, size, r.ds_pool_alloc_res_u.alloc.pool);
    }
    return rc;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
    return alloc_async(dptr, size, NULL, s);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s)
{
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, size, pool, s);
}

CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    ds_free_async_args a = { .ptr = p };
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = stream_ready(s)) != CUDA_SUCCESS)
        return rc;
    a.stream = ds__stream_of(s);
    rc = ds_rpc_mem_free_async(&a);
    if (rc == CUDA_SUCCESS)
        ds__mem_drop(p);
    return rc;
}

static CUresult device_pool(CUmemoryPool *pool, CUdevice dev, int current)
{
    int d = 0; /* the device as its server numbers it */
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = current ? ds_rpc_pool_current(&d, &r) : ds_rpc_pool_default(&d, &r);
    ds__route_unpin();
    if (rc == CUDA_SUCCESS)
        *pool = (CUmemoryPool)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return device_pool(pool, dev, 0);
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return device_pool(pool, dev, 1);
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    ds_pool_set_args a = { .dev = 0, .pool = (ds_handle)(uintptr_t)pool };
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_pool_set_current(&a, &r);
    ds__route_unpin();
    return rc;
}

/* CUDA 13's forms by location: device memory of a device is what cuDevice*MemPool
 * serve; host and managed pools are not served. */
static CUresult as_device(const CUmemLocation *loc, CUmemAllocationType type, CUdevice *dev)
{
    if (loc == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_MEM_ALLOCATION_TYPE_MANAGED || loc->type == CU_MEM_LOCATION_TYPE_HOST ||
        loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (type != CU_MEM_ALLOCATION_TYPE_PINNED || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    *dev = loc->id;
    return CUDA_SUCCESS;
}

CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    CUdevice dev;
    CUresult rc = as_device(loc, type, &dev);

    return rc != CUDA_SUCCESS ? rc : device_pool(pool, dev, 0);
}

CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    CUdevice dev;
    CUresult rc = as_device(loc, type, &dev);

    return rc != CUDA_SUCCESS ? rc : device_pool(pool, dev, 1);
}

CUresult cuMemSetMemPool(CUmemLocation *loc, CUmemAllocationType type, CUmemoryPool pool)
{
    CUdevice dev;
    CUresult rc = as_device(loc, type, &dev);

    return rc != CUDA_SUCCESS ? rc : cuDeviceSetMemPool(dev, pool);
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    ds_pool_props a;
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (pool == NULL || props == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    a.alloc_type = props->allocType;
    a.handle_types = props->handleTypes;
    a.loc_type = props->location.type;
    a.max_size = props->maxSize;
    a.usage = props->usage;
    rc = ds__ctx_pin_location(a.loc_type, props->location.id, &a.loc_id);
    if (rc == CUDA_SUCCESS)
        rc = ds_rpc_pool_create(&a, &r);
    ds__route_unpin();
    if (rc == CUDA_SUCCESS)
        *pool = (CUmemoryPool)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    ds_handle h = (ds_handle)(uintptr_t)pool;
    ds_void_res r;

    DS_NEED_INIT();
    return ds_rpc_pool_destroy(&h, &r);
}

/* Bytes of attribute attr's value in cuda.h: 4 for the reuse flags, 8 for the amounts;
 * 0 for one that cuda.h does not have. */
static size_t attr_width(CUmemPool_attribute attr)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        return sizeof(int);
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        return sizeof(cuuint64_t);
    default:
        return 0;
    }
}

static CUresult pool_attr(CUmemoryPool pool, CUmemPool_attribute attr, void *value, int set)
{
    ds_pool_attr_args a = { .pool = (ds_handle)(uintptr_t)pool, .attr = attr, .set = set };
    size_t width = attr_width(attr);
    ds_hyper_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (value == NULL || width == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (set && width == sizeof(int)) {
        int v;

        memcpy(&v, value, sizeof(v));
        if (v < 0)
            return CUDA_ERROR_INVALID_VALUE;
        a.value = (unsigned)v;
    } else if (set) {
        memcpy(&a.value, value, sizeof(a.value));
    }
    rc = ds_rpc_pool_attr(&a, &r);
    if (rc == CUDA_SUCCESS && !set) {
        int v = (int)r.ds_hyper_res_u.value;

        if (width == sizeof(int))
            memcpy(value, &v, sizeof(v));
        else
            memcpy(value, &r.ds_hyper_res_u.value, sizeof(r.ds_hyper_res_u.value));
    }
    return rc;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    return pool_attr(pool, attr, value, 1);
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    return pool_attr(pool, attr, value, 0);
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    ds_pool_trim_args a = { .pool = (ds_handle)(uintptr_t)pool, .keep = keep };
    ds_void_res r;

    DS_NEED_INIT();
    return ds_rpc_pool_trim(&a, &r);
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    ds_vmm_access wire[DS_VMM_ACCESS_MAX];
    ds_pool_set_access_args a = { .pool = (ds_handle)(uintptr_t)pool };
    ds_void_res r;

    DS_NEED_INIT();
    /* A tenant sees one device, so more descriptors than the wire holds cannot all be
     * valid. */
    if (map == NULL || count == 0 || count > DS_VMM_ACCESS_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        wire[i].loc_type = map[i].location.type;
        wire[i].loc_id = ds__ctx_loc_id(map[i].location.type, map[i].location.id,
                                        ds__route_dev_of(a.pool));
        wire[i].flags = map[i].flags;
    }
    a.desc.desc_len = (u_int)count;
    a.desc.desc_val = wire;
    return ds_rpc_pool_set_access(&a, &r);
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool pool, CUmemLocation *loc)
{
    ds_pool_get_access_args a = { .pool = (ds_handle)(uintptr_t)pool };
    ds_hyper_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (flags == NULL || loc == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    a.loc_type = loc->type;
    a.loc_id = ds__ctx_loc_id(loc->type, loc->id, ds__route_dev_of(a.pool));
    rc = ds_rpc_pool_get_access(&a, &r);
    if (rc == CUDA_SUCCESS)
        *flags = (CUmemAccess_flags)r.ds_hyper_res_u.value;
    return rc;
}
