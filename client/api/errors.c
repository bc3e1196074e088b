/* cuGetErrorName / cuGetErrorString, from the CUresult list of the CUDA headers
 * (errnames.h is generated from cuda.h at build time by gen-errnames.sh). */
#include "cuda_api.h"
#include <cuda.h>
#include <stddef.h>

struct err_name {
    int code;
    const char *name, *text;
};

static const struct err_name names[] = {
#include "errnames.h"
};

static const struct err_name *find(CUresult e)
{
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].code == (int)e)
            return &names[i];
    return NULL;
}

CUresult cuGetErrorName(CUresult e, const char **out)
{
    const struct err_name *n = find(e);

    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *out = n ? n->name : NULL;
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult e, const char **out)
{
    const struct err_name *n = find(e);

    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *out = n ? n->text : NULL;
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
