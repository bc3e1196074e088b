/* The cases of launch_cases.h.  Plain driver API only: the same code runs linked to
 * detshare's libcuda and to the real one. */
#include "launch_cases.h"

#include <cuda.h>
#include <stdio.h>
#include <string.h>

struct run {
    char *out;
    size_t len, used;
    CUdevice dev;
    CUdeviceptr buf;
    void *one[1];  /* parameters of a kernel taking the buffer */
    void *two[2];  /* heavy's: the buffer twice */
    CUfunction plain, bounded, heavy, staticsmem, clustered;
};

static void put(struct run *r, const char *name, long long v)
{
    int n = snprintf(r->out + r->used, r->len - r->used, "%s %lld\n", name, v);

    if (n > 0 && (size_t)n < r->len - r->used)
        r->used += (size_t)n;
}

static int dev_attr(const struct run *r, CUdevice_attribute a)
{
    int v = -1;

    cuDeviceGetAttribute(&v, a, r->dev);
    return v;
}

static int func_attr(CUfunction f, CUfunction_attribute a)
{
    int v = -1;

    cuFuncGetAttribute(&v, a, f);
    return v;
}

static CUresult go(CUfunction f, const unsigned g[3], const unsigned b[3], unsigned smem,
                   void **params)
{
    return cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], smem, NULL, params, NULL);
}

/* A launch of grid x 1 x 1 blocks of 32 threads through cuLaunchKernelEx, with a
 * cluster of `cluster` x 1 x 1 blocks as its attribute (none when cluster is 0). */
static CUresult go_ex(CUfunction f, unsigned grid, unsigned cluster, void **params)
{
    CUlaunchAttribute at;
    CUlaunchConfig cfg = { .gridDimX = grid, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
                           .blockDimY = 1, .blockDimZ = 1, .attrs = &at,
                           .numAttrs = cluster ? 1 : 0 };

    memset(&at, 0, sizeof(at));
    at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at.value.clusterDim.x = cluster;
    at.value.clusterDim.y = 1;
    at.value.clusterDim.z = 1;
    return cuLaunchKernelEx(&cfg, f, params, NULL);
}

