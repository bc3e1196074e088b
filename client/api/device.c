/* cuInit, the driver version and device queries.  The tenant sees one device per
 * server, in the order of DETSHARE_SERVER (client/transport/route.h); a device never
 * changes, so everything here is answered from its handshake without a round trip. */
#include "cuda_api.h"
#include "mem.h"
#include "rpc.h"

#include <stdio.h>
#include <string.h>

CUresult cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return ds__rpc_init(ds__mem_device_of);
}

CUresult cuDriverGetVersion(int *version)
{
    if (version == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *version = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    DS_NEED_INIT();
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = ds__rpc_devices();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    DS_NEED_INIT();
    if (dev == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(ordinal) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    DS_NEED_INIT();
    if (name == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", ds__rpc_device(dev)->name);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
    const ds_device_desc *d;

    DS_NEED_INIT();
    d = ds__rpc_device(dev);
    if (value == NULL || attr <= 0 || (d != NULL && (unsigned)attr >= d->attrs.attrs_len))
        return CUDA_ERROR_INVALID_VALUE;
    if (d == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    *value = d->attrs.attrs_val[attr];
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    DS_NEED_INIT();
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = ds__rpc_device(dev)->total_mem;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    DS_NEED_INIT();
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    memcpy(uuid->bytes, ds__rpc_device(dev)->uuid, sizeof(uuid->bytes));
    return CUDA_SUCCESS;
}

/* The pre-11.4 entry point has the same contract for a device without MIG. */
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid_v2(uuid, dev);
}

CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    CUresult rc = cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);

    if (rc == CUDA_SUCCESS)
        rc = cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    return rc;
}

/* "DDDD:BB:DD.0" from the device's PCI attributes, upper-case hex as the driver writes
 * it: the GPU the server serves, so a program matching it against NVML or sysfs finds
 * the real device. */
CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
    const ds_device_desc *d;

    DS_NEED_INIT();
    if (id == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    d = ds__rpc_device(dev);
    if (d == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(id, (size_t)len, "%04X:%02X:%02X.0",
             (unsigned)d->attrs.attrs_val[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
             (unsigned)d->attrs.attrs_val[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID],
             (unsigned)d->attrs.attrs_val[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
    return CUDA_SUCCESS;
}

static int at_pci(const ds_device_desc *d, unsigned domain, unsigned bus, unsigned slot)
{
    return domain == (unsigned)d->attrs.attrs_val[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID] &&
           bus == (unsigned)d->attrs.attrs_val[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] &&
           slot == (unsigned)d->attrs.attrs_val[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID];
}

/* The first device that `id` names (either case; the domain may be left out). */
CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
    unsigned domain = 0, bus, slot, fn = 0;

    DS_NEED_INIT();
    if (dev == NULL || id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (sscanf(id, "%x:%x:%x.%x", &domain, &bus, &slot, &fn) < 3 &&
        (domain = 0, sscanf(id, "%x:%x.%x", &bus, &slot, &fn) < 2))
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < ds__rpc_devices() && fn == 0; i++) {
        if (at_pci(ds__rpc_device(i), domain, bus, slot)) {
            *dev = i;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}
