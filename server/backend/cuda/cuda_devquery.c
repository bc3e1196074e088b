/* Device queries the tenant's view cannot answer, asked of the real driver so that the
 * tenant gets exactly what a native program on this GPU would. */
#include "cuda_backend.h"

#include "detshare.h"
#include "ds_error.h"

#include <string.h>

static int luid(struct ds_backend *b, uint64_t *values)
{
    char id[8];
    unsigned mask = 0;
    CUresult r = b->cu.cuDeviceGetLuid(id, &mask, b->dev);

    if (r != CUDA_SUCCESS)
        return ds__cuda_err(r);
    memcpy(&values[0], id, sizeof(id));
    values[1] = mask;
    return 0;
}

static int host_atomics(struct ds_backend *b, const struct ds_devq *q, uint64_t *values)
{
    unsigned caps[DS_DEVQ_OPS_MAX];
    CUresult r;

    if (b->cu.cuDeviceGetHostAtomicCapabilities == NULL)
        return DS_ENOTSUP;
    if (q->n > sizeof(caps) / sizeof(caps[0]))
        return DS_EINVAL;
    r = b->cu.cuDeviceGetHostAtomicCapabilities(caps, (const CUatomicOperation *)q->ops, q->n,
                                                b->dev);
    for (unsigned i = 0; r == CUDA_SUCCESS && i < q->n; i++)
        values[i] = caps[i];
    return ds__cuda_err(r);
}

int ds__cuda_dev_query(struct ds_backend *b, const struct ds_devq *q, uint64_t *values)
{
    size_t width = 0;
    CUresult r;

    switch (q->kind) {
    case DS_DEVQ_LUID:
        return luid(b, values);
    case DS_DEVQ_TEX1D_LINEAR_WIDTH:
        r = b->cu.cuDeviceGetTexture1DLinearMaxWidth(&width, (CUarray_format)q->a, q->b, b->dev);
        values[0] = width;
        return ds__cuda_err(r);
    case DS_DEVQ_HOST_ATOMIC_CAPS:
        return host_atomics(b, q, values);
    default:
        return DS_ENOTSUP;
    }
}
