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

/* Attribute a of device d, or -1 when the device view does not have it. */
static long long dev_attr(const ds_device_desc *d, CUdevice_attribute a)
{
    if (d == NULL || (unsigned)a >= d->attrs.attrs_len)
        return -1;
    return d->attrs.attrs_val[a];
}

/* The kernel's attributes a launch is checked against, read in one go (module.h). */
enum { A_THREADS, A_REGS, A_DYN, A_STATIC, A_CW, A_CH, A_CD, A_MUST, A_NONPORT, A_COUNT };

static const int wanted[A_COUNT] = {
    [A_THREADS] = CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    [A_REGS] = CU_FUNC_ATTRIBUTE_NUM_REGS,
    [A_DYN] = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    [A_STATIC] = CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
    [A_CW] = CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
    [A_CH] = CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
    [A_CD] = CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
    [A_MUST] = CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
    [A_NONPORT] = CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
};

/* Over a known limit; an unknown limit (-1) bounds nothing. */
static int over(unsigned long long v, long long limit)
{
    return limit >= 0 && v > (unsigned long long)limit;
}

static CUresult check_block(const ds_device_desc *d, const long long *fa, const unsigned b[3])
{
    unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];

    if (threads == 0 || over(b[0], dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)) ||
        over(b[1], dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)) ||
        over(b[2], dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)) ||
        over(threads, dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)))
        return CUDA_ERROR_INVALID_VALUE;
    /* The kernel's own limit: what its registers allow, which the driver reports as
     * out of resources (an H200, run 117: 1024 threads of a 128-register kernel gave
     * 701), or its launch bounds, an invalid value. */
    if (fa[A_REGS] > 0 && over(threads * (unsigned long long)fa[A_REGS],
                               dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)))
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    return over(threads, fa[A_THREADS])
               ? CUDA_ERROR_INVALID_VALUE
               : CUDA_SUCCESS;
}

static CUresult check_grid(const ds_device_desc *d, const unsigned g[3])
{
    if (g[0] == 0 || g[1] == 0 || g[2] == 0 ||
        over(g[0], dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)) ||
        over(g[1], dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)) ||
        over(g[2], dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Dynamic shared memory is bounded by the kernel's opt-in attribute (48 KiB less its
 * static shared memory until cuFuncSetAttribute raises it), and with the static part by
 * what a block may have at all. */
static CUresult check_smem(const ds_device_desc *d, const long long *fa, unsigned smem)
{
    long long stat = fa[A_STATIC];

    if (over(smem, fa[A_DYN]))
        return CUDA_ERROR_INVALID_VALUE;
    if (stat >= 0 && over((unsigned long long)stat + smem,
                          dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)))
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
static CUresult check_cluster(const long long *fa, const struct ds_launch_shape *s)
{
    long long w = fa[A_CW], h = fa[A_CH], d = fa[A_CD];
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
        return fa[A_MUST] > 0
                   ? CUDA_ERROR_INVALID_CLUSTER_SIZE
                   : CUDA_SUCCESS;
    /* A zero dimension is the driver's to judge. */
    if (c[0] == 0 || c[1] == 0 || c[2] == 0)
        return CUDA_SUCCESS;
    if (s->grid[0] % c[0] != 0 || s->grid[1] % c[1] != 0 || s->grid[2] % c[2] != 0)
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    size = (unsigned long long)c[0] * c[1] * c[2];
    if (fa[A_NONPORT] > 0)
        return size > CLUSTER_NON_PORTABLE ? CUDA_ERROR_INVALID_CLUSTER_SIZE : CUDA_SUCCESS;
    return size > CLUSTER_PORTABLE ? CUDA_ERROR_INVALID_CLUSTER_SIZE : CUDA_SUCCESS;
}

CUresult ds__launchcheck(struct ds_cfunc *f, const struct ds_launch_shape *s)
{
    /* The function's device, which a launch runs on whatever context is current. */
    const ds_device_desc *d = ds__rpc_device(ds__route_dev_of(f->handle));
    long long fa[A_COUNT];
    CUresult rc;

    ds__module_attrs(f, wanted, A_COUNT, fa);
    if ((rc = check_block(d, fa, s->block)) != CUDA_SUCCESS ||
        (rc = check_grid(d, s->grid)) != CUDA_SUCCESS ||
        (rc = check_smem(d, fa, s->smem)) != CUDA_SUCCESS)
        return rc;
    return check_cluster(fa, s);
}
