/* The cuda backend's modules and kernels: libraries (not tied to a context, so their
 * kernels run on whichever green context the tenant is bound to), parameter layouts from
 * the driver, and launches exactly as the tenant asked. */
#include "cuda_backend.h"

#include "ds_error.h"
#include "ds_log.h"

#include <stdlib.h>
#include <string.h>

int ds__cuda_module_load(struct ds_backend *b, const void *image, size_t len,
                         struct ds_bmodule **out)
{
    struct ds_bmodule *m = calloc(1, sizeof(*m));
    CUresult r;

    (void)len;
    if (m == NULL)
        return DS_ENOMEM;
    r = b->cu.cuLibraryLoadData(&m->lib, image, NULL, NULL, 0, NULL, NULL, 0);
    if (r != CUDA_SUCCESS) {
        free(m);
        return ds__cuda_err(r);
    }
    *out = m;
    return 0;
}

void ds__cuda_module_unload(struct ds_backend *b, struct ds_bmodule *m)
{
    DS_LIST_FREE(struct ds_bfunc, m->funcs, free);
    b->cu.cuLibraryUnload(m->lib);
    free(m);
}

/* The driver's own layout of the parameter buffer, one parameter at a time until it
 * says there are no more. */
static int param_layout(struct ds_backend *b, CUkernel k, struct ds_param_layout *l)
{
    size_t off, size;
    uint32_t n = 0;

    while (b->cu.cuKernelGetParamInfo(k, n, &off, &size) == CUDA_SUCCESS)
        n++;
    l->offset = calloc(n ? n : 1, sizeof(uint32_t));
    l->size = calloc(n ? n : 1, sizeof(uint32_t));
    if (l->offset == NULL || l->size == NULL) {
        free(l->offset);
        free(l->size);
        return DS_ENOMEM;
    }
    l->n = n;
    l->bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        b->cu.cuKernelGetParamInfo(k, i, &off, &size);
        l->offset[i] = (uint32_t)off;
        l->size[i] = (uint32_t)size;
        if (off + size > l->bytes)
            l->bytes = (uint32_t)(off + size);
    }
    return 0;
}

int ds__cuda_module_get_function(struct ds_backend *b, struct ds_bmodule *m, const char *name,
                                 struct ds_bfunc **out, struct ds_param_layout *layout)
{
    struct ds_bfunc *f = calloc(1, sizeof(*f));
    CUresult r;
    int rc;

    if (f == NULL)
        return DS_ENOMEM;
    r = b->cu.cuLibraryGetKernel(&f->k, m->lib, name);
    rc = r == CUDA_SUCCESS ? param_layout(b, f->k, layout) : ds__cuda_err(r);
    if (rc != 0) {
        free(f);
        return rc;
    }
    f->next = m->funcs;
    m->funcs = f;
    *out = f;
    return 0;
}

/* The driver names a library's kernels; libraries load every kernel at once here. */
int ds__cuda_module_kernels(struct ds_backend *b, struct ds_bmodule *m, const char ***names,
                            uint32_t *n)
{
    unsigned count = 0;
    CUkernel *k;
    CUresult r = b->cu.cuLibraryGetKernelCount(&count, m->lib);

    if (r != CUDA_SUCCESS)
        return ds__cuda_err(r);
    k = calloc(count ? count : 1, sizeof(*k));
    *names = calloc(count ? count : 1, sizeof(**names));
    if (k == NULL || *names == NULL) {
        free(k);
        free(*names);
        return DS_ENOMEM;
    }
    r = b->cu.cuLibraryEnumerateKernels(k, count, m->lib);
    for (unsigned i = 0; r == CUDA_SUCCESS && i < count; i++)
        r = b->cu.cuKernelGetName(&(*names)[i], k[i]);
    free(k);
    if (r != CUDA_SUCCESS) {
        free(*names);
        return ds__cuda_err(r);
    }
    *n = count;
    return 0;
}

int ds__cuda_module_get_global(struct ds_backend *b, struct ds_bmodule *m, const char *name,
                               uint64_t *addr, uint64_t *size)
{
    CUdeviceptr p;
    size_t n;
    CUresult r = b->cu.cuLibraryGetGlobal(&p, &n, m->lib, name);

    if (r == CUDA_SUCCESS) {
        *addr = p;
        *size = n;
    }
    return ds__cuda_err(r);
}

int ds__cuda_func_get_attribute(struct ds_backend *b, struct ds_bfunc *f, int attr,
                                int *value)
{
    return ds__cuda_err(b->cu.cuKernelGetAttribute(value, (CUfunction_attribute)attr, f->k, b->dev));
}

int ds__cuda_func_set_attribute(struct ds_backend *b, struct ds_bfunc *f, int attr, int value)
{
    return ds__cuda_err(b->cu.cuKernelSetAttribute((CUfunction_attribute)attr, value, f->k, b->dev));
}

int ds__cuda_occupancy(struct ds_backend *b, struct ds_bfunc *f, int block_size,
                       size_t dynamic_smem, unsigned flags, int *blocks)
{
    return ds__cuda_err(b->cu.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                        blocks, (CUfunction)f->k, block_size, dynamic_smem, flags));
}

