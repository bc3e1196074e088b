/* The tenant's share of its device, from the server (DETSHARE_SHARE): its memory, how
 * busy its work kept the SMs it runs on, and its process. */
#include "nvml_int.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

/* NVML's utilisation covers a sample period of 1/6 s to 1 s, depending on the product:
 * here 1 s, as far as the readings taken allow. */
#define PERIOD_NS 1000000000ull

/* Readings of the tenant's kernel time: `newer` is the latest kept, `older` the one
 * kept before it; a reading is kept once PERIOD_NS has passed since the last. */
struct reading {
    uint64_t at_ns, kernel_ns;
};

/* Each device's readings, of its own server's clock. */
struct readings {
    struct reading older, newer;
    int started;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct readings kept[DS_NVML_MAX_DEVICES];

static nvmlReturn_t share_of(nvmlDevice_t h, struct ds_share_info *s)
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    nvmlReturn_t rc = ds__nvml_device(h, &cu, &dev);

    if (rc != NVML_SUCCESS)
        return rc;
    return ds__nvml_from_cu(cu->share(dev, s));
}

void ds__nvml_share_start(const struct ds_nvml_cuda *cu, nvmlDevice_t h)
{
    struct ds_share_info s;
    struct readings *k = &kept[h->index];

    if (cu->share(h->dev, &s) != CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&lock);
    if (!k->started) {
        k->older.at_ns = k->newer.at_ns = s.now_ns;
        k->older.kernel_ns = k->newer.kernel_ns = s.kernel_ns;
        k->started = 1;
    }
    pthread_mutex_unlock(&lock);
}

/* Percent of the time since device h's reading at least PERIOD_NS old (since the first
 * reading, while there is none that old) in which the tenant had work on the device. */
static unsigned busy_percent(nvmlDevice_t h, const struct ds_share_info *s)
{
    struct reading base, now = { s->now_ns, s->kernel_ns };
    struct readings *k = &kept[h->index];
    uint64_t dt, dk;

    pthread_mutex_lock(&lock);
    if (!k->started) {
        k->older = k->newer = now;
        k->started = 1;
    }
    if (now.at_ns >= k->newer.at_ns + PERIOD_NS) {
        base = k->newer;
        k->older = k->newer;
        k->newer = now;
    } else {
        base = k->older;
    }
    pthread_mutex_unlock(&lock);
    dt = now.at_ns > base.at_ns ? now.at_ns - base.at_ns : 0;
    dk = now.kernel_ns > base.kernel_ns ? now.kernel_ns - base.kernel_ns : 0;
    if (dt == 0)
        return 0;
    /* The server adds kernel time in steps of its sampling interval: a short window
     * may see more than it lasted. */
    return dk >= dt ? 100 : (unsigned)(dk * 100 / dt);
}

/* Used is what the tenant holds; free is what cuMemGetInfo would say, which is total
 * less used unless other tenants under the same quota rule, or on the device, hold
 * memory too. */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    struct ds_share_info s;
    nvmlReturn_t rc = share_of(device, &s);

    if (rc != NVML_SUCCESS)
        return rc;
    if (memory == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = s.mem_total;
    memory->used = s.mem_used < s.mem_total ? s.mem_used : s.mem_total;
    memory->free = s.mem_free < s.mem_total - memory->used ? s.mem_free
                                                           : s.mem_total - memory->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    nvmlMemory_t m;
    nvmlReturn_t rc;

    if (memory != NULL && memory->version != nvmlMemory_v2)
        return ds__nvml_cuda() == NULL ? NVML_ERROR_UNINITIALIZED
                                       : NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if ((rc = nvmlDeviceGetMemoryInfo(device, memory != NULL ? &m : NULL)) != NVML_SUCCESS)
        return rc;
    memory->total = m.total;
    memory->reserved = 0;
    memory->free = m.free;
    memory->used = m.used;
    return NVML_SUCCESS;
}

/* memory: how busy device memory was is not known per tenant, and reads 0. */
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    struct ds_share_info s;
    nvmlReturn_t rc = share_of(device, &s);

    if (rc != NVML_SUCCESS)
        return rc;
    if (utilization == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    utilization->gpu = busy_percent(device, &s);
    utilization->memory = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t ds__nvml_running(nvmlDevice_t h, unsigned long long *used, int *is)
{
    const struct ds_nvml_cuda *cu;
    struct ds_share_info s;
    CUdevice dev;
    CUcontext current = NULL;
    unsigned flags;
    int active = 0;
    nvmlReturn_t rc = ds__nvml_device(h, &cu, &dev);

    if (rc != NVML_SUCCESS || (rc = share_of(h, &s)) != NVML_SUCCESS)
        return rc;
    cu->primary_state(dev, &flags, &active);
    cu->ctx_current(&current);
    *used = s.mem_used;
    *is = active || current != NULL || s.mem_used > 0;
    return NVML_SUCCESS;
}

nvmlReturn_t ds__nvml_room(unsigned *count, const void *infos, unsigned n)
{
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && infos == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = n;
    return NVML_SUCCESS;
}

/* The tenant's own process, alone: no other process is the tenant's to see. */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                                     nvmlProcessInfo_t *infos)
{
    unsigned long long used;
    int is;
    nvmlReturn_t rc = ds__nvml_running(device, &used, &is);

    if (rc != NVML_SUCCESS || (rc = ds__nvml_room(count, infos, is ? 1 : 0)) != NVML_SUCCESS ||
        !is)
        return rc;
    memset(&infos[0], 0, sizeof(infos[0]));
    infos[0].pid = (unsigned)getpid();
    infos[0].usedGpuMemory = used;
    infos[0].gpuInstanceId = 0xFFFFFFFFu;
    infos[0].computeInstanceId = 0xFFFFFFFFu;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *count,
                                                     nvmlProcessInfo_v2_t *infos)
{
    return nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *count,
                                                  nvmlProcessInfo_v1_t *infos)
{
    unsigned long long used;
    int is;
    nvmlReturn_t rc = ds__nvml_running(device, &used, &is);

    if (rc != NVML_SUCCESS || (rc = ds__nvml_room(count, infos, is ? 1 : 0)) != NVML_SUCCESS ||
        !is)
        return rc;
    infos[0].pid = (unsigned)getpid();
    infos[0].usedGpuMemory = used;
    return NVML_SUCCESS;
}

/* A tenant runs no graphics work, and MPS is the server's business, not the tenant's. */
nvmlReturn_t ds__nvml_no_processes(nvmlDevice_t device, unsigned *count)
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    nvmlReturn_t rc = ds__nvml_device(device, &cu, &dev);

    return rc != NVML_SUCCESS ? rc : ds__nvml_room(count, NULL, 0);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                                      nvmlProcessInfo_t *infos)
{
    (void)infos;
    return ds__nvml_no_processes(device, count);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                        unsigned int *count,
                                                        nvmlProcessInfo_t *infos)
{
    (void)infos;
    return ds__nvml_no_processes(device, count);
}
