/* What the device is, from the tenant's view of it that detshare's libcuda holds: the
 * same device whatever share of it the tenant has. */
#include "nvml_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Attribute a of the device behind handle h into *v. */
static nvmlReturn_t attr(nvmlDevice_t h, CUdevice_attribute a, int *v)
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    nvmlReturn_t rc = ds__nvml_device(h, &cu, &dev);

    if (rc != NVML_SUCCESS)
        return rc;
    return ds__nvml_from_cu(cu->attr(v, a, dev));
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    nvmlReturn_t rc = ds__nvml_device(device, &cu, &dev);

    if (rc != NVML_SUCCESS)
        return rc;
    if ((rc = ds__nvml_from_cu(cu->name(buf, sizeof(buf), dev))) != NVML_SUCCESS)
        return rc;
    return ds__nvml_string(name, length, buf);
}

/* "GPU-" and the UUID in its usual groups, as NVML spells it. */
static nvmlReturn_t uuid_text(nvmlDevice_t h, char out[NVML_DEVICE_UUID_V2_BUFFER_SIZE])
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    CUuuid u;
    const unsigned char *b = (const unsigned char *)u.bytes;
    nvmlReturn_t rc = ds__nvml_device(h, &cu, &dev);

    if (rc != NVML_SUCCESS || (rc = ds__nvml_from_cu(cu->uuid(&u, dev))) != NVML_SUCCESS)
        return rc;
    snprintf(out, NVML_DEVICE_UUID_V2_BUFFER_SIZE,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlReturn_t rc = uuid_text(device, buf);

    return rc != NVML_SUCCESS ? rc : ds__nvml_string(uuid, length, buf);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlDevice_t h;

    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (uuid == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; (h = ds__nvml_handle(i)) != NULL; i++) {
        if (uuid_text(h, buf) == NVML_SUCCESS && strcasecmp(buf, uuid) == 0) {
            *device = h;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* The device's PCI domain, bus and device numbers. */
static nvmlReturn_t pci_numbers(nvmlDevice_t h, int *domain, int *bus, int *slot)
{
    nvmlReturn_t rc;

    if ((rc = attr(h, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, domain)) != NVML_SUCCESS ||
        (rc = attr(h, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, bus)) != NVML_SUCCESS)
        return rc;
    return attr(h, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, slot);
}

/* The PCI device and subsystem ids are not in the driver API's view: the server's NVML
 * gives them (facts.c), else they read 0. */
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    struct ds_devfacts f;
    int domain, bus, slot;
    nvmlReturn_t rc = pci_numbers(device, &domain, &bus, &slot);

    if (rc != NVML_SUCCESS)
        return rc;
    if (pci == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof(*pci));
    pci->domain = (unsigned)domain;
    pci->bus = (unsigned)bus;
    pci->device = (unsigned)slot;
    if (ds__nvml_facts(device, &f) == NVML_SUCCESS) {
        pci->pciDeviceId = (unsigned)f.v[DS_FACT_PCI_DEVICE_ID];
        pci->pciSubSystemId = (unsigned)f.v[DS_FACT_PCI_SUBSYSTEM_ID];
    }
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
             NVML_DEVICE_PCI_BUS_ID_FMT_ARGS(pci));
    snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT,
             NVML_DEVICE_PCI_BUS_ID_FMT_ARGS(pci));
    return NVML_SUCCESS;
}

