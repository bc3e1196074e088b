/*
 * Event sets, device and system: the caller's own bookkeeping, answered as NVML answers a
 * device where nothing happens.  The server does not forward the device's events (Xid
 * errors, ECC errors, PState changes) to tenants, so none ever comes: a wait lasts its
 * timeout and ends with NVML_ERROR_TIMEOUT, as NVML's does when no event arrives.
 *
 * nvmlDeviceGetSupportedEventTypes reports what NVML documents for a datacenter GPU on
 * Linux: Xid critical errors and PState changes, and single and double bit ECC errors
 * where ECC is on.  Health checkers (the Kubernetes device plugin, DCGM's users)
 * register only the supported types and take a device that supports none for one too
 * old to watch; registering and never hearing keeps them content, which is the truth as
 * far as the tenant can know it.
 */
#include "nvml_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define DEVICE_EVENTS (nvmlEventTypeXidCriticalError | nvmlEventTypePState)
#define ECC_EVENTS (nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError)
#define SYSTEM_EVENTS (nvmlSystemEventTypeGpuDriverUnbind | nvmlSystemEventTypeGpuDriverBind)

/* A set of either kind: the types registered, and the next set made. */
struct set {
    unsigned long long types;
    int system;
    struct set *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct set *sets;

static struct set *make(int system)
{
    struct set *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->system = system;
    pthread_mutex_lock(&lock);
    s->next = sets;
    sets = s;
    pthread_mutex_unlock(&lock);
    return s;
}

/* Whether p is a live set of the kind asked; under lock. */
static struct set **find(const void *p, int system)
{
    for (struct set **at = &sets; *at != NULL; at = &(*at)->next)
        if (*at == p && (*at)->system == system)
            return at;
    return NULL;
}

static nvmlReturn_t drop(const void *p, int system)
{
    struct set **at, *s = NULL;

    pthread_mutex_lock(&lock);
    if ((at = find(p, system)) != NULL) {
        s = *at;
        *at = s->next;
    }
    pthread_mutex_unlock(&lock);
    free(s);
    return s != NULL ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

static nvmlReturn_t add_types(const void *p, int system, unsigned long long types)
{
    struct set **at;

    pthread_mutex_lock(&lock);
    if ((at = find(p, system)) != NULL)
        (*at)->types |= types;
    pthread_mutex_unlock(&lock);
    return at != NULL ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

static int live(const void *p, int system)
{
    int is;

    pthread_mutex_lock(&lock);
    is = find(p, system) != NULL;
    pthread_mutex_unlock(&lock);
    return is;
}

/* The whole timeout, signals or not: a caller that loops on TIMEOUT must not spin. */
static nvmlReturn_t wait_nothing(unsigned ms)
{
    struct timespec left = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
    return NVML_ERROR_TIMEOUT;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    struct set *s;

    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (set == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((s = make(0)) == NULL)
        return NVML_ERROR_MEMORY;
    *set = (nvmlEventSet_t)s;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    return drop(set, 0);
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    nvmlEnableState_t ecc, pending;
    nvmlReturn_t rc = nvmlDeviceGetEccMode(device, &ecc, &pending);

    if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED)
        return rc;
    if (eventTypes == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = DEVICE_EVENTS;
    if (rc == NVML_SUCCESS && ecc == NVML_FEATURE_ENABLED)
        *eventTypes |= ECC_EVENTS;
    return NVML_SUCCESS;
}

/* As NVML: types outside nvml.h's are invalid; known types the device does not support
 * are refused, and none of the asked types is registered then. */
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set)
{
    unsigned long long supported;
    nvmlReturn_t rc = nvmlDeviceGetSupportedEventTypes(device, &supported);

    if (rc != NVML_SUCCESS)
        return rc;
    if ((eventTypes & ~(unsigned long long)nvmlEventTypeAll) != 0 || !live(set, 0))
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((eventTypes & ~supported) != 0)
        return NVML_ERROR_NOT_SUPPORTED;
    return add_types(set, 0, eventTypes);
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (data == NULL || !live(set, 0))
        return NVML_ERROR_INVALID_ARGUMENT;
    return wait_nothing(timeoutms);
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    return nvmlEventSetWait_v2(set, data, timeoutms);
}

/* The version of a request struct: NVML_ERROR_INVALID_ARGUMENT for none,
 * NVML_ERROR_ARGUMENT_VERSION_MISMATCH for another. */
static nvmlReturn_t request(const unsigned *version, unsigned want)
{
    if (ds__nvml_cuda() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (version == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    return *version == want ? NVML_SUCCESS : NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

nvmlReturn_t nvmlSystemEventSetCreate(nvmlSystemEventSetCreateRequest_t *r)
{
    nvmlReturn_t rc = request(r != NULL ? &r->version : NULL, nvmlSystemEventSetCreateRequest_v1);
    struct set *s;

    if (rc != NVML_SUCCESS)
        return rc;
    if ((s = make(1)) == NULL)
        return NVML_ERROR_MEMORY;
    r->set = (nvmlSystemEventSet_t)s;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemEventSetFree(nvmlSystemEventSetFreeRequest_t *r)
{
    nvmlReturn_t rc = request(r != NULL ? &r->version : NULL, nvmlSystemEventSetFreeRequest_v1);

    return rc != NVML_SUCCESS ? rc : drop(r->set, 1);
}

nvmlReturn_t nvmlSystemRegisterEvents(nvmlSystemRegisterEventRequest_t *r)
{
    nvmlReturn_t rc = request(r != NULL ? &r->version : NULL, nvmlSystemRegisterEventRequest_v1);

    if (rc != NVML_SUCCESS)
        return rc;
    if ((r->eventTypes & ~(unsigned long long)SYSTEM_EVENTS) != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    return add_types(r->set, 1, r->eventTypes);
}

nvmlReturn_t nvmlSystemEventSetWait(nvmlSystemEventSetWaitRequest_t *r)
{
    nvmlReturn_t rc = request(r != NULL ? &r->version : NULL, nvmlSystemEventSetWaitRequest_v1);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!live(r->set, 1) || (r->dataSize > 0 && r->data == NULL))
        return NVML_ERROR_INVALID_ARGUMENT;
    r->numEvent = 0;
    return wait_nothing(r->timeoutms);
}
