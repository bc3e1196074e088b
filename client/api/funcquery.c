/* What a function or kernel handle tells about itself: answered from what the client
 * kept when it handed the handle out (module.h), with no round trip. */
#include "cuda_api.h"

#include "module.h"
#include "rpc.h"

static CUresult name_of(const char **name, const void *fn)
{
    struct ds_cfunc *f = ds__module_func(fn);

    DS_NEED_INIT();
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char **name, CUfunction fn)
{
    return name_of(name, fn);
}

CUresult cuKernelGetName(const char **name, CUkernel k)
{
    return name_of(name, k);
}

/* A library is its module here (module.c). */
static CUresult module_of(uint64_t *out, const void *fn)
{
    struct ds_cfunc *f = ds__module_func(fn);

    DS_NEED_INIT();
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    *out = f->module;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetModule(CUmodule *mod, CUfunction fn)
{
    uint64_t m = 0;
    CUresult rc = module_of(mod ? &m : NULL, fn);

    if (rc == CUDA_SUCCESS)
        *mod = (CUmodule)(uintptr_t)m;
    return rc;
}

CUresult cuKernelGetLibrary(CUlibrary *lib, CUkernel k)
{
    uint64_t m = 0;
    CUresult rc = module_of(lib ? &m : NULL, k);

    if (rc == CUDA_SUCCESS)
        *lib = (CUlibrary)(uintptr_t)m;
    return rc;
}

/* The executor loads every image whole, so a function handed out is always loaded. */
CUresult cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction fn)
{
    DS_NEED_INIT();
    if (state == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__module_func(fn) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    *state = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
}

CUresult cuFuncLoad(CUfunction fn)
{
    DS_NEED_INIT();
    return ds__module_func(fn) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
