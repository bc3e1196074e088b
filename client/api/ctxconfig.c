/*
 * Context and function preferences that change no result: the L1/shared-memory split a
 * context prefers and the shared-memory bank size.  The driver may ignore both (an H100
 * has one bank size); the client keeps the context's cache preference so that it reads
 * back as set, as the driver's does, and forwards neither: the device's own choice of
 * carveout stands, which is also what keeps a kernel's launch the tenant's own.
 */
#include "cuda_api.h"

#include "ctx.h"
#include "module.h"
#include "rpc.h"
#include "stream.h"

#include <pthread.h>

#define CONFIGS 64 /* contexts whose preference differs from the default */

static struct {
    pthread_mutex_t lock;
    struct {
        uint64_t ctx;
        CUfunc_cache config;
    } e[CONFIGS];
    unsigned n;
} prefs = { .lock = PTHREAD_MUTEX_INITIALIZER };

CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
    uint64_t ctx;
    unsigned i;
    CUresult rc;

    DS_NEED_INIT();
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&ctx)) != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&prefs.lock);
    for (i = 0; i < prefs.n && prefs.e[i].ctx != ctx; i++)
        ;
    if (i == prefs.n && i < CONFIGS)
        prefs.e[prefs.n++].ctx = ctx;
    if (i < CONFIGS)
        prefs.e[i].config = config;
    pthread_mutex_unlock(&prefs.lock);
    return i < CONFIGS ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuCtxGetCacheConfig(CUfunc_cache *config)
{
    uint64_t ctx;
    CUresult rc;

    DS_NEED_INIT();
    if (config == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&ctx)) != CUDA_SUCCESS)
        return rc;
    *config = CU_FUNC_CACHE_PREFER_NONE;
    pthread_mutex_lock(&prefs.lock);
    for (unsigned i = 0; i < prefs.n; i++)
        if (prefs.e[i].ctx == ctx)
            *config = prefs.e[i].config;
    pthread_mutex_unlock(&prefs.lock);
    return CUDA_SUCCESS;
}

/* Banks are four bytes wide on every device CUDA 13 supports; a request for another
 * size is accepted and has no effect, as with the driver. */
CUresult cuCtxGetSharedMemConfig(CUsharedconfig *config)
{
    uint64_t ctx;
    CUresult rc;

    DS_NEED_INIT();
    if (config == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&ctx)) != CUDA_SUCCESS)
        return rc;
    *config = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetSharedMemConfig(CUsharedconfig config)
{
    uint64_t ctx;

    DS_NEED_INIT();
    if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
        return CUDA_ERROR_INVALID_VALUE;
    return ds__ctx_current(&ctx);
}

CUresult cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig config)
{
    DS_NEED_INIT();
    if (ds__module_func(f) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* The stream's context knows its device; a tenant has one. */
CUresult cuStreamGetDevice(CUstream s, CUdevice *dev)
{
    CUcontext ctx;
    CUresult rc;

    DS_NEED_INIT();
    if (dev == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = cuStreamGetCtx(s, &ctx)) == CUDA_SUCCESS)
        *dev = 0;
    return rc;
}
