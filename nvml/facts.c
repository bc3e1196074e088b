/* What NVML says of the device beyond the driver API, as the server read it from the
 * device (DETSHARE_SHARE's slot 2, common/ds_devfacts.h): brand, temperatures, power,
 * clocks, performance state, PCIe link, board, ECC counts, versions.  These are the
 * device's, the same for every tenant, and change nothing.  A fact the server did not
 * read is NVML_ERROR_NOT_SUPPORTED. */
#include "nvml_int.h"
#include "ds_log.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* nvidia-smi asks for dozens of facts in a row, and monitors poll every second: one
 * round trip serves them all for this long. */
#define FRESH_NS 1000000000ull

/* One cache per device: each is its own server's answer. */
struct cache {
    struct ds_devfacts facts;
    uint64_t at_ns;
    int have;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cache cached[DS_NVML_MAX_DEVICES];

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

nvmlReturn_t ds__nvml_facts(nvmlDevice_t h, struct ds_devfacts *out)
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    struct cache *c;
    nvmlReturn_t rc = ds__nvml_device(h, &cu, &dev);
    uint64_t now = now_ns();

    if (rc != NVML_SUCCESS)
        return rc;
    c = &cached[h->index];
    pthread_mutex_lock(&lock);
    if (!c->have || now - c->at_ns >= FRESH_NS) {
        rc = ds__nvml_from_cu(cu->facts(dev, &c->facts));
        c->have = rc == NVML_SUCCESS;
        c->at_ns = now;
    }
    if (rc == NVML_SUCCESS)
        *out = c->facts;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Fact f of device h into *v.  out is the caller's output pointer, checked after the
 * handle as NVML does: NVML_ERROR_INVALID_ARGUMENT when NULL. */
static nvmlReturn_t fact(nvmlDevice_t h, enum ds_devfact f, const void *out, uint64_t *v)
{
    struct ds_devfacts d;
    nvmlReturn_t rc = ds__nvml_facts(h, &d);

    if (rc != NVML_SUCCESS)
        return rc;
    if (out == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!(d.served & (1ull << f))) {
        ds_debug("NVML: the server's device did not give fact %d: NVML_ERROR_NOT_SUPPORTED",
                 (int)f);
        return NVML_ERROR_NOT_SUPPORTED;
    }
    *v = d.v[f];
    return NVML_SUCCESS;
}

/* For a query of h the server never serves: the handle's and out's errors, else
 * NVML_ERROR_NOT_SUPPORTED. */
static nvmlReturn_t never(nvmlDevice_t h, const void *out, const char *what)
{
    uint64_t v;
    nvmlReturn_t rc = fact(h, DS_FACT_BRAND, out, &v);

    if (rc != NVML_SUCCESS)
        return rc;
    ds_debug("NVML: %s asked for what the server never reads: NVML_ERROR_NOT_SUPPORTED", what);
    return NVML_ERROR_NOT_SUPPORTED;
}

static nvmlReturn_t fact_u32(nvmlDevice_t h, enum ds_devfact f, unsigned *out)
{
    uint64_t v;
    nvmlReturn_t rc = fact(h, f, out, &v);

    if (rc == NVML_SUCCESS)
        *out = (unsigned)v;
    return rc;
}

static nvmlReturn_t fact_u64(nvmlDevice_t h, enum ds_devfact f, unsigned long long *out)
{
    uint64_t v;
    nvmlReturn_t rc = fact(h, f, out, &v);

    if (rc == NVML_SUCCESS)
        *out = v;
    return rc;
}

static nvmlReturn_t fact_enable(nvmlDevice_t h, enum ds_devfact f, nvmlEnableState_t *out)
{
    uint64_t v;
    nvmlReturn_t rc = fact(h, f, out, &v);

    if (rc == NVML_SUCCESS)
        *out = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return rc;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
    uint64_t v;
    nvmlReturn_t rc = fact(device, DS_FACT_BRAND, type, &v);

    if (rc == NVML_SUCCESS)
        *type = v < NVML_BRAND_COUNT ? (nvmlBrandType_t)v : NVML_BRAND_UNKNOWN;
    return rc;
}

/* The one sensor NVML has, the GPU die's. */
static nvmlReturn_t temperature(nvmlDevice_t h, nvmlTemperatureSensors_t sensor, unsigned *t)
{
    if (sensor != NVML_TEMPERATURE_GPU)
        return ds__nvml_cuda() == NULL ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
    return fact_u32(h, DS_FACT_TEMP_GPU, t);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int *temp)
{
    return temperature(device, sensorType, temp);
}

nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t *t)
{
    unsigned c;
    nvmlReturn_t rc;

    if (t != NULL && t->version != nvmlTemperature_v1)
        return ds__nvml_cuda() == NULL ? NVML_ERROR_UNINITIALIZED
                                       : NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (t == NULL)
        return fact_u32(device, DS_FACT_TEMP_GPU, NULL);
    if ((rc = temperature(device, t->sensorType, &c)) == NVML_SUCCESS)
        t->temperature = (int)c;
    return rc;
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                               nvmlTemperatureThresholds_t thresholdType,
                                               unsigned int *temp)
{
    switch (thresholdType) {
    case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
        return fact_u32(device, DS_FACT_TEMP_SHUTDOWN, temp);
    case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
        return fact_u32(device, DS_FACT_TEMP_SLOWDOWN, temp);
    case NVML_TEMPERATURE_THRESHOLD_MEM_MAX:
        return fact_u32(device, DS_FACT_TEMP_MEM_MAX, temp);
    case NVML_TEMPERATURE_THRESHOLD_GPU_MAX:
        return fact_u32(device, DS_FACT_TEMP_GPU_MAX, temp);
    default:
        return never(device, temp, __func__);
    }
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    return fact_u32(device, DS_FACT_POWER_USAGE, power);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
    return fact_u32(device, DS_FACT_POWER_LIMIT, limit);
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                      unsigned int *defaultLimit)
{
    return fact_u32(device, DS_FACT_POWER_DEFAULT_LIMIT, defaultLimit);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
    return fact_u32(device, DS_FACT_POWER_ENFORCED_LIMIT, limit);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int *minLimit,
                                                          unsigned int *maxLimit)
{
    unsigned lo;
    nvmlReturn_t rc = fact_u32(device, DS_FACT_POWER_MIN_LIMIT, minLimit != NULL ? &lo : NULL);

    if (rc == NVML_SUCCESS && (rc = fact_u32(device, DS_FACT_POWER_MAX_LIMIT, maxLimit)) ==
                                  NVML_SUCCESS)
        *minLimit = lo;
    return rc;
}

