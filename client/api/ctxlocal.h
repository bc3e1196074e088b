/*
 * Context-local storage: values cudart keeps per context under its own keys, with a
 * destructor run when the context ends.  cudart reaches it through an export table
 * (compat/export.c, CONTEXT_LOCAL_STORAGE_INTERFACE_V0301); its entries go when their
 * context ends (ds__ctx_on_end).  Thread-safe.
 */
#ifndef DS_CTXLOCAL_H
#define DS_CTXLOCAL_H

#include <cuda.h>
#include <stdint.h>

typedef void (*ds_ctxlocal_dtor)(CUcontext ctx, void *key, void *value);

/* For ctx (NULL: the calling thread's current context), set key's value and destructor.
 * Returns CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, or ds__ctx_current's error. */
CUresult ds__ctxlocal_put(CUcontext ctx, void *key, void *value, ds_ctxlocal_dtor dtor);

/* Forget key's value without calling its destructor, as the real driver appears to.
 * Returns CUDA_SUCCESS, CUDA_ERROR_INVALID_HANDLE when it has none, or ds__ctx_current's
 * error. */
CUresult ds__ctxlocal_del(CUcontext ctx, void *key);

/* Key's value into *value (when not NULL).  Returns as ds__ctxlocal_del. */
CUresult ds__ctxlocal_get(void **value, CUcontext ctx, void *key);

#endif
