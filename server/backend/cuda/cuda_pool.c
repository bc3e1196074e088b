/*
 * Memory pools on the real GPU: the driver's own stream-ordered allocator, on the
 * tenant's real streams, so that reuse, release and the inter-stream dependencies it
 * inserts are the driver's.  Every pool lives on the server's GPU, whatever device id the
 * tenant named (always 0 to it); the executor has checked every pool, attribute and
 * address.
 */
#include "cuda_backend.h"

#include "ds_error.h"

#include <stdlib.h>

struct ds_bpool {
    CUmemoryPool p;
    int is_default; /* the device's own: never destroyed, only trimmed */
};

static int pool_err(CUresult r)
{
    return r == CUDA_ERROR_OUT_OF_MEMORY ? DS_ENOMEM : ds__cuda_err(r);
}

static int wrap(CUmemoryPool p, int is_default, struct ds_bpool **out)
{
    struct ds_bpool *bp = malloc(sizeof(*bp));

    if (bp == NULL)
        return DS_ENOMEM;
    bp->p = p;
    bp->is_default = is_default;
    *out = bp;
    return 0;
}

int ds__cuda_pool_default(struct ds_backend *b, struct ds_bpool **out)
{
    CUmemoryPool p;
    CUresult r = b->cu.cuDeviceGetDefaultMemPool(&p, b->dev);

    return r != CUDA_SUCCESS ? ds__cuda_err(r) : wrap(p, 1, out);
}

int ds__cuda_pool_create(struct ds_backend *b, uint64_t max_size, unsigned usage,
                         struct ds_bpool **out)
{
    CUmemPoolProps props = {
        .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
        .handleTypes = CU_MEM_HANDLE_TYPE_NONE,
        .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = b->dev },
        .maxSize = max_size,
        .usage = (unsigned short)usage,
    };
    CUmemoryPool p;
    CUresult r = b->cu.cuMemPoolCreate(&p, &props);
    int rc;

    if (r != CUDA_SUCCESS)
        return pool_err(r);
    if ((rc = wrap(p, 0, out)) != 0)
        b->cu.cuMemPoolDestroy(p);
    return rc;
}

void ds__cuda_pool_destroy(struct ds_backend *b, struct ds_bpool *p)
{
    if (p->is_default)
        b->cu.cuMemPoolTrimTo(p->p, 0);
    else
        b->cu.cuMemPoolDestroy(p->p);
    free(p);
}

int ds__cuda_pool_alloc(struct ds_backend *b, struct ds_bpool *p, uint64_t size,
                        struct ds_bstream *s, uint64_t *addr)
{
    CUdeviceptr d = 0;
    int rc;

    s = ds__cuda_real(b, s);
    if ((rc = ds__cuda_order(b, s)) != 0)
        return rc;
    rc = pool_err(b->cu.cuMemAllocFromPoolAsync(&d, size, p->p, s->s));
    *addr = d;
    return rc;
}

int ds__cuda_pool_free(struct ds_backend *b, struct ds_bpool *p, uint64_t addr,
                       struct ds_bstream *s)
{
    int rc;

    (void)p;
    s = ds__cuda_real(b, s);
    if ((rc = ds__cuda_order(b, s)) != 0)
        return rc;
    return ds__cuda_err(b->cu.cuMemFreeAsync(addr, s->s));
}

/* The reuse flags are ints in cuda.h, the rest 64-bit. */
static int is_int(int attr)
{
    return attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
           attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
           attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

int ds__cuda_pool_attr(struct ds_backend *b, struct ds_bpool *p, int attr, int set,
                       uint64_t *value)
{
    CUmemPool_attribute a = (CUmemPool_attribute)attr;
    cuuint64_t v64 = *value;
    int v32 = (int)*value;
    void *v = is_int(attr) ? (void *)&v32 : (void *)&v64;
    CUresult r = CUDA_SUCCESS;

    if (set)
        r = b->cu.cuMemPoolSetAttribute(p->p, a, v);
    if (r == CUDA_SUCCESS)
        r = b->cu.cuMemPoolGetAttribute(p->p, a, v);
    *value = is_int(attr) ? (uint64_t)v32 : v64;
    return ds__cuda_err(r);
}

int ds__cuda_pool_trim(struct ds_backend *b, struct ds_bpool *p, uint64_t keep)
{
    return ds__cuda_err(b->cu.cuMemPoolTrimTo(p->p, keep));
}
