/* Device and page-locked host allocations. */
#include "cuda_api.h"
#include "mem.h"

#include "ctx.h"
#include "graph.h"
#include "ds_memtab.h"
#include "rpc.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ds_memtab device_mem; /* what cuMemAlloc returned */
static struct ds_memtab host_mem;   /* what cuMemHostAlloc returned; data = flags */

/* Ranges the server dropped without telling us (a context destroyed or reset) give way
 * to whatever it hands out at the same addresses later. */
void ds__mem_remember(uint64_t base, uint64_t size)
{
    struct ds_memtab_entry e = { .base = base, .size = size };
    const struct ds_memtab_entry *old;

    pthread_mutex_lock(&lock);
    while ((old = ds_memtab_overlap(&device_mem, base, size)) != NULL)
        ds_memtab_remove(&device_mem, old->base, NULL);
    ds_memtab_insert(&device_mem, &e);
    pthread_mutex_unlock(&lock);
}

int ds__mem_is_device(uint64_t p)
{
    int found;

    pthread_mutex_lock(&lock);
    found = ds_memtab_find(&device_mem, p, 0) != NULL;
    pthread_mutex_unlock(&lock);
    return found;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    ds_alloc_args a = { .size = size, .capture_mode = ds__graph_thread_mode() };
    ds_alloc_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (dptr == NULL || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_mem_alloc(&a, &r);
    if (rc == CUDA_SUCCESS) {
        *dptr = r.ds_alloc_res_u.ptr;
        ds__mem_remember(*dptr, size);
    }
    return rc;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
    ds_dptr d = p;
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (p == 0)
        return CUDA_SUCCESS;
    rc = ds_rpc_mem_free(&d, &r);
    if (rc == CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        ds_memtab_remove(&device_mem, p, NULL);
        pthread_mutex_unlock(&lock);
    }
    return rc;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    ds_meminfo_res r;
    ds_handle ctx;
    CUresult rc;

    DS_NEED_INIT();
    if (free_bytes == NULL || total == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&ctx)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_mem_get_info(&ctx, &r);
    if (rc == CUDA_SUCCESS) {
        *free_bytes = r.ds_meminfo_res_u.info.free_bytes;
        *total = r.ds_meminfo_res_u.info.total_bytes;
    }
    return rc;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    ds_dptr d = p;
    ds_range_res r;
    CUresult rc;

    DS_NEED_INIT();
    rc = ds_rpc_mem_get_range(&d, &r);
    if (rc == CUDA_SUCCESS) {
        if (base != NULL)
            *base = r.ds_range_res_u.range.base;
        if (size != NULL)
            *size = r.ds_range_res_u.range.size;
    }
    return rc;
}

#define HOST_FLAGS_ALLOWED \
    (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)

/* Host memory is the tenant's own, page-aligned and locked where the system allows;
 * copies from it travel like any host copy.  Mapping it into the device address space
 * (DEVICEMAP) needs the shared-memory arena of a later issue. */
CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
    struct ds_memtab_entry e = { .size = size, .owner = flags };
    ds_handle ctx;
    void *p;
    CUresult rc;

    DS_NEED_INIT();
    if (pp == NULL || size == 0 || (flags & ~(unsigned)HOST_FLAGS_ALLOWED) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&ctx)) != CUDA_SUCCESS)
        return rc;
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    mlock(p, size); /* best effort: RLIMIT_MEMLOCK may forbid it, and nothing depends on it */
    e.base = (uint64_t)(uintptr_t)p;
    pthread_mutex_lock(&lock);
    rc = ds_memtab_insert(&host_mem, &e) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    if (rc != CUDA_SUCCESS) {
        munmap(p, size);
        return rc;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **pp, size_t size)
{
    return cuMemHostAlloc(pp, size, 0);
}

CUresult cuMemFreeHost(void *p)
{
    struct ds_memtab_entry e;
    int rc;

    DS_NEED_INIT();
    pthread_mutex_lock(&lock);
    rc = ds_memtab_remove(&host_mem, (uint64_t)(uintptr_t)p, &e);
    pthread_mutex_unlock(&lock);
    if (rc != 0)
        return CUDA_ERROR_INVALID_VALUE;
    munmap(p, e.size);
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    const struct ds_memtab_entry *e;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;

    DS_NEED_INIT();
    if (flags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&host_mem, (uint64_t)(uintptr_t)p, 0);
    if (e != NULL) {
        *flags = (unsigned)e->owner;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
