/* cuCtxRecordEvent and cuCtxWaitEvent: an event over all of a context's streams, in
 * stream order, batched like an event record (server/exec/ops_ctxevent.c). */
#include "cuda_api.h"

#include "ctx.h"
#include "rpc.h"

static CUresult ctx_event(CUcontext ctx, CUevent e, int wait)
{
    ds_ctx_event_args a = { .event = (ds_handle)(uintptr_t)e, .wait = wait };
    CUresult rc;

    DS_NEED_INIT();
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ctx != NULL)
        a.ctx = (ds_handle)(uintptr_t)ctx;
    else if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    return ds_rpc_ctx_event(&a);
}

CUresult cuCtxRecordEvent(CUcontext ctx, CUevent e)
{
    return ctx_event(ctx, e, 0);
}

CUresult cuCtxWaitEvent(CUcontext ctx, CUevent e)
{
    return ctx_event(ctx, e, 1);
}
