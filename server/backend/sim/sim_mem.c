/*
 * The sim device's memory: device-like addresses in the tenant's own region, each
 * allocation a memfd mapping counted in the control block's accounting.  The region is
 * address space this process reserves, as the CUDA driver reserves what its device
 * addresses come from in the process it runs in: no mapping of the executor lands there,
 * and the executor lists it for its tenant at hello like a GPU's (docs/memory.md).
 */
#include "sim_core.h"

#include "ds_error.h"
#include "shm.h"

#include <sys/mman.h>

/* Wherever the kernel puts it, in the same top-down area as the driver's reservations on
 * a GPU, and so where a tenant's own mappings would land unless it reserves the range. */
int ds__sim_mem_open(struct ds_backend *b)
{
    void *p = mmap(NULL, SIM_VA_REGION, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);

    if (p == MAP_FAILED)
        return DS_ENOMEM;
    b->va_base = (uint64_t)(uintptr_t)p;
    b->va_end = b->va_base + SIM_VA_REGION;
    return 0;
}

void ds__sim_mem_close(struct ds_backend *b)
{
    munmap((void *)(uintptr_t)b->va_base, SIM_VA_REGION);
}

/* First fit in this tenant's address region; allocations are few, so a scan is fine. */
static int find_va(struct ds_backend *b, uint64_t size, uint64_t *addr)
{
    return ds_memtab_first_fit(&b->mem, b->va_base, b->va_end, size, SIM_VA_ALIGN, addr);
}

int ds__sim_dev_alloc(struct ds_backend *b, uint64_t size, int capture_mode, uint64_t *addr)
{
    struct ds_memtab_entry e = { .size = size };
    int rc;

    (void)capture_mode; /* the sim captures one stream's work and never refuses these */
    if (ds_shm_sim_reserve(b->cfg.shm, b->cfg.slot, size) != 0)
        return DS_ENOMEM;
    rc = find_va(b, size, &e.base);
    if (rc == 0) {
        /* NORESERVE: untouched device memory costs the host nothing. */
        e.data = mmap(NULL, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        rc = e.data == MAP_FAILED ? DS_ENOMEM : ds_memtab_insert(&b->mem, &e);
        if (rc != 0 && e.data != MAP_FAILED)
            munmap(e.data, size);
    }
    if (rc != 0) {
        ds_shm_sim_release(b->cfg.shm, b->cfg.slot, size);
        return rc;
    }
    *addr = e.base;
    return 0;
}

int ds__sim_dev_free(struct ds_backend *b, uint64_t addr)
{
    struct ds_memtab_entry e;
    int rc = ds_memtab_remove(&b->mem, addr, &e);

    if (rc != 0)
        return rc;
    ds__sim_ipc_unshare(b, addr);
    munmap(e.data, e.size);
    ds_shm_sim_release(b->cfg.shm, b->cfg.slot, e.size);
    return 0;
}

/* Arena pages become device memory at their host address, as under unified addressing
 * on a GPU, or at an address of their own when that one is taken; the entry's owner
 * marks them as the tenant's (never unmapped or accounted here). */
int ds__sim_dev_alloc_pitch(struct ds_backend *b, uint64_t width, uint64_t height,
                            unsigned elem_size, int capture_mode, uint64_t *addr,
                            uint64_t *pitch)
{
    uint64_t p;

    (void)elem_size; /* the driver's hint for coalescing; the sim has none to make */
    if (width > UINT64_MAX - (SIM_PITCH_ALIGN - 1))
        return DS_EINVAL;
    p = (width + SIM_PITCH_ALIGN - 1) / SIM_PITCH_ALIGN * SIM_PITCH_ALIGN;
    if (height > UINT64_MAX / p)
        return DS_EINVAL;
    *pitch = p;
    return ds__sim_dev_alloc(b, p * height, capture_mode, addr);
}

int ds__sim_host_map(struct ds_backend *b, void *host, uint64_t size, uint64_t *addr)
{
    struct ds_memtab_entry e = { .base = (uint64_t)(uintptr_t)host, .size = size,
                                 .data = host, .owner = SIM_HOST_PAGES };
    int rc = ds_memtab_insert(&b->mem, &e);

    if (rc != 0 && (rc = find_va(b, size, &e.base)) == 0)
        rc = ds_memtab_insert(&b->mem, &e);
    if (rc == 0)
        *addr = e.base;
    return rc;
}

void ds__sim_host_unmap(struct ds_backend *b, uint64_t addr, void *host)
{
    (void)host;
    ds_memtab_remove(&b->mem, addr, NULL);
}

void ds__sim_dev_info(struct ds_backend *b, uint64_t *free_bytes, uint64_t *total)
{
    uint64_t used = ds_shm_sim_used(b->cfg.shm);

    *total = b->cfg.shm->sim_mem_total;
    *free_bytes = used < *total ? *total - used : 0;
}