int ds__cuda_occupancy_smem(struct ds_backend *b, struct ds_bfunc *f, int num_blocks,
                            int block_size, size_t *smem)
{
    return ds__cuda_err(b->cu.cuOccupancyAvailableDynamicSMemPerBlock(smem, (CUfunction)f->k,
                        num_blocks, block_size));
}

int ds__cuda_occupancy_clusters(struct ds_backend *b, struct ds_bfunc *f,
                                const struct ds_launch *l, const unsigned cluster[3],
                                int *clusters)
{
    CUlaunchAttribute attr = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
    CUlaunchConfig cfg = {
        .gridDimX = l->grid[0], .gridDimY = l->grid[1], .gridDimZ = l->grid[2],
        .blockDimX = l->block[0], .blockDimY = l->block[1], .blockDimZ = l->block[2],
        .sharedMemBytes = l->shared_mem, .attrs = &attr, .numAttrs = 1,
    };

    attr.value.clusterDim.x = cluster[0];
    attr.value.clusterDim.y = cluster[1];
    attr.value.clusterDim.z = cluster[2];
    return ds__cuda_err(b->cu.cuOccupancyMaxActiveClusters(clusters, (CUfunction)f->k, &cfg));
}

int ds__cuda_occupancy_cluster_size(struct ds_backend *b, struct ds_bfunc *f,
                                    const struct ds_launch *l, int *size)
{
    CUlaunchConfig cfg = {
        .gridDimX = l->grid[0], .gridDimY = l->grid[1], .gridDimZ = l->grid[2],
        .blockDimX = l->block[0], .blockDimY = l->block[1], .blockDimZ = l->block[2],
        .sharedMemBytes = l->shared_mem,
    };

    return ds__cuda_err(b->cu.cuOccupancyMaxPotentialClusterSize(size, (CUfunction)f->k, &cfg));
}

static CUresult launch_on(struct ds_backend *b, struct ds_bfunc *f, const struct ds_launch *l,
                          CUstream st)
{
    size_t bytes = l->param_bytes;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)l->params,
                      CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END };

    /* A CUkernel stands for its CUfunction in the stream's (green) context. */
    if (l->nattrs > 0) {
        CUlaunchConfig cfg = {
            .gridDimX = l->grid[0], .gridDimY = l->grid[1], .gridDimZ = l->grid[2],
            .blockDimX = l->block[0], .blockDimY = l->block[1], .blockDimZ = l->block[2],
            .sharedMemBytes = l->shared_mem, .hStream = st,
            .attrs = (CUlaunchAttribute *)l->attrs, .numAttrs = l->nattrs,
        };

        return b->cu.cuLaunchKernelEx(&cfg, (CUfunction)f->k, NULL, bytes ? extra : NULL);
    }
    return b->cu.cuLaunchKernel((CUfunction)f->k, l->grid[0], l->grid[1], l->grid[2],
                                l->block[0], l->block[1], l->block[2], l->shared_mem, st, NULL,
                                bytes ? extra : NULL);
}

/*
 * A kernel whose thread-block clusters cannot be placed on the tenant's partition (too
 * few SMs, or not enough of them in one GPC, for the cluster size it was built or
 * launched with: cuDNN's and cuBLAS's Hopper kernels use clusters) runs on the whole
 * device instead, in the stream's order: its placement changes, never its launch.  Seen
 * on an H100: ResNet-50 training on a 16-SM partition.
 */
static CUresult spill(struct ds_backend *b, struct ds_bfunc *f, const struct ds_launch *l,
                      struct ds_bstream *s)
{
    CUresult r = CUDA_SUCCESS;

    if (b->spill == NULL) {
        r = b->cu.cuGreenCtxStreamCreate(&b->spill, b->green, CU_STREAM_NON_BLOCKING, 0);
        if (r == CUDA_SUCCESS)
            r = b->cu.cuEventCreate(&b->spill_done, CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS)
            return r;
        ds_info("a kernel's clusters do not fit its partition: such kernels run on the "
                "whole device");
    }
    if (ds__cuda_record_tail(b, s) != 0)
        return CUDA_ERROR_UNKNOWN;
    r = b->cu.cuStreamWaitEvent(b->spill, s->tail, 0);
    if (r == CUDA_SUCCESS)
        r = launch_on(b, f, l, b->spill);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuEventRecord(b->spill_done, b->spill);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuStreamWaitEvent(s->s, b->spill_done, 0);
    return r;
}

int ds__cuda_launch(struct ds_backend *b, struct ds_bfunc *f, const struct ds_launch *l,
                    struct ds_bstream *s)
{
    CUresult r;
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    if (rc != 0)
        return rc;
    r = launch_on(b, f, l, s->s);
    if (r == CUDA_ERROR_INVALID_CLUSTER_SIZE && b->pc.bound != b->green &&
        !ds__cuda_capturing(b, s)) {
        r = spill(b, f, l, s);
        if (r == CUDA_SUCCESS)
            return DS_LAUNCH_ESCAPED;
    }
    return ds__cuda_err(r);
}