/* "domain:bus:device.function" or "bus:device.function", hexadecimal. */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *device)
{
    unsigned want[3], fn;
    int got[3];
    nvmlDevice_t h;

    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (id == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (sscanf(id, "%x:%x:%x.%x", &want[0], &want[1], &want[2], &fn) != 4) {
        want[0] = 0;
        if (sscanf(id, "%x:%x.%x", &want[1], &want[2], &fn) != 3)
            return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (unsigned i = 0; (h = ds__nvml_handle(i)) != NULL; i++) {
        if (pci_numbers(h, &got[0], &got[1], &got[2]) == NVML_SUCCESS &&
            (unsigned)got[0] == want[0] && (unsigned)got[1] == want[1] &&
            (unsigned)got[2] == want[2] && fn == 0) {
            *device = h;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *id, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(id, device);
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    nvmlReturn_t rc;

    if (major == NULL || minor == NULL)
        return ds__nvml_cuda() == NULL ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major)) != NVML_SUCCESS)
        return rc;
    return attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor);
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
    int major, minor;
    nvmlReturn_t rc = nvmlDeviceGetCudaComputeCapability(device, &major, &minor);

    if (rc != NVML_SUCCESS)
        return rc;
    if (arch == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (major == 7)
        *arch = minor < 5 ? NVML_DEVICE_ARCH_VOLTA : NVML_DEVICE_ARCH_TURING;
    else if (major == 8)
        *arch = minor < 9 ? NVML_DEVICE_ARCH_AMPERE : NVML_DEVICE_ARCH_ADA;
    else if (major == 9)
        *arch = NVML_DEVICE_ARCH_HOPPER;
    else if (major == 10 || major == 12)
        *arch = NVML_DEVICE_ARCH_BLACKWELL;
    else
        *arch = NVML_DEVICE_ARCH_UNKNOWN;
    return NVML_SUCCESS;
}

/* The highest clocks, which the driver API reports in kHz, but for video's, which only
 * the server's NVML knows (facts.c, with the current clocks). */
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                       unsigned int *clock)
{
    int khz = 0;
    nvmlReturn_t rc;

    switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
        rc = attr(device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &khz);
        break;
    case NVML_CLOCK_MEM:
        rc = attr(device, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &khz);
        break;
    case NVML_CLOCK_VIDEO:
        return ds__nvml_max_video_clock(device, clock);
    default:
        return ds__nvml_cuda() == NULL ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS)
        return rc;
    if (clock == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (khz <= 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *clock = (unsigned)khz / 1000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t device, unsigned int *width)
{
    int bits = 0;
    nvmlReturn_t rc = attr(device, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &bits);

    if (rc != NVML_SUCCESS)
        return rc;
    if (width == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *width = (unsigned)bits;
    return NVML_SUCCESS;
}

/* ECC as the device runs now; nothing changes it from inside a tenant, so pending is the
 * same. */
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
                                  nvmlEnableState_t *pending)
{
    int on = 0;
    nvmlReturn_t rc = attr(device, CU_DEVICE_ATTRIBUTE_ECC_ENABLED, &on);

    if (rc != NVML_SUCCESS)
        return rc;
    if (current == NULL || pending == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *current = *pending = on ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

/* CUcomputemode and nvmlComputeMode_t number the modes alike. */
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    int m = 0;
    nvmlReturn_t rc = attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, &m);

    if (rc != NVML_SUCCESS)
        return rc;
    if (mode == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mode = (nvmlComputeMode_t)m;
    return NVML_SUCCESS;
}

/* Set *out (and *out2 where given) to v for a query whose answer is the same for every
 * tenant's device: the handle's and the output's errors first, as NVML checks them. */
static nvmlReturn_t fixed(nvmlDevice_t device, unsigned *out, unsigned *out2, int two,
                          unsigned v)
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    nvmlReturn_t rc = ds__nvml_device(device, &cu, &dev);

    if (rc != NVML_SUCCESS)
        return rc;
    if (out == NULL || (two && out2 == NULL))
        return NVML_ERROR_INVALID_ARGUMENT;
    *out = v;
    if (two)
        *out2 = v;
    return NVML_SUCCESS;
}

/* A tenant's device is the whole GPU its server runs on, never a MIG instance. */
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    return fixed(device, isMigDevice, NULL, 0, 0);
}

/* MIG stays off for a tenant: it cannot be turned on through detshare (the setter is
 * refused), and nvidia-smi takes NOT_SUPPORTED here for a failed query (exit 3) on a
 * GPU it knows is MIG-capable. */
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode)
{
    return fixed(device, currentMode, pendingMode, 1, NVML_DEVICE_MIG_DISABLE);
}

/* No MIG device can be made inside a tenant's device. */
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    return fixed(device, count, NULL, 0, 0);
}