static void blocks(struct run *r)
{
    const unsigned g[3] = { 2, 1, 1 };
    unsigned bx = (unsigned)dev_attr(r, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    unsigned bz = (unsigned)dev_attr(r, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    int bounded = func_attr(r->bounded, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    int heavy = func_attr(r->heavy, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);

    put(r, "block_ok_1024", go(r->plain, g, (unsigned[3]){ 1024, 1, 1 }, 0, r->one));
    put(r, "block_zero", go(r->plain, g, (unsigned[3]){ 0, 1, 1 }, 0, r->one));
    put(r, "block_x_over", go(r->plain, g, (unsigned[3]){ bx + 1, 1, 1 }, 0, r->one));
    put(r, "block_z_over", go(r->plain, g, (unsigned[3]){ 1, 1, bz + 1 }, 0, r->one));
    put(r, "block_product_over", go(r->plain, g, (unsigned[3]){ 32, 32, 2 }, 0, r->one));
    put(r, "bounded_max_threads", bounded);
    put(r, "bounded_at_limit", go(r->bounded, g, (unsigned[3]){ (unsigned)bounded, 1, 1 }, 0,
                                  r->one));
    put(r, "bounded_over", go(r->bounded, g, (unsigned[3]){ (unsigned)bounded + 32, 1, 1 }, 0,
                              r->one));
    put(r, "heavy_max_threads", heavy);
    put(r, "heavy_at_limit", go(r->heavy, (unsigned[3]){ 1, 1, 1 },
                                (unsigned[3]){ (unsigned)heavy, 1, 1 }, 0, r->two));
    put(r, "heavy_over", go(r->heavy, (unsigned[3]){ 1, 1, 1 },
                            (unsigned[3]){ (unsigned)heavy + 32, 1, 1 }, 0, r->two));
}

static void grids(struct run *r)
{
    const unsigned b[3] = { 32, 1, 1 };
    unsigned gx = (unsigned)dev_attr(r, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    unsigned gy = (unsigned)dev_attr(r, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);

    put(r, "grid_zero", go(r->plain, (unsigned[3]){ 1, 0, 1 }, b, 0, r->one));
    put(r, "grid_x_over", go(r->plain, (unsigned[3]){ gx + 1, 1, 1 }, b, 0, r->one));
    put(r, "grid_y_over", go(r->plain, (unsigned[3]){ 1, gy + 1, 1 }, b, 0, r->one));
}

static void shared(struct run *r)
{
    const unsigned g[3] = { 1, 1, 1 }, b[3] = { 32, 1, 1 };
    int dflt = func_attr(r->plain, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
    int left = func_attr(r->staticsmem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);

    put(r, "smem_default", dflt);
    put(r, "smem_at_default", go(r->plain, g, b, (unsigned)dflt, r->one));
    put(r, "smem_over_default", go(r->plain, g, b, (unsigned)dflt + 1, r->one));
    put(r, "smem_opt_in", cuFuncSetAttribute(r->plain,
                                             CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             65536));
    put(r, "smem_at_opt_in", go(r->plain, g, b, 65536, r->one));
    put(r, "smem_over_opt_in", go(r->plain, g, b, 65537, r->one));
    put(r, "smem_opt_out", cuFuncSetAttribute(r->plain,
                                              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              1024));
    put(r, "smem_over_opt_out", go(r->plain, g, b, 1025, r->one));
    put(r, "static_left", left);
    put(r, "static_at_left", go(r->staticsmem, g, b, (unsigned)left, r->one));
    put(r, "static_over_left", go(r->staticsmem, g, b, (unsigned)left + 1, r->one));
}

static void clusters(struct run *r)
{
    put(r, "cluster_ok", go_ex(r->plain, 4, 2, r->one));
    put(r, "cluster_not_dividing", go_ex(r->plain, 3, 2, r->one));
    put(r, "cluster_over_portable", go_ex(r->plain, 16, 16, r->one));
    put(r, "cluster_non_portable", cuFuncSetAttribute(
                                       r->plain,
                                       CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    put(r, "cluster_non_portable_ok", go_ex(r->plain, 16, 16, r->one));
    put(r, "cluster_over_non_portable", go_ex(r->plain, 32, 32, r->one));
    put(r, "compiled_cluster_ok", go_ex(r->clustered, 4, 0, r->one));
    put(r, "compiled_cluster_not_dividing", go_ex(r->clustered, 3, 0, r->one));
    put(r, "compiled_cluster_same", go_ex(r->clustered, 4, 2, r->one));
    put(r, "compiled_cluster_other", go_ex(r->clustered, 4, 4, r->one));
}

static void arguments(struct run *r)
{
    const unsigned g[3] = { 1, 1, 1 }, b[3] = { 32, 1, 1 };
    size_t small = 4, whole = sizeof(r->buf);
    void *extra_small[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &r->buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
                            &small, CU_LAUNCH_PARAM_END };
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &r->buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
                      &whole, CU_LAUNCH_PARAM_END };
    CUcontext ctx = NULL;

    put(r, "extra_ok", cuLaunchKernel(r->plain, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra));
    put(r, "extra_too_small",
        cuLaunchKernel(r->plain, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra_small));
    put(r, "no_params", cuLaunchKernel(r->plain, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    put(r, "params_and_extra",
        cuLaunchKernel(r->plain, 1, 1, 1, 32, 1, 1, 0, NULL, r->one, extra));
    put(r, "null_function", go(NULL, g, b, 0, r->one));
    cuCtxGetCurrent(&ctx);
    cuCtxSetCurrent(NULL);
    put(r, "no_context", go(r->plain, g, b, 0, r->one));
    cuCtxSetCurrent(ctx);
}

static int fail(struct run *r, const char *what, CUresult rc)
{
    snprintf(r->out, r->len, "%s failed: %d\n", what, (int)rc);
    return -1;
}

int ds_launch_cases(const char *fatbin, char *out, size_t len)
{
    struct run r = { .out = out, .len = len };
    CUmodule m;
    CUresult rc;

    out[0] = '\0';
    if ((rc = cuCtxGetDevice(&r.dev)) != CUDA_SUCCESS)
        return fail(&r, "cuCtxGetDevice", rc);
    if ((rc = cuModuleLoad(&m, fatbin)) != CUDA_SUCCESS)
        return fail(&r, "cuModuleLoad", rc);
    if ((rc = cuModuleGetFunction(&r.plain, m, "plain")) != CUDA_SUCCESS ||
        (rc = cuModuleGetFunction(&r.bounded, m, "bounded")) != CUDA_SUCCESS ||
        (rc = cuModuleGetFunction(&r.heavy, m, "heavy")) != CUDA_SUCCESS ||
        (rc = cuModuleGetFunction(&r.staticsmem, m, "staticsmem")) != CUDA_SUCCESS ||
        (rc = cuModuleGetFunction(&r.clustered, m, "clustered")) != CUDA_SUCCESS)
        return fail(&r, "cuModuleGetFunction", rc);
    /* heavy reaches 96 x 1024 floats past its first thread's */
    if ((rc = cuMemAlloc(&r.buf, 4u << 20)) != CUDA_SUCCESS)
        return fail(&r, "cuMemAlloc", rc);
    r.one[0] = &r.buf;
    r.two[0] = r.two[1] = &r.buf;
    blocks(&r);
    grids(&r);
    shared(&r);
    clusters(&r);
    arguments(&r);
    put(&r, "sync", cuCtxSynchronize());
    cuMemFree(r.buf);
    cuModuleUnload(m);
    return 0;
}
