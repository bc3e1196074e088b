/* Device and page-locked host allocations. */
#include "cuda_api.h"

#include "arena.h"
#include "capture.h"
#include "ctx.h"
#include "ds_error.h"
#include "ds_memtab.h"
#include "hostreg.h"
#include "managed.h"
#include "mem.h"
#include "rpc.h"
#include "unsupported.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* What cuMemHostAlloc returned, on the arena or not: owner = flags, data = device
 * address once mapped. */
static struct ds_memtab host_mem;

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    ds_alloc_args a = { .size = size, .capture_mode = ds__capture_thread_mode() };
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
    if (ds__managed_range(p, NULL, NULL))
        return ds__managed_free(p);
    rc = ds_rpc_mem_free(&d, &r);
    if (rc == CUDA_SUCCESS)
        ds__mem_drop(p);
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
    uint64_t b, n;
    CUresult rc;

    DS_NEED_INIT();
    /* The executor knows these ranges by whole pages; the tenant gave them by bytes. */
    if (ds__managed_range(p, &b, &n) || ds__hostreg_range(p, &b, &n)) {
        if (base != NULL)
            *base = b;
        if (size != NULL)
            *size = n;
        return CUDA_SUCCESS;
    }
    rc = ds_rpc_mem_get_range(&d, &r);
    if (rc == CUDA_SUCCESS) {
        if (base != NULL)
            *base = r.ds_range_res_u.range.base;
        if (size != NULL)
            *size = r.ds_range_res_u.range.size;
    }
    return rc;
}

static ds_host_map_args arena_part(const struct ds_memtab_entry *e);

/* The cuMemHostAlloc allocation holding p, or NULL; called with the lock held. */
static const struct ds_memtab_entry *pinned(const void *p)
{
    return ds_memtab_find(&host_mem, (uint64_t)(uintptr_t)p, 0);
}

/*
 * Page-locked memory on the arena is registered with the driver in the executor as soon
 * as it is allocated, as CUDA pins it at allocation: copies from and to it are then DMA
 * from the tenant's own pages, asynchronous as on a GPU.  A failure here only makes
 * those copies slower (the driver stages unregistered pages), and cuMemHostGetDevicePointer
 * tries again.
 */
static void map_now(void *p)
{
    const struct ds_memtab_entry *e;
    ds_host_map_args a;
    ds_alloc_res r;
    uint64_t base = 0, size = 0;

    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&host_mem, (uint64_t)(uintptr_t)p, 0);
    if (e != NULL && e->data == NULL) {
        a = arena_part(e);
        if (ds_rpc_host_map(&a, &r) == CUDA_SUCCESS) {
            ((struct ds_memtab_entry *)e)->data = (void *)(uintptr_t)r.ds_alloc_res_u.ptr;
            base = r.ds_alloc_res_u.ptr;
            size = e->size;
        }
    }
    pthread_mutex_unlock(&lock);
    if (size > 0)
        ds__mem_remember(base, size);
}

#define HOST_FLAGS_ALLOWED \
    (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)

/* Page-locked host memory comes from the arena shared with the executor when there is
 * one (local tenants), so that the device can be given it (cuMemHostGetDevicePointer);
 * otherwise it is the tenant's own, and copies from it travel like any host copy. */
/* 1 when p lies in a cuMemHostAlloc allocation, with *flags its flags. */
static int pinned_flags(const void *p, unsigned *flags)
{
    const struct ds_memtab_entry *e;

    pthread_mutex_lock(&lock);
    e = pinned(p);
    if (e != NULL)
        *flags = (unsigned)e->owner;
    pthread_mutex_unlock(&lock);
    return e != NULL;
}

CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
    struct ds_memtab_entry e = { .size = size, .owner = flags };
    ds_handle ctx;
    void *p = NULL;
    CUresult rc;

    DS_NEED_INIT();
    if (pp == NULL || size == 0 || (flags & ~(unsigned)HOST_FLAGS_ALLOWED) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&ctx)) != CUDA_SUCCESS)
        return rc;
    p = ds__arena_take(size);
    if (p == NULL) {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            p = NULL;
        else
            mlock(p, size); /* best effort: RLIMIT_MEMLOCK may forbid it */
    }
    e.base = (uint64_t)(uintptr_t)p;
    ds__hostreg_on_pinned(pinned_flags);
    pthread_mutex_lock(&lock);
    rc = p == NULL || ds_memtab_insert(&host_mem, &e) != 0 ? CUDA_ERROR_OUT_OF_MEMORY
                                                           : CUDA_SUCCESS;
    pthread_mutex_unlock(&lock);
    if (rc != CUDA_SUCCESS) {
        if (ds__arena_holds(p))
            ds__arena_give(p);
        else if (p != NULL)
            munmap(p, size);
        return rc;
    }
    if (ds__arena_holds(p))
        map_now(p);
    *pp = p;
    return CUDA_SUCCESS;
}

static ds_host_map_args arena_part(const struct ds_memtab_entry *e)
{
    ds_host_map_args a = { .offset = e->base - ds__arena_base(),
                           .size = (e->size + 4095) & ~4095ull };

    return a;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned int flags)
{
    static atomic_int once;
    const struct ds_memtab_entry *e;
    ds_host_map_args a;
    ds_alloc_res r;
    uint64_t base, mapped_size = 0;
    CUresult rc = CUDA_SUCCESS;

    DS_NEED_INIT();
    if (dptr == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__hostreg_device(p, &base, &rc)) {
        *dptr = base;
        return rc;
    }
    pthread_mutex_lock(&lock);
    e = pinned(p);
    if (e == NULL) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (!ds__arena_holds((void *)(uintptr_t)e->base)) {
        rc = ds__unsupported("cuMemHostGetDevicePointer without a Unix-socket connection",
                             &once);
    } else if (e->data == NULL) {
        a = arena_part(e);
        rc = ds_rpc_host_map(&a, &r);
        if (rc == CUDA_SUCCESS) {
            ((struct ds_memtab_entry *)e)->data = (void *)(uintptr_t)r.ds_alloc_res_u.ptr;
            mapped_size = e->size;
        }
    }
    if (rc == CUDA_SUCCESS) {
        base = (uint64_t)(uintptr_t)e->data;
        *dptr = base + ((uint64_t)(uintptr_t)p - e->base);
    }
    pthread_mutex_unlock(&lock);
    /* Outside the lock, which ds__mem_remember takes itself. */
    if (mapped_size > 0)
        ds__mem_remember(base, mapped_size);
    return rc;
}

CUresult cuMemAllocHost_v2(void **pp, size_t size)
{
    return cuMemHostAlloc(pp, size, 0);
}

