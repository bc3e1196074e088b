/*
 * Managed memory.  The pages never migrate: prefetches, advice and stream attachment
 * change where nothing lives, so they are checked as CUDA checks them, remembered for
 * cuMemRangeGetAttribute, and otherwise cost nothing.  Advice is kept per allocation,
 * not per page.
 */
#include "cuda_api.h"
#include "managed.h"

#include "arena.h"
#include "ctx.h"
#include "ds_arena.h"
#include "ds_log.h"
#include "ds_memtab.h"
#include "mem.h"
#include "rpc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* What the program said of one allocation. */
struct managed {
    unsigned attach;          /* CU_MEM_ATTACH_* */
    int read_mostly;
    CUmemLocation preferred;  /* type CU_MEM_LOCATION_TYPE_INVALID: none */
    CUmemLocation prefetched; /* the last prefetch's target; INVALID: none yet */
    int accessed_by_device;   /* CU_MEM_ADVISE_SET_ACCESSED_BY device 0 */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ds_memtab allocs; /* as the program asked for them: data = struct managed */

int ds__managed_range(uint64_t p, uint64_t *base, uint64_t *size)
{
    const struct ds_memtab_entry *e;

    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&allocs, p, 0);
    if (e != NULL && base != NULL)
        *base = e->base;
    if (e != NULL && size != NULL)
        *size = e->size;
    pthread_mutex_unlock(&lock);
    return e != NULL;
}

