/*
 * cuProfilerStart/Stop (cudaProfiler.h, what cudaProfilerStart calls).  The tenant's work
 * runs in the server's executor, where no profiler of the tenant's is attached, so they
 * change nothing: what the driver does when no profiler is attached.  They exist because
 * programs that load the driver with dlopen look them up and refuse to start without
 * them.
 */
#include "cuda_api.h"
#include "rpc.h"

CUresult cuProfilerStart(void)
{
    DS_NEED_INIT();
    return CUDA_SUCCESS;
}

CUresult cuProfilerStop(void)
{
    DS_NEED_INIT();
    return CUDA_SUCCESS;
}
