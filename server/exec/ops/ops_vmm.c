/*
 * Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess
 * and the rest), as JAX/XLA and PyTorch's expandable segments use it.
 *
 * The tenant's reservations (t->vmm_va) and mappings (t->vmm_maps, owner = the physical
 * allocation's handle) are kept here; every range, offset and handle a call names is
 * checked against them before the backend sees it.  A mapping becomes device memory for
 * copies, fills and launch attributes (an entry in t->mem) once cuMemSetAccess gives the
 * device access to it, as on a GPU, where a mapping starts inaccessible; contiguous
 * mappings inside one reservation count as one range (ds__tenant_range), so a copy
 * may cross from one physical allocation into the next, as it does on a GPU.
 */
#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A physical allocation.  Its handle stays valid while the tenant holds a reference
 * (cuMemCreate, cuMemRetainAllocationHandle) and also, unusable, while a mapping of it
 * remains: CUDA frees the memory only once both are gone, and a retain by address gives
 * back the same handle.
 */
struct vpmem {
    uint64_t size;
    uint64_t gran; /* the minimum granularity: mappings' addresses, sizes and offsets */
    CUmemAllocationProp prop; /* as made */
    int handle_types;         /* as asked for (check_prop) */
    unsigned refs, maps;
    struct ds_bpmem *real;
};