/* A remote tenant's pages cannot be the executor's too. */
static CUresult no_arena(void)
{
    static atomic_int once;

    if (atomic_exchange(&once, 1) == 0)
        ds_warn("cuMemAllocManaged needs a Unix-socket connection (its pages are shared with "
                "the executor): returning CUDA_ERROR_NOT_SUPPORTED");
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult record(void *p, size_t size, unsigned flags)
{
    struct managed *m = calloc(1, sizeof(*m));
    struct ds_memtab_entry e = { .base = (uint64_t)(uintptr_t)p, .size = size, .data = m };
    int rc;

    if (m == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->attach = flags;
    pthread_mutex_lock(&lock);
    rc = ds_memtab_insert(&allocs, &e);
    pthread_mutex_unlock(&lock);
    if (rc != 0) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
    ds_host_register_args a = { .flags = flags };
    ds_alloc_res r;
    ds_void_res freed;
    uint64_t ctx;
    ds_dptr d;
    void *p;
    CUresult rc;

    DS_NEED_INIT();
    if (dptr == NULL || size == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&ctx)) != CUDA_SUCCESS)
        return rc;
    if (ds__arena_fd() < 0)
        return no_arena();
    if (size > DS_ARENA_SIZE || (p = ds__arena_take(size)) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a.addr = (uint64_t)(uintptr_t)p;
    a.offset = a.addr - ds__arena_base();
    a.size = (size + 4095) & ~(size_t)4095;
    rc = ds_rpc_mem_alloc_managed(&a, &r);
    if (rc == CUDA_SUCCESS && (rc = record(p, size, flags)) != CUDA_SUCCESS) {
        d = a.addr;
        ds_rpc_mem_free(&d, &freed);
    }
    if (rc != CUDA_SUCCESS) {
        ds__arena_give(p);
        return rc;
    }
    ds__mem_remember(a.addr, size);
    *dptr = a.addr;
    return CUDA_SUCCESS;
}

/* Like cudaFree, after the device's work so far: kernels may still be using it. */
CUresult ds__managed_free(uint64_t p)
{
    const struct ds_memtab_entry *found;
    struct ds_memtab_entry e;
    ds_void_res r;
    ds_dptr d = p;
    CUresult rc;

    pthread_mutex_lock(&lock);
    found = ds_memtab_find(&allocs, p, 0);
    rc = found != NULL && found->base == p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    if (rc != CUDA_SUCCESS || (rc = cuCtxSynchronize()) != CUDA_SUCCESS ||
        (rc = ds_rpc_mem_free(&d, &r)) != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    ds_memtab_remove(&allocs, p, &e);
    pthread_mutex_unlock(&lock);
    free(e.data);
    ds__mem_drop(p);
    ds__arena_give((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}

/* The allocation holding all of [p, p+n), with the lock held; NULL when there is none,
 * which CUDA answers with CUDA_ERROR_INVALID_VALUE. */
static struct managed *holding(uint64_t p, uint64_t n)
{
    const struct ds_memtab_entry *e = n > 0 ? ds_memtab_find(&allocs, p, n) : NULL;

    return e != NULL ? e->data : NULL;
}

/* Where a prefetch or advice may point: the device or the host. */
static int bad_location(CUmemLocation l)
{
    switch (l.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return ds__rpc_device(l.id) == NULL;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return 0;
    default:
        return 1;
    }
}

/* The legacy forms name a device: an ordinal, or CU_DEVICE_CPU for the host. */
static CUmemLocation location_of(CUdevice dev)
{
    CUmemLocation l = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev };

    if (dev == CU_DEVICE_CPU)
        l.type = CU_MEM_LOCATION_TYPE_HOST;
    else if (ds__rpc_device(dev) == NULL)
        l.type = CU_MEM_LOCATION_TYPE_INVALID;
    return l;
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation where, unsigned int flags,
                               CUstream s)
{
    struct managed *m;

    DS_NEED_INIT();
    (void)s; /* nothing moves, so nothing waits on the stream */
    if (flags != 0 || bad_location(where))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if ((m = holding(p, n)) != NULL)
        m->prefetched = where;
    pthread_mutex_unlock(&lock);
    return m != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dst, CUstream s)
{
    CUmemLocation l = location_of(dst);

    if (l.type == CU_MEM_LOCATION_TYPE_INVALID)
        return CUDA_ERROR_INVALID_DEVICE;
    return cuMemPrefetchAsync_v2(p, n, l, 0, s);
}

static CUresult advise(struct managed *m, CUmem_advise advice, CUmemLocation l)
{
    switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
        m->read_mostly = advice == CU_MEM_ADVISE_SET_READ_MOSTLY;
        return CUDA_SUCCESS;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
        if (bad_location(l))
            return CUDA_ERROR_INVALID_DEVICE;
        m->preferred = l;
        return CUDA_SUCCESS;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
        m->preferred.type = CU_MEM_LOCATION_TYPE_INVALID;
        return CUDA_SUCCESS;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
        if (bad_location(l))
            return CUDA_ERROR_INVALID_DEVICE;
        if (l.type == CU_MEM_LOCATION_TYPE_DEVICE)
            m->accessed_by_device = advice == CU_MEM_ADVISE_SET_ACCESSED_BY;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation where)
{
    struct managed *m;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;

    DS_NEED_INIT();
    pthread_mutex_lock(&lock);
    if ((m = holding(p, n)) != NULL)
        rc = advise(m, advice, where);
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev)
{
    CUmemLocation l = location_of(dev);

    return cuMemAdvise_v2(p, n, advice, l);
}

/* A location as the legacy attributes give it: a device ordinal, CU_DEVICE_CPU, or
 * CU_DEVICE_INVALID for none. */
static int legacy_id(CUmemLocation l)
{
    if (l.type == CU_MEM_LOCATION_TYPE_DEVICE)
        return l.id;
    return l.type == CU_MEM_LOCATION_TYPE_INVALID ? CU_DEVICE_INVALID : CU_DEVICE_CPU;
}

static CUresult one_attribute(const struct managed *m, void *data, size_t size,
                              CUmem_range_attribute attr)
{
    int *v = data;

    if (attr == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY) {
        if (size == 0 || size % 4 != 0)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < size / 4; i++)
            v[i] = CU_DEVICE_INVALID;
        if (m->accessed_by_device)
            v[0] = 0;
        return CUDA_SUCCESS;
    }
    if (size != 4)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
        *v = m->read_mostly;
        break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
        *v = legacy_id(m->preferred);
        break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
        *v = legacy_id(m->prefetched);
        break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
        *v = m->preferred.type;
        break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
        *v = m->preferred.id;
        break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
        *v = m->prefetched.type;
        break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
        *v = m->prefetched.id;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemRangeGetAttributes(void **data, size_t *sizes, CUmem_range_attribute *attrs,
                                 size_t n, CUdeviceptr p, size_t count)
{
    const struct managed *m;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;

    DS_NEED_INIT();
    if (data == NULL || sizes == NULL || attrs == NULL || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if ((m = holding(p, count)) != NULL) {
        rc = CUDA_SUCCESS;
        for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++)
            rc = data[i] == NULL ? CUDA_ERROR_INVALID_VALUE
                                 : one_attribute(m, data[i], sizes[i], attrs[i]);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuMemRangeGetAttribute(void *data, size_t size, CUmem_range_attribute attr,
                                CUdeviceptr p, size_t count)
{
    return cuMemRangeGetAttributes(&data, &size, &attr, 1, p, count);
}

/* length 0 or the whole allocation, from its start, as CUDA requires of memory that
 * cuMemAllocManaged returned. */
CUresult cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t length, unsigned int flags)
{
    const struct ds_memtab_entry *e;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;

    DS_NEED_INIT();
    (void)s;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
        flags != CU_MEM_ATTACH_SINGLE)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&allocs, p, 0);
    if (e != NULL && e->base == p && (length == 0 || length == e->size)) {
        ((struct managed *)e->data)->attach = flags;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
