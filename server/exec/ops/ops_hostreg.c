/*
 * Registered host memory and managed memory of a local tenant.  Both are parts of the
 * tenant's arena (a memfd both processes map) that the tenant also maps at an address of
 * its own choosing: for cuMemHostRegister, where its registered pages were (their bytes
 * moved onto the arena); for cuMemAllocManaged, where the arena itself lies.  The executor
 * maps the same part at the same address when that range is free here, so that the
 * address the tenant holds is the one the device is given (unified addressing), and
 * registers it with the device.  ds_vamap_at never replaces anything of this process,
 * so a hostile address costs only a refusal or an address of the arena's.
 *
 * When the tenant's address is taken here, the device reaches the pages only at another
 * address, which cuMemHostGetDevicePointer and the pointer attributes then give: a
 * registration stays correct for copies and for kernels handed the device pointer, as
 * CUDA's API says to get it, but a kernel handed the host pointer itself (natively the
 * same under unified addressing) would touch whatever this process has there, so the
 * first such registration is a warning naming the address.  It is not refused: most
 * programs register memory only to copy it fast, and they would fail for nothing.  The
 * client keeps the tenant's memory out of the driver's reservations here
 * (client/transport/vaspace.h), so what is left to collide is this process's own
 * libraries, stacks and heap (and, in sanitizer builds, the allocator regions every
 * process has at the same addresses).  Managed memory is one pointer by definition: it
 * is refused instead.
 */
#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"
#include "ds_vamap.h"

#include <stdatomic.h>
#include <sys/mman.h>

#define PAGE 4096ull

static int bad_request(const struct ds_tenant *t, const ds_host_register_args *a)
{
    return !ds_vamap_user_range(a->addr, a->size) || a->offset % PAGE != 0 ||
           a->offset > t->arena_len || a->size > t->arena_len - a->offset;
}

/* This process's view of the arena part, at the tenant's address when it can be: the
 * arena's own mapping when that is already there, else a mapping of the part made here
 * (*own), else the arena's mapping at another address (the device address then differs
 * from the tenant's: elsewhere). */
static unsigned char *place(struct ds_tenant *t, const ds_host_register_args *a, int *own)
{
    unsigned char *in_arena = t->arena + a->offset;
    void *p;

    *own = 0;
    if (in_arena == (void *)(uintptr_t)a->addr || t->arena_fd < 0)
        return in_arena;
    p = ds_vamap_at(a->addr, a->size, PROT_READ | PROT_WRITE, MAP_SHARED, t->arena_fd,
                    (off_t)a->offset);
    if (p == MAP_FAILED)
        return in_arena;
    *own = 1;
    return p;
}

/* Give the arena part to the device as `use`; its device range goes into t->mem as
 * `kind`.  The device address is in *dev. */
static CUresult give(struct ds_tenant *t, const ds_host_register_args *a, enum ds_host_use use,
                     enum ds_range_kind kind, uint64_t *dev)
{
    struct ds_memtab_entry map = { .base = a->offset, .size = a->size, .kind = use };
    struct ds_memtab_entry range = { .size = a->size, .kind = kind, .owner = a->offset };
    unsigned char *host;
    int own, rc;

    host = place(t, a, &own);
    rc = t->ops->host_map(t->be, host, a->size, &range.base);
    if (rc != 0) {
        if (own)
            munmap(host, a->size);
        return ds_error_to_cu(rc);
    }
    map.owner = range.base;
    map.data = own ? host : NULL;
    if (ds_memtab_insert(&t->host_maps, &map) != 0 || ds_memtab_insert(&t->mem, &range) != 0) {
        ds_memtab_remove(&t->host_maps, a->offset, NULL);
        t->ops->host_unmap(t->be, range.base, host);
        if (own)
            munmap(host, a->size);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *dev = range.base;
    return CUDA_SUCCESS;
}

/* The device reaches the arena part given as *a only at dev, not at the tenant's address.
 * The first time is a warning naming both, later ones are debug lines. */
static void elsewhere(const ds_host_register_args *a, uint64_t dev, const char *what)
{
    static atomic_int once;

    if (atomic_exchange(&once, 1) == 0)
        ds_warn("the tenant's address %#llx is taken in its executor: the device reaches its "
                "pages at %#llx, %s",
                (unsigned long long)a->addr, (unsigned long long)dev, what);
    else
        ds_debug("the tenant's address %#llx is taken in its executor (device address %#llx)",
                 (unsigned long long)a->addr, (unsigned long long)dev);
}

static CUresult checked(struct ds_tenant *t, const ds_host_register_args *a)
{
    if (t->arena == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (bad_request(t, a))
        return CUDA_ERROR_INVALID_VALUE;
    if (ds_memtab_overlap(&t->host_maps, a->offset, a->size) != NULL)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return CUDA_SUCCESS;
}

#define REGISTER_FLAGS                                                                   \
    (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY)

CUresult ds__ops_host_register(struct ds_tenant *t, const ds_host_register_args *a,
                               ds_alloc_res *r)
{
    CUresult rc = checked(t, a);

    if (rc != CUDA_SUCCESS)
        return rc;
    if ((a->flags & ~(unsigned)REGISTER_FLAGS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = give(t, a, DS_HOST_REGISTERED, DS_RANGE_HOST, &r->ds_alloc_res_u.ptr);
    if (rc == CUDA_SUCCESS && r->ds_alloc_res_u.ptr != a->addr)
        elsewhere(a, r->ds_alloc_res_u.ptr,
                  "and a kernel handed the host pointer instead would touch the wrong memory");
    return rc;
}

/* Managed memory is one pointer for the host and the device: when the device cannot
 * reach the arena part at the tenant's address, there is no managed memory to give. */
CUresult ds__ops_mem_alloc_managed(struct ds_tenant *t, const ds_host_register_args *a,
                                   ds_alloc_res *r)
{
    uint64_t dev;
    CUresult rc = checked(t, a);

    if (rc != CUDA_SUCCESS)
        return rc;
    if (a->flags != CU_MEM_ATTACH_GLOBAL && a->flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__account_take(&t->acct, DS_MEM_MANAGED, a->size) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    rc = give(t, a, DS_HOST_MANAGED, DS_RANGE_MANAGED, &dev);
    if (rc != CUDA_SUCCESS) {
        ds__account_give(&t->acct, DS_MEM_MANAGED, a->size);
        return rc;
    }
    if (dev != a->addr) {
        elsewhere(a, dev, "so managed memory is refused (CUDA_ERROR_NOT_SUPPORTED)");
        ds__tenant_host_unmap(t, ds_memtab_find(&t->host_maps, a->offset, 0));
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    r->ds_alloc_res_u.ptr = dev;
    return CUDA_SUCCESS;
}
