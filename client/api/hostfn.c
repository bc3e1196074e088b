/*
 * Host functions on a stream (cuLaunchHostFunc, cuStreamAddCallback) run in the tenant's
 * own process, after the stream's earlier work and before its later work, as CUDA orders
 * them.  Here by the plainest means: the stream is drained, the function runs on the
 * calling thread, and the call returns after it, so work issued later follows it.
 *
 * What differs from CUDA: the caller waits for the stream and the function (CUDA returns
 * at once and runs the function on a thread of its own), so a function that waits for
 * something its caller does only after enqueueing it would never return; and a function
 * may call CUDA, which CUDA forbids.  On a stream being captured, cuLaunchHostFunc
 * becomes a host node of the captured graph (server/exec/ops/graph/ops_gcapture.c), and
 * cuStreamAddCallback is refused, as CUDA refuses it (ds__capture_refuse_host_work).
 */
#include "cuda_api.h"
#include "capture.h"
#include "rpc.h"

CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
    CUresult rc;
    int taken;

    DS_NEED_INIT();
    if (fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__capture_host_fn(s, fn, data, &taken)) != CUDA_SUCCESS || taken)
        return rc;
    if ((rc = cuStreamSynchronize(s)) != CUDA_SUCCESS)
        return rc;
    fn(data);
    return CUDA_SUCCESS;
}

/* The callback learns the stream's state, an error included, as CUDA tells it. */
CUresult cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *data, unsigned int flags)
{
    CUresult rc;

    DS_NEED_INIT();
    if (cb == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__capture_refuse_host_work(s)) != CUDA_SUCCESS)
        return rc;
    rc = cuStreamSynchronize(s);
    if (rc == CUDA_ERROR_INVALID_HANDLE)
        return rc;
    cb(s, rc, data);
    return CUDA_SUCCESS;
}
