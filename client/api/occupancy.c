/*
 * cuOccupancyMaxPotentialBlockSize(WithFlags).  The caller's callback for dynamic shared
 * memory is code of the tenant's, so the search runs here, as the driver documents it:
 * every block size from the largest the function allows down to one warp, in steps of a
 * warp, each asked of the executor's occupancy calculator
 * (cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags); the most resident threads win,
 * the larger block on a tie (fewer blocks for the same warps).
 */
#include "cuda_api.h"

#include "rpc.h"

struct limits {
    int block_max;  /* threads per block: the function's, capped by the caller's limit */
    int warp;
    int sm_threads; /* resident threads per multiprocessor */
    int sms;
};

static CUresult limits_of(CUfunction fn, int block_limit, struct limits *l)
{
    CUdevice dev;
    CUresult rc = cuFuncGetAttribute(&l->block_max, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);

    if (rc == CUDA_SUCCESS)
        rc = cuCtxGetDevice(&dev);
    if (rc == CUDA_SUCCESS)
        rc = cuDeviceGetAttribute(&l->warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev);
    if (rc == CUDA_SUCCESS)
        rc = cuDeviceGetAttribute(&l->sm_threads,
                                  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
    if (rc == CUDA_SUCCESS)
        rc = cuDeviceGetAttribute(&l->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    if (rc == CUDA_SUCCESS && (l->warp <= 0 || l->block_max <= 0))
        rc = CUDA_ERROR_UNKNOWN;
    if (rc == CUDA_SUCCESS && block_limit > 0 && block_limit < l->block_max)
        l->block_max = block_limit;
    return rc;
}

CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *min_grid, int *block_size,
                                                   CUfunction fn,
                                                   CUoccupancyB2DSize smem_of_block,
                                                   size_t smem, int block_limit,
                                                   unsigned int flags)
{
    int best_blocks = 0, best_size = 0, best_threads = 0;
    struct limits l;
    CUresult rc;

    DS_NEED_INIT();
    if (min_grid == NULL || block_size == NULL || block_limit < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = limits_of(fn, block_limit, &l)) != CUDA_SUCCESS)
        return rc;
    /* From the largest multiple of a warp that covers the limit, each size capped by it. */
    for (int top = (l.block_max + l.warp - 1) / l.warp * l.warp; top > 0; top -= l.warp) {
        int size = top < l.block_max ? top : l.block_max, blocks;
        size_t dyn = smem_of_block != NULL ? smem_of_block(size) : smem;

        rc = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, fn, size, dyn, flags);
        if (rc != CUDA_SUCCESS)
            return rc;
        if (blocks * size > best_threads) {
            best_threads = blocks * size;
            best_blocks = blocks;
            best_size = size;
        }
        if (best_threads == l.sm_threads)
            break;
    }
    *min_grid = best_blocks * l.sms;
    *block_size = best_size;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block_size, CUfunction fn,
                                          CUoccupancyB2DSize smem_of_block, size_t smem,
                                          int block_limit)
{
    return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, fn, smem_of_block,
                                                     smem, block_limit, 0);
}
