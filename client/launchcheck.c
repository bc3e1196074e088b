/*
 * A launch's synchronous errors.  The driver checks a launch's shape against the
 * device and the kernel before cuLaunchKernel returns; here the same checks run before
 * the launch is queued, on what the client already holds: the device view's attributes
 * (rpc.h) and the kernel's, which come with the function (module.h).  The executor
 * checks every launch again, as it checks everything a tenant sends.
 *
 * docs/api-coverage.md lists the checks and the errors they give.
 */
#include "launchcheck.h"

#include "rpc.h"

#include <string.h>

/* The largest cluster an sm_90 or later device runs: 8 blocks (portable), 16 for a
 * kernel that allows non-portable sizes. */
#define CLUSTER_PORTABLE 8u
#define CLUSTER_NON_PORTABLE 16u

_Static_assert(sizeof(CUlaunchAttributeValue) == sizeof(((ds_launch_attr *)0)->value),
               "a launch attribute's value travels whole");

/* Device attribute a, or -1 when the device view does not have it. */
static long long dev_attr(CUdevice_attribute a)
{
    const ds_device_desc *d = ds__rpc_device();

    if (d == NULL || (unsigned)a >= d->attrs.attrs_len)
        return -1;
    return d->attrs.attrs_val[a];
}

/* Attribute a of f, or -1 when it cannot be learnt (the check it bounds is then left to
 * the executor). */
static long long func_attr(struct ds_cfunc *f, CUfunction_attribute a)
{
    int v;

    return ds__module_attr(f, a, &v) == CUDA_SUCCESS ? v : -1;
}

/* Over a known limit; an unknown limit (-1) bounds nothing. */
static int over(unsigned long long v, long long limit)
{
    return limit >= 0 && v > (unsigned long long)limit;
}

static CUresult check_block(struct ds_cfunc *f, const unsigned b[3])
{
    unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];

    if (threads == 0 || over(b[0], dev_attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)) ||
        over(b[1], dev_attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)) ||
        over(b[2], dev_attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)) ||
        over(threads, dev_attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)))
        return CUDA_ERROR_INVALID_VALUE;
    /* The kernel's own limit: what its registers allow, which the driver reports as
     * out of resources (an H200, run 117: 1024 threads of a 128-register kernel gave
     * 701), or its launch bounds, an invalid value. */
    if (over(threads * (unsigned long long)func_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS),
             dev_attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)) &&
        func_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS) > 0)
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    return over(threads, func_attr(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK))
               ? CUDA_ERROR_INVALID_VALUE
               : CUDA_SUCCESS;
}

static CUresult check_grid(const unsigned g[3])
{
    if (g[0] == 0 || g[1] == 0 || g[2] == 0 ||
        over(g[0], dev_attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)) ||
        over(g[1], dev_attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)) ||
        over(g[2], dev_attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Dynamic shared memory is bounded by the kernel's opt-in attribute (48 KiB less its
 * static shared memory until cuFuncSetAttribute raises it), and with the static part by
 * what a block may have at all. */
static CUresult check_smem(struct ds_cfunc *f, unsigned smem)
{
    long long stat = func_attr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);

    if (over(smem, func_attr(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)))
        return CUDA_ERROR_INVALID_VALUE;
    if (stat >= 0 && over((unsigned long long)stat + smem,
                          dev_attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* The launch's cluster dimension attribute in c; 0 when it gives none. */
static int launch_cluster(const struct ds_launch_shape *s, unsigned c[3])
{
    CUlaunchAttributeValue v;

    for (unsigned i = 0; i < s->nattrs; i++) {
        if (s->attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            continue;
        memcpy(&v, s->attrs[i].value, sizeof(v));
        c[0] = v.clusterDim.x;
        c[1] = v.clusterDim.y;
        c[2] = v.clusterDim.z;
        return 1;
    }
    return 0;
}

/* The cluster is the kernel's compiled one (__cluster_dims__) or the launch's; a launch
 * that names another than the compiled one, or none where the kernel must have one, is
 * refused.  The grid is counted in blocks and must be whole clusters. */
static CUresult check_cluster(struct ds_cfunc *f, const struct ds_launch_shape *s)
{
    long long w = func_attr(f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH);
    long long h = func_attr(f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT);
    long long d = func_attr(f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH);
    unsigned c[3];
    int given = launch_cluster(s, c);
    unsigned long long size;

    if (w > 0 && h > 0 && d > 0) {
        if (given && (c[0] != w || c[1] != h || c[2] != d))
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        c[0] = (unsigned)w;
        c[1] = (unsigned)h;
        c[2] = (unsigned)d;
        given = 1;
    }
    if (!given)
        return func_attr(f, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET) > 0
                   ? CUDA_ERROR_INVALID_CLUSTER_SIZE
                   : CUDA_SUCCESS;
    /* A zero dimension is the driver's to judge. */
    if (c[0] == 0 || c[1] == 0 || c[2] == 0)
        return CUDA_SUCCESS;
    if (s->grid[0] % c[0] != 0 || s->grid[1] % c[1] != 0 || s->grid[2] % c[2] != 0)
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    size = (unsigned long long)c[0] * c[1] * c[2];
    if (func_attr(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) > 0)
        return size > CLUSTER_NON_PORTABLE ? CUDA_ERROR_INVALID_CLUSTER_SIZE : CUDA_SUCCESS;
    return size > CLUSTER_PORTABLE ? CUDA_ERROR_INVALID_CLUSTER_SIZE : CUDA_SUCCESS;
}

CUresult ds__launchcheck(struct ds_cfunc *f, const struct ds_launch_shape *s)
{
    CUresult rc;

    if ((rc = check_block(f, s->block)) != CUDA_SUCCESS ||
        (rc = check_grid(s->grid)) != CUDA_SUCCESS ||
        (rc = check_smem(f, s->smem)) != CUDA_SUCCESS)
        return rc;
    return check_cluster(f, s);
}
