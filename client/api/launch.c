/*
 * Kernel launches: the parameters are packed into one buffer following the layout the
 * executor reported for the kernel, and the launch leaves as one batched call.  Its
 * shape goes to the device exactly as given.  What the driver refuses before a launch
 * returns is refused here too, before the launch is queued (launchcheck.h).
 */
#include "cuda_api.h"
#include "launch.h"

#include "ctx.h"
#include "launchcheck.h"
#include "module.h"
#include "rpc.h"
#include "stream.h"
#include "streamattr.h"
#include "unsupported.h"

#include <stdlib.h>
#include <string.h>

/* Parameters given as a ready buffer: the `extra` form of cuLaunchKernel; *len its size
 * (len may be NULL). */
static CUresult from_extra(void **extra, const void **buf, size_t *len)
{
    size_t *size = NULL;

    *buf = NULL;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            *buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (*buf == NULL || size == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (len != NULL)
        *len = *size;
    return CUDA_SUCCESS;
}

/* Gaps between parameters are zero, so equal launches send equal bytes. */
static void pack(const struct ds_cfunc *f, void **params, unsigned char *buf)
{
    memset(buf, 0, f->param_bytes);
    for (uint32_t i = 0; i < f->nparams; i++)
        memcpy(buf + f->offset[i], params[i], f->size[i]);
}

CUresult ds__launch_pack(const struct ds_cfunc *f, void **params, void **extra,
                         unsigned char **out)
{
    const void *given;
    size_t len;
    CUresult rc;

    if ((*out = malloc(f->param_bytes > 0 ? f->param_bytes : 1)) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (extra != NULL) {
        if ((rc = from_extra(extra, &given, &len)) == CUDA_SUCCESS && len < f->param_bytes)
            rc = CUDA_ERROR_INVALID_VALUE;
        if (rc == CUDA_SUCCESS)
            memcpy(*out, given, f->param_bytes);
    } else {
        rc = f->nparams > 0 && params == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
        if (rc == CUDA_SUCCESS)
            pack(f, params, *out);
    }
    if (rc != CUDA_SUCCESS) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

static CUresult launch(CUfunction fn, const unsigned grid[3], const unsigned block[3],
                       unsigned smem, CUstream stream, void **params, void **extra,
                       ds_launch_attr *attrs, unsigned nattrs)
{
    struct ds_cfunc *f = ds__module_func(fn);
    ds_launch_args a = { .shared_mem = smem, .attrs = { nattrs, attrs } };
    struct ds_launch_shape shape = { .smem = smem };
    unsigned char small[1024], *buf = small;
    ds_launch_attr merged[DS_LAUNCH_ATTRS_MAX];
    const void *given;
    uint64_t ctx;
    CUresult rc;

    DS_NEED_INIT();
    if (ds__ctx_current(&ctx) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (params != NULL && extra != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    a.stream = ds__stream_of(stream);
    a.attrs.attrs_val = ds__streamattr_merge(a.stream, attrs, &a.attrs.attrs_len, merged,
                                             DS_LAUNCH_ATTRS_MAX);
    memcpy(shape.grid, grid, sizeof(shape.grid));
    memcpy(shape.block, block, sizeof(shape.block));
    shape.attrs = a.attrs.attrs_val;
    shape.nattrs = a.attrs.attrs_len;
    if ((rc = ds__launchcheck(f, &shape)) != CUDA_SUCCESS)
        return rc;
    a.fn = f->handle;
    memcpy(a.grid, grid, sizeof(a.grid));
    memcpy(a.block, block, sizeof(a.block));
    if (extra != NULL) {
        if ((rc = from_extra(extra, &given, NULL)) != CUDA_SUCCESS)
            return rc;
        /* The driver reads the kernel's whole parameter size from the buffer even when
         * the size given is shorter (run 119 on an H200: a pointer parameter given with
         * size 4 arrived whole), so the same bytes are sent from here. */
        a.params.params_val = (char *)given;
        a.params.params_len = f->param_bytes;
        return ds_rpc_launch(&a);
    }
    if (f->nparams > 0 && params == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f->param_bytes > sizeof(small) && (buf = malloc(f->param_bytes)) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pack(f, params, buf);
    a.params.params_val = (char *)buf;
    a.params.params_len = f->param_bytes;
    rc = ds_rpc_launch(&a);
    if (buf != small)
        free(buf);
    return rc;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                        CUstream stream, void **params, void **extra)
{
    const unsigned grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };

    return launch(f, grid, block, smem, stream, params, extra, NULL, 0);
}

/* Launch attributes (clusters, cooperative launches, programmatic serialization...) go
 * to the executor as given: libraries choose kernels that rely on them, and refusing one
 * would make them choose differently from a native run. */
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    static atomic_int once;
    ds_launch_attr attrs[DS_LAUNCH_ATTRS_MAX];
    unsigned grid[3], block[3];

    DS_NEED_INIT();
    if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if (config->numAttrs > DS_LAUNCH_ATTRS_MAX)
        return ds__unsupported("cuLaunchKernelEx with more than 16 attributes", &once);
    for (unsigned i = 0; i < config->numAttrs; i++) {
        attrs[i].id = (int)config->attrs[i].id;
        memcpy(attrs[i].value, &config->attrs[i].value, sizeof(attrs[i].value));
    }
    grid[0] = config->gridDimX;
    grid[1] = config->gridDimY;
    grid[2] = config->gridDimZ;
    block[0] = config->blockDimX;
    block[1] = config->blockDimY;
    block[2] = config->blockDimZ;
    return launch(f, grid, block, config->sharedMemBytes, config->hStream, params, extra, attrs,
                  config->numAttrs);
}

/* A cooperative launch is a launch with the cooperative attribute: the driver checks that
 * the grid can be resident at once, on the executor's side. */
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                   unsigned int gz, unsigned int bx, unsigned int by,
                                   unsigned int bz, unsigned int smem, CUstream stream,
                                   void **params)
{
    const unsigned grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
    ds_launch_attr coop = { .id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE };
    int one = 1;

    memcpy(coop.value, &one, sizeof(one));
    return launch(f, grid, block, smem, stream, params, NULL, &coop, 1);
}
