#include "ds_error.h"

#include <cuda.h>

const char *ds_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define DS_ERROR_TEXT(name, val, text) \
    case name:                         \
        return text;
        DS_ERRORS(DS_ERROR_TEXT)
#undef DS_ERROR_TEXT
    }
    return err <= DS_ECU(1) ? "device error" : "unknown error";
}

int ds_error_to_cu(int err)
{
    switch (err) {
    case 0:
        return CUDA_SUCCESS;
    case DS_EINVAL:
    case DS_ERANGE:
        return CUDA_ERROR_INVALID_VALUE;
    case DS_ENOMEM:
        return CUDA_ERROR_OUT_OF_MEMORY;
    case DS_EHANDLE:
        return CUDA_ERROR_INVALID_HANDLE;
    case DS_ENOTREADY:
        return CUDA_ERROR_NOT_READY;
    case DS_EBUSY:
        return CUDA_ERROR_CONTEXT_ALREADY_IN_USE;
    case DS_ENOTSUP:
        return CUDA_ERROR_NOT_SUPPORTED;
    case DS_EIO:
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    case DS_EPERM:
        return CUDA_ERROR_NOT_PERMITTED;
    default:
        if (err <= DS_ECU(1))
            return DS_ECU(0) - err;
        return CUDA_ERROR_UNKNOWN;
    }
}
