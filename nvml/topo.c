/* Where the devices sit: the CPUs and NUMA nodes near each, as its server's NVML read
 * them (at NUMA node scope), and how the tenant's devices stand to one another.  A
 * tenant's devices are its servers' GPUs, one each; no server sees another's GPU, so
 * what is known of two is what their facts tell: the boot id of each server's host
 * (DS_TEXT_HOST_BOOT) and each GPU's NUMA nodes.  Two devices on the tenant's own host
 * reach each other's memory (detshare's peer copies, through CUDA IPC between the
 * servers' executors); of two elsewhere nothing is known, and no peer access is given
 * over TCP.  NVLink is never claimed: the servers do not read it.  For a tenant on
 * another host (TCP), a device's CPUs are its server host's. */
#include "nvml_int.h"

#include <pthread.h>
#include <stdio.h>
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

static char own_boot[DS_FACT_TEXT_LEN];
static pthread_once_t own_once = PTHREAD_ONCE_INIT;

/* This process's host's boot id, "" when unreadable: the devices of a host it cannot
 * name are not known to be on its own. */
static void read_own_boot(void)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    if (f == NULL)
        return;
    if (fgets(own_boot, sizeof(own_boot), f) == NULL)
        own_boot[0] = '\0';
    fclose(f);
    own_boot[strcspn(own_boot, "\n")] = '\0';
}

/* How two distinct devices' facts stand: NVML_TOPOLOGY_NODE when both are on this
 * process's host and near the same NUMA nodes, NVML_TOPOLOGY_SYSTEM when only on this
 * host (the closest level the facts prove: a PCIe switch or host bridge between them is
 * not seen), else -1 (another host, or one not known). */
static int level_of(const struct ds_devfacts *a, const struct ds_devfacts *b)
{
    pthread_once(&own_once, read_own_boot);
    if (own_boot[0] == '\0' || strcmp(a->text[DS_TEXT_HOST_BOOT], own_boot) != 0 ||
        strcmp(b->text[DS_TEXT_HOST_BOOT], own_boot) != 0)
        return -1;
    if (a->nnode_words > 0 && a->nnode_words == b->nnode_words &&
        memcmp(a->nodes, b->nodes, a->nnode_words * sizeof(a->nodes[0])) == 0)
        return NVML_TOPOLOGY_NODE;
    return NVML_TOPOLOGY_SYSTEM;
}

/* The level of two handles into *level (NVML_TOPOLOGY_INTERNAL for one device's two),
 * -1 when they are not known to share a host. */
static nvmlReturn_t level_between(nvmlDevice_t h1, nvmlDevice_t h2, int *level)
{
    struct ds_devfacts a, b;
    nvmlReturn_t rc;

    if ((rc = ds__nvml_facts(h1, &a)) != NVML_SUCCESS ||
        (rc = ds__nvml_facts(h2, &b)) != NVML_SUCCESS)
        return rc;
    *level = h1 == h2 ? NVML_TOPOLOGY_INTERNAL : level_of(&a, &b);
    return NVML_SUCCESS;
}

/* The closest level the facts prove; NVML_ERROR_NOT_SUPPORTED for devices not both on
 * this host, which no level describes. */
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t *pathInfo)
{
    const struct ds_nvml_cuda *cu;
    CUdevice d1, d2;
    int level;
    nvmlReturn_t rc;

    if ((rc = ds__nvml_device(device1, &cu, &d1)) != NVML_SUCCESS ||
        (rc = ds__nvml_device(device2, &cu, &d2)) != NVML_SUCCESS)
        return rc;
    if (pathInfo == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (device1 == device2) {
        *pathInfo = NVML_TOPOLOGY_INTERNAL;
        return NVML_SUCCESS;
    }
    if ((rc = level_between(device1, device2, &level)) != NVML_SUCCESS)
        return rc;
    if (level < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *pathInfo = (nvmlGpuTopologyLevel_t)level;
    return NVML_SUCCESS;
}

/* The n devices of found into *count and deviceArray, as NVML lists devices: a zero
 * *count asks how many; else as many as fit. */
static nvmlReturn_t give(nvmlDevice_t *found, unsigned n, unsigned *count,
                         nvmlDevice_t *deviceArray)
{
    if (*count == 0) {
        *count = n;
        return NVML_SUCCESS;
    }
    if (n > 0 && deviceArray == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (n > *count)
        n = *count;
    memcpy(deviceArray, found, n * sizeof(*found));
    *count = n;
    return NVML_SUCCESS;
}

/* The other devices at the level or closer. */
nvmlReturn_t nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t device, nvmlGpuTopologyLevel_t level,
                                              unsigned int *count, nvmlDevice_t *deviceArray)
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    nvmlDevice_t h, found[DS_NVML_MAX_DEVICES];
    unsigned n = 0;
    int at;
    nvmlReturn_t rc = ds__nvml_device(device, &cu, &dev);

    if (rc != NVML_SUCCESS)
        return rc;
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; (h = ds__nvml_handle(i)) != NULL; i++) {
        if (h == device)
            continue;
        if ((rc = level_between(device, h, &at)) != NVML_SUCCESS)
            return rc;
        if (at >= 0 && at <= (int)level)
            found[n++] = h;
    }
    return give(found, n, count, deviceArray);
}

/* The devices CPU cpuNumber is near, by their servers' CPU numbers. */
nvmlReturn_t nvmlSystemGetTopologyGpuSet(unsigned int cpuNumber, unsigned int *count,
                                         nvmlDevice_t *deviceArray)
{
    struct ds_devfacts d;
    nvmlDevice_t h, found[DS_NVML_MAX_DEVICES];
    nvmlReturn_t rc;
    unsigned n = 0, known = 0;

    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; (h = ds__nvml_handle(i)) != NULL; i++) {
        if ((rc = ds__nvml_facts(h, &d)) != NVML_SUCCESS)
            return rc;
        known += d.ncpu_words > 0;
        if (cpuNumber / 64 < d.ncpu_words && (d.cpus[cpuNumber / 64] >> (cpuNumber % 64) & 1))
            found[n++] = h;
    }
    if (ds__nvml_handle(0) != NULL && known == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    return give(found, n, count, deviceArray);
}

/* Reads and writes of a peer's memory, over PCIe as far as anyone can say, between two
 * devices of this host; never atomics or NVLink, which detshare's peer copies are not.
 * A device is no peer of its own, as cuDeviceCanAccessPeer says. */
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                    nvmlGpuP2PCapsIndex_t p2pIndex,
                                    nvmlGpuP2PStatus_t *p2pStatus)
{
    const struct ds_nvml_cuda *cu;
    CUdevice d1, d2;
    int level;
    nvmlReturn_t rc;

    if ((rc = ds__nvml_device(device1, &cu, &d1)) != NVML_SUCCESS ||
        (rc = ds__nvml_device(device2, &cu, &d2)) != NVML_SUCCESS)
        return rc;
    if (p2pStatus == NULL || (unsigned)p2pIndex >= NVML_P2P_CAPS_INDEX_UNKNOWN)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = level_between(device1, device2, &level)) != NVML_SUCCESS)
        return rc;
    *p2pStatus = level > NVML_TOPOLOGY_INTERNAL && (p2pIndex == NVML_P2P_CAPS_INDEX_READ ||
                                                    p2pIndex == NVML_P2P_CAPS_INDEX_WRITE ||
                                                    p2pIndex == NVML_P2P_CAPS_INDEX_PCI)
                     ? NVML_P2P_STATUS_OK
                     : NVML_P2P_STATUS_NOT_SUPPORTED;
    return NVML_SUCCESS;
}
