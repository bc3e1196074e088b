#define _GNU_SOURCE /* dladdr */
/* nvmlInit and nvmlShutdown, the binding to detshare's libcuda, device handles, error
 * strings and the system queries. */
#include "nvml_int.h"

#include "ds_log.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ds_nvml_cuda cuda;
static int bound;              /* cuda holds the entry points */
static unsigned inits;         /* nvmlInit calls not yet shut down */
static unsigned ndevices;
static struct nvmlDevice_st devices[DS_NVML_MAX_DEVICES];

nvmlReturn_t ds__nvml_from_cu(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS:
        return NVML_SUCCESS;
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
        return NVML_ERROR_UNINITIALIZED;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_DEVICE:
        return NVML_ERROR_INVALID_ARGUMENT;
    case CUDA_ERROR_NO_DEVICE:
        return NVML_ERROR_DRIVER_NOT_LOADED;
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
        return NVML_ERROR_GPU_IS_LOST;
    case CUDA_ERROR_NOT_SUPPORTED:
        return NVML_ERROR_NOT_SUPPORTED;
    default:
        return NVML_ERROR_UNKNOWN;
    }
}

nvmlReturn_t ds__nvml_string(char *buf, unsigned len, const char *s)
{
    size_t n = strlen(s);

    if (buf == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (n >= len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, n + 1);
    return NVML_SUCCESS;
}

/* The libcuda.so.1 this process has, or else the one beside this library: a tenant's
 * LD_LIBRARY_PATH finds both in one directory, and a program that loaded the driver's
 * own libcuda is no tenant, which the export table then tells. */
static void *open_cuda(void)
{
    char path[PATH_MAX];
    Dl_info self;
    const char *slash;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

    if (h != NULL)
        return h;
    if (dladdr((void *)ds__nvml_cuda, &self) == 0 || self.dli_fname == NULL ||
        (slash = strrchr(self.dli_fname, '/')) == NULL)
        return dlopen("libcuda.so.1", RTLD_NOW);
    snprintf(path, sizeof(path), "%.*s/libcuda.so.1", (int)(slash - self.dli_fname),
             self.dli_fname);
    return dlopen(path, RTLD_NOW);
}

static nvmlReturn_t bind_share(void *h)
{
    static const CUuuid id = { DS_SHARE_TABLE_ID_BYTES };
    CUresult (*get_table)(const void **, const CUuuid *) =
        (CUresult(*)(const void **, const CUuuid *))dlsym(h, "cuGetExportTable");
    const void *const *table = NULL;

    if (get_table == NULL || get_table((const void **)&table, &id) != CUDA_SUCCESS ||
        table == NULL || (uintptr_t)table[0] < 3 * sizeof(void *)) {
        ds_warn("nvmlInit: the libcuda.so.1 in this process is not detshare's (or is of "
                "another build): its LD_LIBRARY_PATH must name detshare's library "
                "directory before the driver's");
        return NVML_ERROR_LIBRARY_NOT_FOUND;
    }
    cuda.share = (ds_share_get_fn)(uintptr_t)table[1];
    cuda.facts = (ds_facts_get_fn)(uintptr_t)table[2];
    return NVML_SUCCESS;
}

#define BIND(field, name)                                        \
    do {                                                         \
        *(void **)&cuda.field = dlsym(h, name);                  \
        if (cuda.field == NULL)                                  \
            return NVML_ERROR_FUNCTION_NOT_FOUND;                \
    } while (0)

/* Under lock.  The library is never unloaded (libcuda is linked -z nodelete), so the
 * entry points stay valid once found. */
static nvmlReturn_t bind(void)
{
    void *h;

    if (bound)
        return NVML_SUCCESS;
    h = open_cuda();
    if (h == NULL) {
        ds_warn("nvmlInit: cannot load detshare's libcuda.so.1: %s", dlerror());
        return NVML_ERROR_LIBRARY_NOT_FOUND;
    }
    BIND(init, "cuInit");
    BIND(driver_version, "cuDriverGetVersion");
    BIND(device_count, "cuDeviceGetCount");
    BIND(device_get, "cuDeviceGet");
    BIND(name, "cuDeviceGetName");
    BIND(attr, "cuDeviceGetAttribute");
    BIND(uuid, "cuDeviceGetUuid");
    BIND(primary_state, "cuDevicePrimaryCtxGetState");
    BIND(ctx_current, "cuCtxGetCurrent");
    if (bind_share(h) != NVML_SUCCESS)
        return NVML_ERROR_LIBRARY_NOT_FOUND;
    bound = 1;
    return NVML_SUCCESS;
}

/* Under lock, at the first nvmlInit: connect (cuInit) and find the devices. */
static nvmlReturn_t start(void)
{
    nvmlReturn_t rc = bind();
    int n = 0;

    if (rc != NVML_SUCCESS)
        return rc;
    if ((rc = ds__nvml_from_cu(cuda.init(0))) != NVML_SUCCESS ||
        (rc = ds__nvml_from_cu(cuda.device_count(&n))) != NVML_SUCCESS)
        return rc;
    ndevices = 0;
    for (int i = 0; i < n && i < DS_NVML_MAX_DEVICES; i++) {
        if ((rc = ds__nvml_from_cu(cuda.device_get(&devices[i].dev, i))) != NVML_SUCCESS)
            return rc;
        devices[i].index = (unsigned)i;
        ds__nvml_share_start(&cuda, &devices[i]);
        ndevices++;
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    nvmlReturn_t rc = NVML_SUCCESS;

    (void)flags;
    pthread_mutex_lock(&lock);
    if (inits == 0)
        rc = start();
    if (rc == NVML_SUCCESS)
        inits++;
    pthread_mutex_unlock(&lock);
    return rc;
}

nvmlReturn_t nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlInit(void)
{
    return nvmlInitWithFlags(0);
}

/* The connection stays: it is the process's libcuda's, which the program may use. */
nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t rc = NVML_SUCCESS;

    pthread_mutex_lock(&lock);
    if (inits == 0)
        rc = NVML_ERROR_UNINITIALIZED;
    else
        inits--;
    pthread_mutex_unlock(&lock);
    return rc;
}

const struct ds_nvml_cuda *ds__nvml_cuda(void)
{
    const struct ds_nvml_cuda *c;

    pthread_mutex_lock(&lock);
    c = inits > 0 ? &cuda : NULL;
    pthread_mutex_unlock(&lock);
    return c;
}

nvmlDevice_t ds__nvml_handle(unsigned i)
{
    return i < ndevices ? &devices[i] : NULL;
}

nvmlReturn_t ds__nvml_device(nvmlDevice_t h, const struct ds_nvml_cuda **cu, CUdevice *dev)
{
    *cu = ds__nvml_cuda();
    if (*cu == NULL)
        return NVML_ERROR_UNINITIALIZED;
    for (unsigned i = 0; i < ndevices; i++) {
        if (h == &devices[i]) {
            *dev = h->dev;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = ndevices;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *count)
{
    return nvmlDeviceGetCount_v2(count);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || index >= ndevices)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    nvmlReturn_t rc = ds__nvml_device(device, &cu, &dev);

    if (rc != NVML_SUCCESS)
        return rc;
    if (index == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = device->index;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version)
{
    const struct ds_nvml_cuda *cu = ds__nvml_cuda();

    if (cu == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (version == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    return ds__nvml_from_cu(cu->driver_version(version));
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version)
{
    return nvmlSystemGetCudaDriverVersion(version);
}

/* Only the calling process's own name: no other process is the tenant's to name. */
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    char comm[64] = "";
    FILE *f;

    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (name == NULL || length == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (pid != (unsigned)getpid())
        return NVML_ERROR_NOT_FOUND;
    f = fopen("/proc/self/comm", "r");
    if (f == NULL)
        return NVML_ERROR_UNKNOWN;
    if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    /* NVML truncates to fit here rather than refuse. */
    snprintf(name, length, "%s", comm);
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}