static CUresult not_served(const char *what, int *once)
{
    if (!*once) {
        *once = 1;
        ds_warn("%s: not served through detshare (CUDA_ERROR_NOT_SUPPORTED)", what);
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}

/*
 * The tenant's allocation properties, checked, as a CUmemAllocationProp for the backend.
 * Only device memory of the tenant's one device is served.  Shareable handle types that
 * Linux knows are accepted, for PyTorch asks for POSIX descriptors on every expandable
 * segment, but the memory is made without them: exporting it
 * (cuMemExportToShareableHandle) is not served, since a descriptor or fabric handle of
 * the executor would hand the tenant's memory to another process.
 */
static CUresult check_prop(const ds_vmm_prop *p, CUmemAllocationProp *out)
{
    static int host_once, win32_once, export_once;
    const unsigned linux_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC;
    const unsigned win32_types = CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT;
    unsigned types = (unsigned)p->handle_types;

    memset(out, 0, sizeof(*out));
    if (p->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->loc_type == CU_MEM_LOCATION_TYPE_HOST || p->loc_type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
        return not_served("cuMemCreate of host memory", &host_once);
    if (p->loc_type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->loc_id != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if ((types & win32_types) != 0)
        return not_served("cuMemCreate with Windows handle types", &win32_once);
    if ((types & ~linux_types) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (types != 0 && !export_once) {
        export_once = 1;
        ds_info("cuMemCreate with shareable handle types: the memory is made, exporting it "
                "is not served through detshare");
    }
    if (p->compression > CU_MEM_ALLOCATION_COMP_GENERIC || p->rdma > 1 ||
        (p->usage & ~(unsigned)(CU_MEM_CREATE_USAGE_TILE_POOL | CU_MEM_CREATE_USAGE_HW_DECOMPRESS)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    out->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    out->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    out->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    out->location.id = 0;
    out->allocFlags.compressionType = (unsigned char)p->compression;
    out->allocFlags.gpuDirectRDMACapable = (unsigned char)p->rdma;
    out->allocFlags.usage = (unsigned short)p->usage;
    return CUDA_SUCCESS;
}

/* The backend's minimum granularity for p; never 0, which would make every check pass. */
static int min_granularity(struct ds_tenant *t, const CUmemAllocationProp *p, uint64_t *gran)
{
    int rc = t->ops->vmm_granularity(t->be, p, 0, gran);

    return rc == 0 && *gran == 0 ? DS_EDEVICE : rc;
}

/* The allocation behind h while the tenant holds a reference to it, else NULL. */
static struct vpmem *held(struct ds_tenant *t, uint64_t h)
{
    struct vpmem *m = ds_handles_get(&t->h, h, DS_H_VMEM);

    return m != NULL && m->refs > 0 ? m : NULL;
}

static void drop_if_unused(struct ds_tenant *t, uint64_t h, struct vpmem *m)
{
    if (m->refs > 0 || m->maps > 0)
        return;
    ds_handles_remove(&t->h, h, DS_H_VMEM);
    t->ops->vmm_release(t->be, m->real);
    ds__account_give(&t->acct, DS_MEM_VMM, m->size);
    free(m);
}

/* The index of the first of the mappings that exactly tile [addr, addr+size) in *first,
 * and how many they are; 0 when the range does not start and end on mapping boundaries
 * with every byte between mapped.  CUDA unmaps and sets access only on whole mappings. */
static size_t whole_mappings(const struct ds_tenant *t, uint64_t addr, uint64_t size,
                             size_t *first)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&t->vmm_maps, addr, 0);
    uint64_t covered = 0;

    if (e == NULL || e->base != addr || size == 0)
        return 0;
    *first = (size_t)(e - t->vmm_maps.v);
    for (size_t i = *first; i < t->vmm_maps.n; i++) {
        e = &t->vmm_maps.v[i];
        if (e->base - addr != covered || e->size > size - covered)
            return 0;
        covered += e->size;
        if (covered == size)
            return i - *first + 1;
    }
    return 0;
}

/* Mapping i of t->vmm_maps goes: its device range, the backend's mapping, and the
 * allocation too when nothing else holds it. */
static void unmap_one(struct ds_tenant *t, size_t i)
{
    struct ds_memtab_entry e = t->vmm_maps.v[i];
    struct vpmem *m = ds_handles_get(&t->h, e.owner, DS_H_VMEM);

    ds_memtab_remove(&t->mem, e.base, NULL); /* when accessible */
    t->ops->vmm_unmap(t->be, e.base, e.size);
    ds_memtab_remove(&t->vmm_maps, e.base, NULL);
    m->maps--;
    drop_if_unused(t, e.owner, m);
}

void ds__ops_vmm_fini(struct ds_tenant *t)
{
    uint32_t cur = 0;
    uint64_t h;

    while (t->vmm_maps.n > 0)
        unmap_one(t, 0);
    while (t->vmm_va.n > 0) {
        t->ops->vmm_free(t->be, t->vmm_va.v[0].base, t->vmm_va.v[0].size);
        ds_memtab_remove(&t->vmm_va, t->vmm_va.v[0].base, NULL);
    }
    while ((h = ds_handles_next(&t->h, DS_H_VMEM, &cur)) != 0) {
        struct vpmem *m = ds_handles_get(&t->h, h, DS_H_VMEM);

        m->refs = 0;
        drop_if_unused(t, h, m);
    }
}

CUresult ds__ops_vmm_granularity(struct ds_tenant *t, const ds_vmm_granularity_args *a,
                                 ds_hyper_res *r)
{
    CUmemAllocationProp p;
    CUresult rc;

    if (a->option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
        a->option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = check_prop(&a->prop, &p)) != CUDA_SUCCESS)
        return rc;
    return ds_error_to_cu(t->ops->vmm_granularity(
        t->be, &p, a->option == CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, &r->ds_hyper_res_u.value));
}

CUresult ds__ops_vmm_reserve(struct ds_tenant *t, const ds_vmm_reserve_args *a, ds_alloc_res *r)
{
    struct ds_memtab_entry e = { .size = a->size };
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    int rc;

    if (a->flags != 0 || a->size == 0 || a->size % page != 0 || a->hint % page != 0 ||
        (a->alignment & (a->alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = t->ops->vmm_reserve(t->be, a->size, a->alignment, a->hint, &e.base);
    if (rc != 0)
        return ds_error_to_cu(rc);
    rc = ds_memtab_insert(&t->vmm_va, &e);
    if (rc != 0) {
        t->ops->vmm_free(t->be, e.base, e.size);
        return ds_error_to_cu(rc == DS_ENOMEM ? rc : DS_EDEVICE);
    }
    r->ds_alloc_res_u.ptr = e.base;
    return CUDA_SUCCESS;
}

/*
 * CUDA asks for a reservation's mappings to be unmapped first and does not say what
 * becomes of those left; they go with it here, so that nothing stays mapped at an
 * address that is no longer reserved.
 */
CUresult ds__ops_vmm_address_free(struct ds_tenant *t, const ds_range *a, ds_void_res *r)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&t->vmm_va, a->base, 0);
    const struct ds_memtab_entry *m;

    (void)r;
    if (e == NULL || e->base != a->base || e->size != a->size)
        return CUDA_ERROR_INVALID_VALUE;
    while ((m = ds_memtab_overlap(&t->vmm_maps, a->base, a->size)) != NULL)
        unmap_one(t, (size_t)(m - t->vmm_maps.v));
    t->ops->vmm_free(t->be, a->base, a->size);
    ds_memtab_remove(&t->vmm_va, a->base, NULL);
    return CUDA_SUCCESS;
}

CUresult ds__ops_vmm_create(struct ds_tenant *t, const ds_vmm_create_args *a, ds_handle_res *r)
{
    struct vpmem *m;
    CUmemAllocationProp p;
    uint64_t gran, h;
    CUresult rc;
    int err;

    if (a->flags != 0 || a->size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = check_prop(&a->prop, &p)) != CUDA_SUCCESS)
        return rc;
    if ((err = min_granularity(t, &p, &gran)) != 0)
        return ds_error_to_cu(err);
    if (a->size % gran != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__account_take(&t->acct, DS_MEM_VMM, a->size) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m = calloc(1, sizeof(*m));
    err = m == NULL ? DS_ENOMEM : t->ops->vmm_create(t->be, a->size, &p, &m->real);
    if (err != 0) {
        free(m);
        ds__account_give(&t->acct, DS_MEM_VMM, a->size);
        return ds_error_to_cu(err);
    }
    m->size = a->size;
    m->gran = gran;
    m->prop = p;
    m->handle_types = a->prop.handle_types;
    m->refs = 1;
    h = ds_handles_add(&t->h, DS_H_VMEM, m);
    if (h == 0) {
        t->ops->vmm_release(t->be, m->real);
        free(m);
        ds__account_give(&t->acct, DS_MEM_VMM, a->size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->ds_handle_res_u.handle = h;
    return CUDA_SUCCESS;
}

CUresult ds__ops_vmm_release(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct vpmem *m = held(t, *h);

    (void)r;
    if (m == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    m->refs--;
    drop_if_unused(t, *h, m);
    return CUDA_SUCCESS;
}

CUresult ds__ops_vmm_map(struct ds_tenant *t, const ds_vmm_map_args *a, ds_void_res *r)
{
    struct ds_memtab_entry e = { .base = a->ptr, .size = a->size, .owner = a->handle };
    struct vpmem *m = held(t, a->handle);
    int rc;

    (void)r;
    if (m == NULL || a->flags != 0 || a->size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (((a->ptr | a->size | a->offset) % m->gran) != 0 || a->offset > m->size ||
        a->size > m->size - a->offset)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds_memtab_find(&t->vmm_va, a->ptr, a->size) == NULL ||
        ds_memtab_overlap(&t->vmm_maps, a->ptr, a->size) != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    /* The H100's driver (580) refuses to map part of an allocation, and CUDA documents
     * the offset as "currently must be zero": both backends answer alike. */
    if (a->offset != 0 || a->size != m->size)
        return CUDA_ERROR_NOT_SUPPORTED;
    if ((rc = ds_memtab_insert(&t->vmm_maps, &e)) != 0)
        return ds_error_to_cu(rc);
    rc = t->ops->vmm_map(t->be, a->ptr, a->size, m->real, a->offset);
    if (rc != 0) {
        ds_memtab_remove(&t->vmm_maps, a->ptr, NULL);
        return ds_error_to_cu(rc);
    }
    m->maps++;
    return CUDA_SUCCESS;
}

CUresult ds__ops_vmm_unmap(struct ds_tenant *t, const ds_range *a, ds_void_res *r)
{
    size_t first, n = whole_mappings(t, a->base, a->size, &first);

    (void)r;
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    while (n-- > 0)
        unmap_one(t, first);
    return CUDA_SUCCESS;
}

/* A location of cuMemSetAccess or cuMemGetAccess: CUDA_SUCCESS for the tenant's device,
 * else the CUresult that refuses it. */
static CUresult check_access(int loc_type, int loc_id)
{
    if (loc_type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    return loc_id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* Read-only mappings count as device memory for copies in both directions: a write into
 * one fails on a GPU as the driver decides, and on the sim lands in the tenant's own
 * memory. */
CUresult ds__ops_vmm_set_access(struct ds_tenant *t, const ds_vmm_set_access_args *a,
                                ds_void_res *r)
{
    unsigned flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    size_t first, n;
    CUresult rc;
    int err;

    (void)r;
    if (a->desc.desc_len == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (u_int i = 0; i < a->desc.desc_len; i++) {
        const ds_vmm_access *d = &a->desc.desc_val[i];

        if ((rc = check_access(d->loc_type, d->loc_id)) != CUDA_SUCCESS)
            return rc;
        if (d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d->flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
        flags = d->flags;
    }
    n = whole_mappings(t, a->ptr, a->size, &first);
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((err = t->ops->vmm_set_access(t->be, a->ptr, a->size, flags)) != 0)
        return ds_error_to_cu(err);
    for (size_t i = first; i < first + n; i++) {
        const struct ds_memtab_entry *map = &t->vmm_maps.v[i];
        struct ds_memtab_entry dev = { .base = map->base, .size = map->size,
                                       .owner = map->owner,
                                       .kind = flags == CU_MEM_ACCESS_FLAGS_PROT_READ
                                                   ? DS_RANGE_VMM_READ
                                                   : DS_RANGE_VMM_RW };

        ds_memtab_remove(&t->mem, map->base, NULL);
        if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && (err = ds_memtab_insert(&t->mem, &dev)) != 0)
            return ds_error_to_cu(err);
    }
    return CUDA_SUCCESS;
}

CUresult ds__ops_vmm_get_access(struct ds_tenant *t, const ds_vmm_get_access_args *a,
                                ds_hyper_res *r)
{
    const struct ds_memtab_entry *e;
    CUresult rc;

    if ((rc = check_access(a->loc_type, a->loc_id)) != CUDA_SUCCESS)
        return rc;
    if (ds_memtab_find(&t->vmm_maps, a->ptr, 0) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    e = ds_memtab_find(&t->mem, a->ptr, 0);
    r->ds_hyper_res_u.value = e == NULL            ? CU_MEM_ACCESS_FLAGS_PROT_NONE
                              : e->kind == DS_RANGE_VMM_RW ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                                    : CU_MEM_ACCESS_FLAGS_PROT_READ;
    return CUDA_SUCCESS;
}

CUresult ds__ops_vmm_get_prop(struct ds_tenant *t, const ds_handle *h, ds_vmm_prop_res *r)
{
    const struct vpmem *m = held(t, *h);
    ds_vmm_prop *p = &r->ds_vmm_prop_res_u.prop;

    if (m == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    p->type = m->prop.type;
    p->handle_types = m->handle_types;
    p->loc_type = m->prop.location.type;
    p->loc_id = m->prop.location.id;
    p->compression = m->prop.allocFlags.compressionType;
    p->rdma = m->prop.allocFlags.gpuDirectRDMACapable;
    p->usage = m->prop.allocFlags.usage;
    return CUDA_SUCCESS;
}

CUresult ds__ops_vmm_retain(struct ds_tenant *t, const ds_dptr *p, ds_handle_res *r)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&t->vmm_maps, *p, 0);
    struct vpmem *m;

    if (e == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    m = ds_handles_get(&t->h, e->owner, DS_H_VMEM);
    if (m->refs == UINT_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    m->refs++;
    r->ds_handle_res_u.handle = e->owner;
    return CUDA_SUCCESS;
}
