/*
 * The device's facts and telemetry for the tenant's NVML library (common/ds_devfacts.h),
 * read from the driver's own NVML.  It is loaded from the directory of the libcuda.so.1
 * this executor runs on: the same driver installation, and never through a search path
 * that could find detshare's own libnvidia-ml.so.1 (a test, or an operator, may run the
 * server with detshare's library directory on its LD_LIBRARY_PATH).  Loaded at the first
 * request, not at open: most tenants never ask, and NVML's start costs tens of ms.  A
 * failure to load is logged once and leaves every fact unserved.
 */
#define _GNU_SOURCE /* dladdr */
#include "cuda_backend.h"

#include "ds_devfacts.h"
#include "ds_log.h"

#include <dlfcn.h>
#include <limits.h>
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The types NVML's functions are called through. */
typedef nvmlReturn_t (*void_fn)(void);
typedef nvmlReturn_t (*by_uuid_fn)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*brand_fn)(nvmlDevice_t, nvmlBrandType_t *);
typedef nvmlReturn_t (*temp_fn)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned *);
typedef nvmlReturn_t (*threshold_fn)(nvmlDevice_t, nvmlTemperatureThresholds_t, unsigned *);
typedef nvmlReturn_t (*u32_fn)(nvmlDevice_t, unsigned *);
typedef nvmlReturn_t (*range_fn)(nvmlDevice_t, unsigned *, unsigned *);
typedef nvmlReturn_t (*u64_fn)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*clock_fn)(nvmlDevice_t, nvmlClockType_t, unsigned *);
typedef nvmlReturn_t (*pstate_fn)(nvmlDevice_t, nvmlPstates_t *);
typedef nvmlReturn_t (*enable_fn)(nvmlDevice_t, nvmlEnableState_t *);
typedef nvmlReturn_t (*virt_fn)(nvmlDevice_t, nvmlGpuVirtualizationMode_t *);
typedef nvmlReturn_t (*validate_fn)(nvmlDevice_t);
typedef nvmlReturn_t (*pci_fn)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*ecc_fn)(nvmlDevice_t, nvmlMemoryErrorType_t, nvmlEccCounterType_t,
                               unsigned long long *);
typedef nvmlReturn_t (*sys_text_fn)(char *, unsigned);
typedef nvmlReturn_t (*text_fn)(nvmlDevice_t, char *, unsigned);
typedef nvmlReturn_t (*cpus_fn)(nvmlDevice_t, unsigned, unsigned long *);
typedef nvmlReturn_t (*nodes_fn)(nvmlDevice_t, unsigned, unsigned long *, nvmlAffinityScope_t);

