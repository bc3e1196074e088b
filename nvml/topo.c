/* Where the device sits: the CPUs and NUMA nodes near it, as the server's NVML read them
 * (at NUMA node scope), and a topology of one device, as NVML answers on a machine that
 * has one GPU: no other GPU is near or far, and a device is its own closest kin.  For a
 * tenant on another host (TCP), the CPUs are the server host's. */
#include "nvml_int.h"

#include <string.h>

/* Copy the served words of set (n of them) into out's size words: the rest read 0. */
static nvmlReturn_t copy_set(const uint64_t *set, unsigned n, unsigned size, unsigned long *out)
{
    if (size == 0 || out == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (n == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    memset(out, 0, size * sizeof(*out));
    memcpy(out, set, (n < size ? n : size) * sizeof(*out));
    return NVML_SUCCESS;
}

_Static_assert(sizeof(unsigned long) == sizeof(uint64_t), "NVML's sets are 64-bit words");

static nvmlReturn_t cpus(nvmlDevice_t h, unsigned size, unsigned long *set,
                         nvmlAffinityScope_t scope)
{
    struct ds_devfacts d;
    nvmlReturn_t rc = ds__nvml_facts(h, &d);

    if (rc != NVML_SUCCESS)
        return rc;
    if (scope != NVML_AFFINITY_SCOPE_NODE)
        return scope == NVML_AFFINITY_SCOPE_SOCKET ? NVML_ERROR_NOT_SUPPORTED
                                                   : NVML_ERROR_INVALID_ARGUMENT;
    return copy_set(d.cpus, d.ncpu_words, size, set);
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize,
                                      unsigned long *cpuSet)
{
    return cpus(device, cpuSetSize, cpuSet, NVML_AFFINITY_SCOPE_NODE);
}

nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device, unsigned int cpuSetSize,
                                                 unsigned long *cpuSet, nvmlAffinityScope_t scope)
{
    return cpus(device, cpuSetSize, cpuSet, scope);
}

nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int nodeSetSize,
                                         unsigned long *nodeSet, nvmlAffinityScope_t scope)
{
    struct ds_devfacts d;
    nvmlReturn_t rc = ds__nvml_facts(device, &d);

    if (rc != NVML_SUCCESS)
        return rc;
    if (scope != NVML_AFFINITY_SCOPE_NODE)
        return scope == NVML_AFFINITY_SCOPE_SOCKET ? NVML_ERROR_NOT_SUPPORTED
                                                   : NVML_ERROR_INVALID_ARGUMENT;
    return copy_set(d.nodes, d.nnode_words, nodeSetSize, nodeSet);
}

/* Both handles are the one device's: the closest level there is. */
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t *pathInfo)
{
    const struct ds_nvml_cuda *cu;
    CUdevice d1, d2;
    nvmlReturn_t rc;

    if ((rc = ds__nvml_device(device1, &cu, &d1)) != NVML_SUCCESS ||
        (rc = ds__nvml_device(device2, &cu, &d2)) != NVML_SUCCESS)
        return rc;
    if (pathInfo == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *pathInfo = NVML_TOPOLOGY_INTERNAL;
    return NVML_SUCCESS;
}

/* No other GPU, at any level. */
nvmlReturn_t nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t device, nvmlGpuTopologyLevel_t level,
                                              unsigned int *count, nvmlDevice_t *deviceArray)
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    nvmlReturn_t rc = ds__nvml_device(device, &cu, &dev);

    (void)level;
    (void)deviceArray;
    if (rc != NVML_SUCCESS)
        return rc;
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}

/* The device, when CPU cpuNumber is near it. */
nvmlReturn_t nvmlSystemGetTopologyGpuSet(unsigned int cpuNumber, unsigned int *count,
                                         nvmlDevice_t *deviceArray)
{
    struct ds_devfacts d;
    nvmlDevice_t h = ds__nvml_handle(0);
    nvmlReturn_t rc;
    unsigned n;

    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (h == NULL) {
        *count = 0;
        return NVML_SUCCESS;
    }
    if ((rc = ds__nvml_facts(h, &d)) != NVML_SUCCESS)
        return rc;
    if (d.ncpu_words == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    n = cpuNumber / 64 < d.ncpu_words && (d.cpus[cpuNumber / 64] >> (cpuNumber % 64) & 1);
    if (*count == 0) {
        *count = n;
        return NVML_SUCCESS;
    }
    if (n > 0 && deviceArray == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (n > 0)
        deviceArray[0] = h;
    *count = n;
    return NVML_SUCCESS;
}
