#include "cuda_api.h"
#include "unsupported.h"

#include "ds_log.h"

int ds__unsupported(const char *name, atomic_int *once)
{
    if (atomic_exchange(once, 1) == 0)
        ds_warn("%s is not supported by detshare yet: returning CUDA_ERROR_NOT_SUPPORTED", name);
    return CUDA_ERROR_NOT_SUPPORTED;
}
