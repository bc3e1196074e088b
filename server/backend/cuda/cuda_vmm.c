/*
 * Virtual memory management on the real GPU: the driver's own calls, with the tenant's
 * device (always 0 to the tenant) turned into the server's GPU wherever a location is
 * named.  The executor has checked every range, offset and handle already.
 *
 * The one executor thread acts for every thread of the tenant, whose capture modes it
 * does not know; as for cuMemAlloc, a stream capture elsewhere in the tenant must not make
 * the driver refuse these, so they run in relaxed mode.
 */
#include "cuda_backend.h"

#include "ds_error.h"

#include <stdlib.h>

struct ds_bpmem {
    CUmemGenericAllocationHandle h;
};

static CUmemAllocationProp on_device(const struct ds_backend *b, const CUmemAllocationProp *p)
{
    CUmemAllocationProp r = *p;

    r.location.id = b->dev;
    return r;
}

static CUstreamCaptureMode relaxed(struct ds_backend *b)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;

    b->cu.cuThreadExchangeStreamCaptureMode(&mode);
    return mode;
}

static void restore(struct ds_backend *b, CUstreamCaptureMode mode)
{
    b->cu.cuThreadExchangeStreamCaptureMode(&mode);
}

static int vmm_err(CUresult r)
{
    return r == CUDA_ERROR_OUT_OF_MEMORY ? DS_ENOMEM : ds__cuda_err(r);
}

int ds__cuda_vmm_granularity(struct ds_backend *b, const CUmemAllocationProp *prop,
                             int recommended, uint64_t *out)
{
    CUmemAllocationProp p = on_device(b, prop);
    size_t g = 0;
    CUresult r = b->cu.cuMemGetAllocationGranularity(
        &g, &p, recommended ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED : CU_MEM_ALLOC_GRANULARITY_MINIMUM);

    *out = g;
    return ds__cuda_err(r);
}

int ds__cuda_vmm_reserve(struct ds_backend *b, uint64_t size, uint64_t align, uint64_t hint,
                         uint64_t *addr)
{
    CUdeviceptr p = 0;
    CUresult r = b->cu.cuMemAddressReserve(&p, size, align, hint, 0);

    *addr = p;
    return vmm_err(r);
}

void ds__cuda_vmm_free(struct ds_backend *b, uint64_t addr, uint64_t size)
{
    b->cu.cuMemAddressFree(addr, size);
}

/* The driver may not grant compression; the tenant learns what it got, as from CUDA. */
int ds__cuda_vmm_create(struct ds_backend *b, uint64_t size, CUmemAllocationProp *prop,
                        struct ds_bpmem **out)
{
    struct ds_bpmem *m = malloc(sizeof(*m));
    CUmemAllocationProp p = on_device(b, prop), got;
    CUstreamCaptureMode mode;
    CUresult r;

    if (m == NULL)
        return DS_ENOMEM;
    mode = relaxed(b);
    r = b->cu.cuMemCreate(&m->h, size, &p, 0);
    restore(b, mode);
    if (r != CUDA_SUCCESS) {
        free(m);
        return vmm_err(r);
    }
    if (b->cu.cuMemGetAllocationPropertiesFromHandle(&got, m->h) == CUDA_SUCCESS)
        prop->allocFlags.compressionType = got.allocFlags.compressionType;
    *out = m;
    return 0;
}

void ds__cuda_vmm_release(struct ds_backend *b, struct ds_bpmem *m)
{
    CUstreamCaptureMode mode = relaxed(b);

    b->cu.cuMemRelease(m->h);
    restore(b, mode);
    free(m);
}

int ds__cuda_vmm_map(struct ds_backend *b, uint64_t addr, uint64_t size, struct ds_bpmem *m,
                     uint64_t offset)
{
    CUstreamCaptureMode mode = relaxed(b);
    CUresult r = b->cu.cuMemMap(addr, size, offset, m->h, 0);

    restore(b, mode);
    return vmm_err(r);
}

void ds__cuda_vmm_unmap(struct ds_backend *b, uint64_t addr, uint64_t size)
{
    CUstreamCaptureMode mode = relaxed(b);

    b->cu.cuMemUnmap(addr, size);
    restore(b, mode);
}

int ds__cuda_vmm_set_access(struct ds_backend *b, uint64_t addr, uint64_t size,
                            unsigned flags)
{
    CUmemAccessDesc d = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = b->dev },
                          .flags = (CUmemAccess_flags)flags };

    return ds__cuda_err(b->cu.cuMemSetAccess(addr, size, &d, 1));
}