/* Every NVML function read: the field, its name in the library, its type. */
#define NVML_FNS(X)                                                                        \
    X(init, "nvmlInit_v2", void_fn)                                                        \
    X(shutdown, "nvmlShutdown", void_fn)                                                   \
    X(by_uuid, "nvmlDeviceGetHandleByUUID", by_uuid_fn)                                    \
    X(brand, "nvmlDeviceGetBrand", brand_fn)                                               \
    X(temperature, "nvmlDeviceGetTemperature", temp_fn)                                    \
    X(threshold, "nvmlDeviceGetTemperatureThreshold", threshold_fn)                        \
    X(power, "nvmlDeviceGetPowerUsage", u32_fn)                                            \
    X(power_limit, "nvmlDeviceGetPowerManagementLimit", u32_fn)                            \
    X(power_default, "nvmlDeviceGetPowerManagementDefaultLimit", u32_fn)                   \
    X(power_enforced, "nvmlDeviceGetEnforcedPowerLimit", u32_fn)                           \
    X(power_range, "nvmlDeviceGetPowerManagementLimitConstraints", range_fn)               \
    X(energy, "nvmlDeviceGetTotalEnergyConsumption", u64_fn)                               \
    X(clock, "nvmlDeviceGetClockInfo", clock_fn)                                           \
    X(app_clock, "nvmlDeviceGetApplicationsClock", clock_fn)                               \
    X(default_app_clock, "nvmlDeviceGetDefaultApplicationsClock", clock_fn)                \
    X(max_clock, "nvmlDeviceGetMaxClockInfo", clock_fn)                                    \
    X(pstate, "nvmlDeviceGetPerformanceState", pstate_fn)                                  \
    X(reasons, "nvmlDeviceGetCurrentClocksEventReasons", u64_fn)                           \
    X(supported_reasons, "nvmlDeviceGetSupportedClocksEventReasons", u64_fn)               \
    X(pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration", u32_fn)                             \
    X(pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration", u32_fn)                          \
    X(pcie_gen_gpu_max, "nvmlDeviceGetGpuMaxPcieLinkGeneration", u32_fn)                   \
    X(pcie_width, "nvmlDeviceGetCurrPcieLinkWidth", u32_fn)                                \
    X(pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth", u32_fn)                             \
    X(persistence, "nvmlDeviceGetPersistenceMode", enable_fn)                              \
    X(display_mode, "nvmlDeviceGetDisplayMode", enable_fn)                                 \
    X(display_active, "nvmlDeviceGetDisplayActive", enable_fn)                             \
    X(board_id, "nvmlDeviceGetBoardId", u32_fn)                                            \
    X(multi_gpu, "nvmlDeviceGetMultiGpuBoard", u32_fn)                                     \
    X(pci, "nvmlDeviceGetPciInfo_v3", pci_fn)                                              \
    X(fan, "nvmlDeviceGetFanSpeed", u32_fn)                                                \
    X(numa, "nvmlDeviceGetNumaNodeId", u32_fn)                                             \
    X(ecc, "nvmlDeviceGetTotalEccErrors", ecc_fn)                                          \
    X(virt, "nvmlDeviceGetVirtualizationMode", virt_fn)                                    \
    X(validate, "nvmlDeviceValidateInforom", validate_fn)                                  \
    X(driver, "nvmlSystemGetDriverVersion", sys_text_fn)                                   \
    X(nvml_version, "nvmlSystemGetNVMLVersion", sys_text_fn)                               \
    X(vbios, "nvmlDeviceGetVbiosVersion", text_fn)                                         \
    X(serial, "nvmlDeviceGetSerial", text_fn)                                              \
    X(part, "nvmlDeviceGetBoardPartNumber", text_fn)                                       \
    X(cpus, "nvmlDeviceGetCpuAffinity", cpus_fn)                                           \
    X(nodes, "nvmlDeviceGetMemoryAffinity", nodes_fn)

struct ds_cuda_nvml {
    void *dl;
    nvmlDevice_t dev;
#define NVML_FIELD(field, name, type) type field;
    NVML_FNS(NVML_FIELD)
#undef NVML_FIELD
};

_Static_assert(sizeof(unsigned long) == sizeof(uint64_t), "NVML's CPU sets are 64-bit words");

/* The driver's NVML, beside the libcuda.so.1 b runs on. */
static void *open_driver_nvml(struct ds_backend *b)
{
    char path[PATH_MAX];
    Dl_info at;
    const char *slash;
    void *cu_init = dlsym(b->cu.dl, "cuInit"), *dl;

    if (cu_init == NULL || dladdr(cu_init, &at) == 0 || at.dli_fname == NULL ||
        (slash = strrchr(at.dli_fname, '/')) == NULL) {
        ds_warn("NVML: cannot tell where the driver's libcuda.so.1 lies: the device's "
                "facts are not served to tenants' NVML");
        return NULL;
    }
    snprintf(path, sizeof(path), "%.*s/libnvidia-ml.so.1", (int)(slash - at.dli_fname),
             at.dli_fname);
    if ((dl = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL)
        ds_warn("NVML: cannot load %s (%s): the device's facts are not served to tenants' "
                "NVML",
                path, dlerror());
    return dl;
}

static struct ds_cuda_nvml *open_nvml(struct ds_backend *b)
{
    struct ds_cuda_nvml *n = calloc(1, sizeof(*n));
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    CUuuid u;
    const unsigned char *x = (const unsigned char *)u.bytes;
    nvmlReturn_t rc;

    if (n == NULL || (n->dl = open_driver_nvml(b)) == NULL) {
        free(n);
        return NULL;
    }
    /* A function the driver lacks stays NULL, its fact unserved. */
#define NVML_LOAD(field, name, type) *(void **)&n->field = dlsym(n->dl, name);
    NVML_FNS(NVML_LOAD)
#undef NVML_LOAD
    if (n->init == NULL || n->shutdown == NULL || n->by_uuid == NULL ||
        b->cu.cuDeviceGetUuid(&u, b->dev) != CUDA_SUCCESS || (rc = n->init()) != NVML_SUCCESS) {
        ds_warn("NVML: the driver's NVML does not start: the device's facts are not served "
                "to tenants' NVML");
        dlclose(n->dl);
        free(n);
        return NULL;
    }
    snprintf(uuid, sizeof(uuid),
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", x[0],
             x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11], x[12], x[13],
             x[14], x[15]);
    if ((rc = n->by_uuid(uuid, &n->dev)) != NVML_SUCCESS) {
        ds_warn("NVML: the driver's NVML does not know device %s (%d): the device's facts "
                "are not served to tenants' NVML",
                uuid, (int)rc);
        n->shutdown();
        dlclose(n->dl);
        free(n);
        return NULL;
    }
    return n;
}

/* Fact f from call, which writes its answer through &v, when fn exists and succeeds. */
#define READ(d, f, T, fn, call)                                                            \
    do {                                                                                   \
        T v = 0;                                                                           \
        if ((fn) != NULL && (call) == NVML_SUCCESS)                                        \
            ds_devfacts_set((d), (f), (uint64_t)v);                                        \
    } while (0)

static void read_thermal_power(const struct ds_cuda_nvml *n, struct ds_devfacts *d)
{
    static const nvmlTemperatureThresholds_t thresholds[] = {
        NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
        NVML_TEMPERATURE_THRESHOLD_GPU_MAX, NVML_TEMPERATURE_THRESHOLD_MEM_MAX
    };
    static const enum ds_devfact threshold_facts[] = { DS_FACT_TEMP_SHUTDOWN,
                                                       DS_FACT_TEMP_SLOWDOWN,
                                                       DS_FACT_TEMP_GPU_MAX,
                                                       DS_FACT_TEMP_MEM_MAX };
    nvmlDevice_t h = n->dev;
    unsigned lo = 0, hi = 0;

    READ(d, DS_FACT_BRAND, nvmlBrandType_t, n->brand, n->brand(h, &v));
    READ(d, DS_FACT_TEMP_GPU, unsigned, n->temperature,
         n->temperature(h, NVML_TEMPERATURE_GPU, &v));
    for (size_t i = 0; i < sizeof(thresholds) / sizeof(thresholds[0]); i++)
        READ(d, threshold_facts[i], unsigned, n->threshold, n->threshold(h, thresholds[i], &v));
    READ(d, DS_FACT_POWER_USAGE, unsigned, n->power, n->power(h, &v));
    READ(d, DS_FACT_POWER_LIMIT, unsigned, n->power_limit, n->power_limit(h, &v));
    READ(d, DS_FACT_POWER_DEFAULT_LIMIT, unsigned, n->power_default, n->power_default(h, &v));
    READ(d, DS_FACT_POWER_ENFORCED_LIMIT, unsigned, n->power_enforced,
         n->power_enforced(h, &v));
    if (n->power_range != NULL && n->power_range(h, &lo, &hi) == NVML_SUCCESS) {
        ds_devfacts_set(d, DS_FACT_POWER_MIN_LIMIT, lo);
        ds_devfacts_set(d, DS_FACT_POWER_MAX_LIMIT, hi);
    }
    READ(d, DS_FACT_ENERGY, unsigned long long, n->energy, n->energy(h, &v));
    READ(d, DS_FACT_FAN_SPEED, unsigned, n->fan, n->fan(h, &v));
}

static void read_clocks(const struct ds_cuda_nvml *n, struct ds_devfacts *d)
{
    nvmlDevice_t h = n->dev;

    for (int c = NVML_CLOCK_GRAPHICS; c <= NVML_CLOCK_VIDEO; c++) {
        nvmlClockType_t t = (nvmlClockType_t)c;

        READ(d, DS_FACT_CLOCK_GRAPHICS + c, unsigned, n->clock, n->clock(h, t, &v));
        READ(d, DS_FACT_APP_CLOCK_GRAPHICS + c, unsigned, n->app_clock, n->app_clock(h, t, &v));
        READ(d, DS_FACT_DEFAULT_APP_CLOCK_GRAPHICS + c, unsigned, n->default_app_clock,
             n->default_app_clock(h, t, &v));
    }
    READ(d, DS_FACT_MAX_CLOCK_VIDEO, unsigned, n->max_clock,
         n->max_clock(h, NVML_CLOCK_VIDEO, &v));
    READ(d, DS_FACT_PSTATE, nvmlPstates_t, n->pstate, n->pstate(h, &v));
    READ(d, DS_FACT_CLOCKS_EVENT_REASONS, unsigned long long, n->reasons, n->reasons(h, &v));
    READ(d, DS_FACT_SUPPORTED_CLOCKS_EVENT_REASONS, unsigned long long, n->supported_reasons,
         n->supported_reasons(h, &v));
}

static void read_board(const struct ds_cuda_nvml *n, struct ds_devfacts *d)
{
    static const struct {
        enum ds_devfact f;
        nvmlMemoryErrorType_t type;
        nvmlEccCounterType_t counter;
    } ecc[] = {
        { DS_FACT_ECC_CORRECTED_VOLATILE, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC },
        { DS_FACT_ECC_UNCORRECTED_VOLATILE, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
          NVML_VOLATILE_ECC },
        { DS_FACT_ECC_CORRECTED_AGGREGATE, NVML_MEMORY_ERROR_TYPE_CORRECTED,
          NVML_AGGREGATE_ECC },
        { DS_FACT_ECC_UNCORRECTED_AGGREGATE, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
          NVML_AGGREGATE_ECC },
    };
    nvmlDevice_t h = n->dev;
    nvmlPciInfo_t pci;

    READ(d, DS_FACT_PCIE_GEN, unsigned, n->pcie_gen, n->pcie_gen(h, &v));
    READ(d, DS_FACT_PCIE_GEN_MAX, unsigned, n->pcie_gen_max, n->pcie_gen_max(h, &v));
    READ(d, DS_FACT_PCIE_GEN_GPU_MAX, unsigned, n->pcie_gen_gpu_max, n->pcie_gen_gpu_max(h, &v));
    READ(d, DS_FACT_PCIE_WIDTH, unsigned, n->pcie_width, n->pcie_width(h, &v));
    READ(d, DS_FACT_PCIE_WIDTH_MAX, unsigned, n->pcie_width_max, n->pcie_width_max(h, &v));
    READ(d, DS_FACT_PERSISTENCE, nvmlEnableState_t, n->persistence, n->persistence(h, &v));
    READ(d, DS_FACT_DISPLAY_MODE, nvmlEnableState_t, n->display_mode, n->display_mode(h, &v));
    READ(d, DS_FACT_DISPLAY_ACTIVE, nvmlEnableState_t, n->display_active,
         n->display_active(h, &v));
    READ(d, DS_FACT_BOARD_ID, unsigned, n->board_id, n->board_id(h, &v));
    READ(d, DS_FACT_MULTI_GPU_BOARD, unsigned, n->multi_gpu, n->multi_gpu(h, &v));
    READ(d, DS_FACT_NUMA_NODE, unsigned, n->numa, n->numa(h, &v));
    READ(d, DS_FACT_VIRTUALIZATION_MODE, nvmlGpuVirtualizationMode_t, n->virt, n->virt(h, &v));
    if (n->validate != NULL) {
        nvmlReturn_t r = n->validate(h);

        if (r == NVML_SUCCESS || r == NVML_ERROR_CORRUPTED_INFOROM)
            ds_devfacts_set(d, DS_FACT_INFOROM_VALID, r == NVML_SUCCESS);
    }
    if (n->pci != NULL && n->pci(h, &pci) == NVML_SUCCESS) {
        ds_devfacts_set(d, DS_FACT_PCI_DEVICE_ID, pci.pciDeviceId);
        ds_devfacts_set(d, DS_FACT_PCI_SUBSYSTEM_ID, pci.pciSubSystemId);
    }
    for (size_t i = 0; i < sizeof(ecc) / sizeof(ecc[0]); i++)
        READ(d, ecc[i].f, unsigned long long, n->ecc,
             n->ecc(h, ecc[i].type, ecc[i].counter, &v));
}

/* A text NVML failed to give reads "" whatever it left in the buffer. */
static void read_texts(const struct ds_cuda_nvml *n, struct ds_devfacts *d)
{
    const text_fn device_texts[] = { n->vbios, n->serial, n->part };
    const enum ds_devfact_text which[] = { DS_TEXT_VBIOS, DS_TEXT_SERIAL, DS_TEXT_PART_NUMBER };
    char *driver = d->text[DS_TEXT_DRIVER_VERSION], *version = d->text[DS_TEXT_NVML_VERSION];

    if (n->driver == NULL || n->driver(driver, DS_FACT_TEXT_LEN) != NVML_SUCCESS)
        driver[0] = '\0';
    if (n->nvml_version == NULL || n->nvml_version(version, DS_FACT_TEXT_LEN) != NVML_SUCCESS)
        version[0] = '\0';
    for (size_t i = 0; i < sizeof(which) / sizeof(which[0]); i++)
        if (device_texts[i] == NULL ||
            device_texts[i](n->dev, d->text[which[i]], DS_FACT_TEXT_LEN) != NVML_SUCCESS)
            d->text[which[i]][0] = '\0';
    if (n->cpus != NULL &&
        n->cpus(n->dev, DS_FACT_CPU_WORDS_ROOM, (unsigned long *)d->cpus) == NVML_SUCCESS)
        d->ncpu_words = DS_FACT_CPU_WORDS_ROOM;
    if (n->nodes != NULL && n->nodes(n->dev, DS_FACT_NODE_WORDS_ROOM, (unsigned long *)d->nodes,
                                     NVML_AFFINITY_SCOPE_NODE) == NVML_SUCCESS)
        d->nnode_words = DS_FACT_NODE_WORDS_ROOM;
}

void ds__cuda_device_facts(struct ds_backend *b, struct ds_devfacts *out)
{
    if (b->nvml == NULL && !b->nvml_failed) {
        b->nvml = open_nvml(b);
        b->nvml_failed = b->nvml == NULL;
    }
    if (b->nvml == NULL)
        return;
    read_thermal_power(b->nvml, out);
    read_clocks(b->nvml, out);
    read_board(b->nvml, out);
    read_texts(b->nvml, out);
}

void ds__cuda_nvml_fini(struct ds_backend *b)
{
    if (b->nvml == NULL)
        return;
    b->nvml->shutdown();
    dlclose(b->nvml->dl);
    free(b->nvml);
    b->nvml = NULL;
}