/* Power management is on where the device has a power limit to manage. */
nvmlReturn_t nvmlDeviceGetPowerManagementMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    unsigned limit;
    nvmlReturn_t rc = fact_u32(device, DS_FACT_POWER_LIMIT, mode != NULL ? &limit : NULL);

    if (rc == NVML_SUCCESS)
        *mode = NVML_FEATURE_ENABLED;
    return rc;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
    return fact_u64(device, DS_FACT_ENERGY, energy);
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed)
{
    return fact_u32(device, DS_FACT_FAN_SPEED, speed);
}

/* Clock `type` of the four facts from `first` (graphics, SM, memory, video in NVML's
 * order). */
static nvmlReturn_t clock_of(nvmlDevice_t h, enum ds_devfact first, nvmlClockType_t type,
                             unsigned *mhz)
{
    if ((unsigned)type > NVML_CLOCK_VIDEO)
        return ds__nvml_cuda() == NULL ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
    return fact_u32(h, first + (unsigned)type, mhz);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int *clock)
{
    return clock_of(device, DS_FACT_CLOCK_GRAPHICS, type, clock);
}

nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, nvmlClockType_t clockType,
                                            unsigned int *clockMHz)
{
    return clock_of(device, DS_FACT_APP_CLOCK_GRAPHICS, clockType, clockMHz);
}

nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device,
                                                   nvmlClockType_t clockType,
                                                   unsigned int *clockMHz)
{
    return clock_of(device, DS_FACT_DEFAULT_APP_CLOCK_GRAPHICS, clockType, clockMHz);
}

nvmlReturn_t ds__nvml_max_video_clock(nvmlDevice_t h, unsigned *mhz)
{
    return fact_u32(h, DS_FACT_MAX_CLOCK_VIDEO, mhz);
}

nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, nvmlClockType_t clockType,
                                nvmlClockId_t clockId, unsigned int *clockMHz)
{
    switch (clockId) {
    case NVML_CLOCK_ID_CURRENT:
        return clock_of(device, DS_FACT_CLOCK_GRAPHICS, clockType, clockMHz);
    case NVML_CLOCK_ID_APP_CLOCK_TARGET:
        return clock_of(device, DS_FACT_APP_CLOCK_GRAPHICS, clockType, clockMHz);
    case NVML_CLOCK_ID_APP_CLOCK_DEFAULT:
        return clock_of(device, DS_FACT_DEFAULT_APP_CLOCK_GRAPHICS, clockType, clockMHz);
    case NVML_CLOCK_ID_CUSTOMER_BOOST_MAX:
        return never(device, clockMHz, __func__);
    default:
        return ds__nvml_cuda() == NULL ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
    }
}

static nvmlReturn_t pstate(nvmlDevice_t device, nvmlPstates_t *pState)
{
    uint64_t v;
    nvmlReturn_t rc = fact(device, DS_FACT_PSTATE, pState, &v);

    if (rc == NVML_SUCCESS)
        *pState = v <= NVML_PSTATE_15 ? (nvmlPstates_t)v : NVML_PSTATE_UNKNOWN;
    return rc;
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t *pState)
{
    return pstate(device, pState);
}

nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t device, nvmlPstates_t *pState)
{
    return pstate(device, pState);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long *clocksEventReasons)
{
    return fact_u64(device, DS_FACT_CLOCKS_EVENT_REASONS, clocksEventReasons);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long *reasons)
{
    return fact_u64(device, DS_FACT_CLOCKS_EVENT_REASONS, reasons);
}

nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device,
                                                      unsigned long long *supported)
{
    return fact_u64(device, DS_FACT_SUPPORTED_CLOCKS_EVENT_REASONS, supported);
}

nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t device,
                                                         unsigned long long *supported)
{
    return fact_u64(device, DS_FACT_SUPPORTED_CLOCKS_EVENT_REASONS, supported);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *currLinkGen)
{
    return fact_u32(device, DS_FACT_PCIE_GEN, currLinkGen);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGen)
{
    return fact_u32(device, DS_FACT_PCIE_GEN_MAX, maxLinkGen);
}

nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device,
                                                   unsigned int *maxLinkGenDevice)
{
    return fact_u32(device, DS_FACT_PCIE_GEN_GPU_MAX, maxLinkGenDevice);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *currLinkWidth)
{
    return fact_u32(device, DS_FACT_PCIE_WIDTH, currLinkWidth);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *maxLinkWidth)
{
    return fact_u32(device, DS_FACT_PCIE_WIDTH_MAX, maxLinkWidth);
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    return fact_enable(device, DS_FACT_PERSISTENCE, mode);
}

nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, nvmlEnableState_t *display)
{
    return fact_enable(device, DS_FACT_DISPLAY_MODE, display);
}

nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device, nvmlEnableState_t *isActive)
{
    return fact_enable(device, DS_FACT_DISPLAY_ACTIVE, isActive);
}

nvmlReturn_t nvmlDeviceGetBoardId(nvmlDevice_t device, unsigned int *boardId)
{
    return fact_u32(device, DS_FACT_BOARD_ID, boardId);
}

nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device,
                                             nvmlGpuVirtualizationMode_t *mode)
{
    unsigned v;
    nvmlReturn_t rc = fact_u32(device, DS_FACT_VIRTUALIZATION_MODE, &v);

    if (rc == NVML_SUCCESS)
        *mode = (nvmlGpuVirtualizationMode_t)v;
    return rc;
}

/* Plain nvidia-smi checks the infoROM and exits 3 when it cannot tell. */
nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t device)
{
    unsigned valid;
    nvmlReturn_t rc = fact_u32(device, DS_FACT_INFOROM_VALID, &valid);

    if (rc != NVML_SUCCESS)
        return rc;
    return valid ? NVML_SUCCESS : NVML_ERROR_CORRUPTED_INFOROM;
}

nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device, unsigned int *multiGpuBool)
{
    return fact_u32(device, DS_FACT_MULTI_GPU_BOARD, multiGpuBool);
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node)
{
    return fact_u32(device, DS_FACT_NUMA_NODE, node);
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType,
                                         unsigned long long *eccCounts)
{
    int corrected = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED;

    if ((errorType != NVML_MEMORY_ERROR_TYPE_CORRECTED &&
         errorType != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) ||
        (counterType != NVML_VOLATILE_ECC && counterType != NVML_AGGREGATE_ECC))
        return ds__nvml_cuda() == NULL ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
    if (counterType == NVML_VOLATILE_ECC)
        return fact_u64(device,
                        corrected ? DS_FACT_ECC_CORRECTED_VOLATILE
                                  : DS_FACT_ECC_UNCORRECTED_VOLATILE,
                        eccCounts);
    return fact_u64(device,
                    corrected ? DS_FACT_ECC_CORRECTED_AGGREGATE
                              : DS_FACT_ECC_UNCORRECTED_AGGREGATE,
                    eccCounts);
}

/* Text t of device h into buf of len bytes. */
static nvmlReturn_t text(nvmlDevice_t h, enum ds_devfact_text t, char *buf, unsigned len)
{
    struct ds_devfacts d;
    nvmlReturn_t rc = ds__nvml_facts(h, &d);

    if (rc != NVML_SUCCESS)
        return rc;
    if (buf == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (d.text[t][0] == '\0') {
        ds_debug("NVML: the server's device did not give text fact %d: "
                 "NVML_ERROR_NOT_SUPPORTED",
                 (int)t);
        return NVML_ERROR_NOT_SUPPORTED;
    }
    return ds__nvml_string(buf, len, d.text[t]);
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char *version, unsigned int length)
{
    return text(device, DS_TEXT_VBIOS, version, length);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
    return text(device, DS_TEXT_SERIAL, serial, length);
}

nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char *partNumber,
                                          unsigned int length)
{
    return text(device, DS_TEXT_PART_NUMBER, partNumber, length);
}

/* The driver's versions are the server's driver's, as its device reported them; a
 * process that sees no device has no server to ask. */
static nvmlReturn_t system_text(enum ds_devfact_text t, char *buf, unsigned len)
{
    nvmlDevice_t h = ds__nvml_handle(0);

    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (buf == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    return h == NULL ? NVML_ERROR_NOT_SUPPORTED : text(h, t, buf, len);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    return system_text(DS_TEXT_DRIVER_VERSION, version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    return system_text(DS_TEXT_NVML_VERSION, version, length);
}
