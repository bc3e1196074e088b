/*
 * Virtual memory management: address reservations, physical allocations and mappings
 * (what JAX/XLA's allocator and PyTorch's expandable segments are built on).  The
 * executor owns all of it and checks every call (server/exec/ops_vmm.c); the client only
 * marshals, and notes mapped ranges as device memory so that cuMemcpy and pointer
 * attributes know them.  Every call is synchronous, as in CUDA.
 */
#include "cuda_api.h"

#include "ctx.h"
#include "mem.h"
#include "rpc.h"

#include <string.h>

/* The device of a mapped address: the server that mapped it, else the current context's
 * (an address mapped nowhere yet). */
static int device_of(CUdeviceptr p)
{
    int dev = ds__mem_device_of(p);

    return dev >= 0 ? dev : ds__route_current();
}

static ds_vmm_prop to_wire(const CUmemAllocationProp *p)
{
    ds_vmm_prop w = {
        .type = p->type,
        .handle_types = p->requestedHandleTypes,
        .loc_type = p->location.type,
        .loc_id = p->location.id,
        .compression = p->allocFlags.compressionType,
        .rdma = p->allocFlags.gpuDirectRDMACapable,
        .usage = p->allocFlags.usage,
    };

    return w;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    ds_vmm_granularity_args a;
    ds_hyper_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (granularity == NULL || prop == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    a.prop = to_wire(prop);
    a.option = option;
    rc = ds__ctx_pin_location(a.prop.loc_type, prop->location.id, &a.prop.loc_id);
    if (rc == CUDA_SUCCESS)
        rc = ds_rpc_vmm_granularity(&a, &r);
    ds__route_unpin();
    if (rc == CUDA_SUCCESS)
        *granularity = r.ds_hyper_res_u.value;
    return rc;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    ds_vmm_reserve_args a = { .size = size, .alignment = alignment, .hint = addr,
                              .flags = flags };
    ds_alloc_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (ptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_vmm_reserve(&a, &r);
    if (rc == CUDA_SUCCESS)
        *ptr = r.ds_alloc_res_u.ptr;
    return rc;
}

/* Mappings left in the range go with it (the executor's choice). */
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    ds_range a = { .base = ptr, .size = size };
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    rc = ds_rpc_vmm_address_free(&a, &r);
    if (rc == CUDA_SUCCESS)
        ds__mem_forget(ptr, size);
    return rc;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    ds_vmm_create_args a = { .size = size, .flags = flags };
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (handle == NULL || prop == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    a.prop = to_wire(prop);
    rc = ds__ctx_pin_location(a.prop.loc_type, prop->location.id, &a.prop.loc_id);
    if (rc == CUDA_SUCCESS)
        rc = ds_rpc_vmm_create(&a, &r);
    ds__route_unpin();
    if (rc == CUDA_SUCCESS)
        *handle = r.ds_handle_res_u.handle;
    return rc;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    ds_handle h = handle;
    ds_void_res r;

    DS_NEED_INIT();
    return ds_rpc_vmm_release(&h, &r);
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    ds_vmm_map_args a = { .ptr = ptr, .size = size, .offset = offset, .handle = handle,
                          .flags = flags };
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    rc = ds_rpc_vmm_map(&a, &r);
    if (rc == CUDA_SUCCESS)
        ds__mem_remember(ptr, size);
    return rc;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    ds_range a = { .base = ptr, .size = size };
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    rc = ds_rpc_vmm_unmap(&a, &r);
    if (rc == CUDA_SUCCESS)
        ds__mem_forget(ptr, size);
    return rc;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    ds_vmm_access wire[DS_VMM_ACCESS_MAX];
    ds_vmm_set_access_args a = { .ptr = ptr, .size = size };
    ds_void_res r;
    int dev;

    DS_NEED_INIT();
    dev = device_of(ptr);
    /* A tenant sees one device, so more descriptors than the wire holds cannot all be
     * valid. */
    if (desc == NULL || count == 0 || count > DS_VMM_ACCESS_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        wire[i].loc_type = desc[i].location.type;
        wire[i].loc_id = ds__ctx_loc_id(desc[i].location.type, desc[i].location.id, dev);
        wire[i].flags = desc[i].flags;
    }
    a.desc.desc_len = (u_int)count;
    a.desc.desc_val = wire;
    return ds_rpc_vmm_set_access(&a, &r);
}

CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                        CUdeviceptr ptr)
{
    ds_vmm_get_access_args a = { .ptr = ptr };
    ds_hyper_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (flags == NULL || location == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    a.loc_type = location->type;
    a.loc_id = ds__ctx_loc_id(location->type, location->id, device_of(ptr));
    rc = ds_rpc_vmm_get_access(&a, &r);
    if (rc == CUDA_SUCCESS)
        *flags = r.ds_hyper_res_u.value;
    return rc;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                CUmemGenericAllocationHandle handle)
{
    ds_handle h = handle;
    ds_vmm_prop_res r;
    const ds_vmm_prop *w = &r.ds_vmm_prop_res_u.prop;
    CUresult rc;

    DS_NEED_INIT();
    if (prop == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_vmm_get_prop(&h, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    memset(prop, 0, sizeof(*prop));
    prop->type = (CUmemAllocationType)w->type;
    prop->requestedHandleTypes = (CUmemAllocationHandleType)w->handle_types;
    prop->location.type = (CUmemLocationType)w->loc_type;
    prop->location.id = w->loc_id;
    if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        prop->location.id += ds__route_dev_of(h);
    prop->allocFlags.compressionType = (unsigned char)w->compression;
    prop->allocFlags.gpuDirectRDMACapable = (unsigned char)w->rdma;
    prop->allocFlags.usage = (unsigned short)w->usage;
    return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    ds_dptr p = (ds_dptr)(uintptr_t)addr;
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (handle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_vmm_retain(&p, &r);
    if (rc == CUDA_SUCCESS)
        *handle = r.ds_handle_res_u.handle;
    return rc;
}
