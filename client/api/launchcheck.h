/* The errors a launch gets from the driver before it returns, found in the client: a
 * launch leaves as a batched call, and without these checks its error would come back
 * only with the next call that waits for the executor. */
#ifndef DS_LAUNCHCHECK_H
#define DS_LAUNCHCHECK_H

#include "detshare.h"
#include "module.h"

#include <cuda.h>

/* The shape of one launch of f, as cuLaunchKernel(Ex) was given it; attrs are the
 * launch's attributes (with those of its stream), nattrs of them. */
struct ds_launch_shape {
    unsigned grid[3];
    unsigned block[3];
    unsigned smem;
    const ds_launch_attr *attrs;
    unsigned nattrs;
};

/* CUDA_SUCCESS when the driver would accept the launch of f with shape s as far as the
 * client can tell, else the CUresult the driver returns from the launch itself:
 * CUDA_ERROR_INVALID_VALUE for a block, grid or shared-memory size out of the device's
 * or the kernel's limits, CUDA_ERROR_INVALID_CLUSTER_SIZE for a cluster that does not
 * divide the grid or is larger than the kernel may have.  A limit the client cannot
 * learn is left to the executor, which checks every launch again. */
CUresult ds__launchcheck(struct ds_cfunc *f, const struct ds_launch_shape *s);

#endif
