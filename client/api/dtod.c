/*
 * A copy between two addresses of one server's device (dtod.h).
 */
#include "cuda_api.h"
#include "dtod.h"

#include "rpc.h"
#include "stream.h"

CUresult ds__dtod_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int wait)
{
    ds_dtod_args a = { .dst = dst, .src = src, .size = n, .stream = ds__stream_of(s) };
    ds_void_res r;

    DS_NEED_INIT();
    if (n == 0)
        return CUDA_SUCCESS;
    return wait ? ds_rpc_memcpy_dtod(&a, &r) : ds_rpc_memcpy_dtod_async(&a);
}