CUresult cuMemFreeHost(void *p)
{
    struct ds_memtab_entry e;
    ds_host_map_args a;
    ds_void_res r;
    int rc;

    DS_NEED_INIT();
    pthread_mutex_lock(&lock);
    rc = pinned(p) != NULL ? ds_memtab_remove(&host_mem, (uint64_t)(uintptr_t)p, &e) : DS_ERANGE;
    if (rc == 0 && e.data != NULL) {
        a = arena_part(&e);
        ds_rpc_host_unmap(&a, &r);
        ds__mem_drop((uint64_t)(uintptr_t)e.data);
    }
    pthread_mutex_unlock(&lock);
    if (rc != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__arena_holds(p))
        ds__arena_give(p);
    else
        munmap(p, e.size);
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    DS_NEED_INIT();
    if (flags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return pinned_flags(p, flags) || ds__hostreg_flags(p, flags) ? CUDA_SUCCESS
                                                                 : CUDA_ERROR_INVALID_VALUE;
}

/* ---- pointer attributes, answered from what this process allocated ---- */

/* What the client knows of one address. */
struct ptr_info {
    unsigned type; /* CUmemorytype, 0 when the address is none of ours */
    uint64_t base, size;
    uint64_t dev;  /* the device address of this byte, 0 when there is none */
    void *host;    /* the host address of this byte, NULL when there is none */
    uint64_t pool; /* the memory pool it was allocated from, 0 when none */
    int managed;
    unsigned sync_memops; /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS as set */
};

static struct ptr_info ptr_info(uint64_t p)
{
    struct ptr_info i = { 0 };
    const struct ds_memtab_entry *e;

    if (ds__managed_range(p, &i.base, &i.size)) {
        /* One pointer for both sides; the driver calls it device memory and says
         * IS_MANAGED. */
        i.type = CU_MEMORYTYPE_DEVICE;
        i.dev = p;
        i.host = (void *)(uintptr_t)p;
        i.managed = 1;
        return i;
    }
    if (ds__hostreg_range(p, &i.base, &i.size)) {
        i.type = CU_MEMORYTYPE_HOST;
        i.host = (void *)(uintptr_t)p;
        ds__hostreg_device((void *)(uintptr_t)p, &i.dev, NULL);
        return i;
    }
    pthread_mutex_lock(&lock);
    if ((e = pinned((void *)(uintptr_t)p)) != NULL) {
        i.type = CU_MEMORYTYPE_HOST;
        i.base = e->base;
        i.size = e->size;
        i.host = (void *)(uintptr_t)p;
        if (e->data != NULL)
            i.dev = (uint64_t)(uintptr_t)e->data + (p - e->base);
    }
    pthread_mutex_unlock(&lock);
    if (e == NULL && ds__mem_range(p, &i.base, &i.size, &i.pool, &i.sync_memops)) {
        i.type = CU_MEMORYTYPE_DEVICE;
        i.dev = p;
    }
    return i;
}

/* The device of an address of ours: the one whose server allocated it, else (host
 * memory, which every device of the tenant maps) the current context's. */
static int device_of(const struct ptr_info *i)
{
    int dev = ds__mem_device_of(i->dev);

    return dev >= 0 ? dev : ds__route_current();
}

/* One attribute into data; CUDA_ERROR_INVALID_VALUE when the address has no such thing
 * (cuPointerGetAttribute's answer), CUDA_ERROR_NOT_SUPPORTED for attributes not kept. */
static CUresult one_attribute(const struct ptr_info *i, CUpointer_attribute attr, void *data)
{
    static atomic_int once;
    int ours = i->type != 0;

    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = ours ? (CUcontext)(uintptr_t)ds__rpc_primary(device_of(i)) : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = i->type;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = i->dev;
        return i->dev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(void **)data = i->host;
        return i->host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned *)data = (unsigned)i->managed;
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(unsigned *)data = i->sync_memops;
        break;
    /* What the H100's driver answered for cuMemAlloc memory and for page-locked host
     * memory (run 50; VMM mappings and module globals are answered as cuMemAlloc
     * memory here). */
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        *(unsigned *)data = i->type == CU_MEMORYTYPE_DEVICE && !i->managed;
        break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *(unsigned *)data = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = (CUmemoryPool)(uintptr_t)i->pool;
        break;
    /* The driver maps page-locked memory in 2 MiB pieces and says so here (a 1 MiB
     * allocation answered 2 MiB); the allocation itself is answered. */
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *(size_t *)data = i->size;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *(CUdeviceptr *)data = i->base;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned *)data = ours;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = ours ? device_of(i) : -2;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = i->base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = i->size;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        /* Unique for the allocation's lifetime; its base address serves. */
        *(unsigned long long *)data = i->base;
        break;
    default:
        return ds__unsupported("cuPointerGetAttribute of this attribute", &once);
    }
    return ours ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p)
{
    struct ptr_info i;

    DS_NEED_INIT();
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    i = ptr_info(p);
    return one_attribute(&i, attr, data);
}

/* SYNC_MEMOPS, the one settable attribute, on device memory: detshare's synchronous
 * copies and fills always complete before they return, so the allocation behaves as the
 * flag asks either way; what was set reads back. */
CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attr, CUdeviceptr p)
{
    DS_NEED_INIT();
    if (value == NULL || attr != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    return ds__mem_set_sync_memops(p, *(const unsigned *)value != 0) ? CUDA_SUCCESS
                                                                      : CUDA_ERROR_INVALID_VALUE;
}

/* Unlike the single form, an address that is none of ours is not an error here: its
 * attributes read as zero, as CUDA documents. */
CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                CUdeviceptr p)
{
    struct ptr_info i;
    CUresult rc;

    DS_NEED_INIT();
    if (n == 0 || attrs == NULL || data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    i = ptr_info(p);
    for (unsigned k = 0; k < n; k++) {
        if (data[k] == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        rc = one_attribute(&i, attrs[k], data[k]);
        if (rc == CUDA_ERROR_NOT_SUPPORTED)
            return rc;
    }
    return CUDA_SUCCESS;
}
