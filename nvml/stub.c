#include "stub.h"

#include "ds_log.h"

#include <nvml.h>

int ds__nvml_unsupported(const char *name, atomic_int *once)
{
    if (atomic_exchange(once, 1) == 0)
        ds_debug("%s is not served by detshare's NVML: returning NVML_ERROR_NOT_SUPPORTED",
                 name);
    return NVML_ERROR_NOT_SUPPORTED;
}

int ds__nvml_denied(const char *name, atomic_int *once)
{
    if (atomic_exchange(once, 1) == 0)
        ds_warn("%s: a tenant may not change the device: returning NVML_ERROR_NO_PERMISSION",
                name);
    return NVML_ERROR_NO_PERMISSION;
}
