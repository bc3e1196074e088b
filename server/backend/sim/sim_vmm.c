/*
 * The sim's virtual memory management.  A reservation is a range of the tenant's sim
 * addresses (one entry of b->mem, owner SIM_VMM_VA) backed by as much host address space
 * reserved with PROT_NONE; a physical allocation is a memfd; a mapping maps that memfd,
 * MAP_FIXED and shared, over its part of the reserved host range.  So the host memory
 * behind a reservation is contiguous exactly as its device addresses are, and a copy
 * that crosses from one physical allocation into the next (PyTorch's expandable
 * segments) is one memmove, through ds__sim_host_of like any other.
 */
#include "sim_core.h"

#include "ds_error.h"
#include "shm.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct ds_bpmem {
    int fd;
    uint64_t size;
};

/* The reservation that holds [addr, addr+n), which the executor has checked. */
static unsigned char *host_of_reserved(struct ds_backend *b, uint64_t addr, uint64_t n)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&b->mem, addr, n);

    return (unsigned char *)e->data + (addr - e->base);
}

int ds__sim_vmm_granularity(struct ds_backend *b, const CUmemAllocationProp *prop,
                            int recommended, uint64_t *out)
{
    (void)b;
    (void)prop;
    (void)recommended;
    *out = SIM_VMM_GRANULARITY;
    return 0;
}

/* Aligned to the granularity at least, so that every granule of a reservation can be
 * mapped. */
int ds__sim_vmm_reserve(struct ds_backend *b, uint64_t size, uint64_t align, uint64_t hint,
                        uint64_t *addr)
{
    struct ds_memtab_entry e = { .size = size, .owner = SIM_VMM_VA };
    int rc;

    align = align > SIM_VMM_GRANULARITY ? align : SIM_VMM_GRANULARITY;
    if (hint != 0 && hint % align == 0 && hint >= b->va_base && hint < b->va_end &&
        size <= b->va_end - hint && ds_memtab_overlap(&b->mem, hint, size) == NULL)
        e.base = hint;
    else if (ds_memtab_first_fit(&b->mem, b->va_base, b->va_end, size, align, &e.base) != 0)
        return DS_ENOMEM;
    e.data = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (e.data == MAP_FAILED)
        return DS_ENOMEM;
    rc = ds_memtab_insert(&b->mem, &e);
    if (rc != 0) {
        munmap(e.data, size);
        return rc;
    }
    *addr = e.base;
    return 0;
}

void ds__sim_vmm_free(struct ds_backend *b, uint64_t addr, uint64_t size)
{
    struct ds_memtab_entry e;

    (void)size;
    if (ds_memtab_remove(&b->mem, addr, &e) == 0)
        munmap(e.data, e.size);
}

/* Counted in the sim's device memory like cuMemAlloc's; pages cost the host nothing until
 * touched.  The sim compresses nothing. */
int ds__sim_vmm_create(struct ds_backend *b, uint64_t size, CUmemAllocationProp *prop,
                       struct ds_bpmem **out)
{
    struct ds_bpmem *m = malloc(sizeof(*m));

    if (m == NULL)
        return DS_ENOMEM;
    if (ds_shm_sim_reserve(b->cfg.shm, b->cfg.slot, size) != 0) {
        free(m);
        return DS_ENOMEM;
    }
    m->size = size;
    /* One descriptor per physical allocation, for as long as it lives: a framework that
     * grows its pool in 2 MiB pieces holds thousands. */
    m->fd = ds__sim_memfd("detshare-sim-vmm");
    if (m->fd < 0 || ftruncate(m->fd, (off_t)size) != 0) {
        if (m->fd >= 0)
            close(m->fd);
        ds_shm_sim_release(b->cfg.shm, b->cfg.slot, size);
        free(m);
        return DS_ENOMEM;
    }
    prop->allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_NONE;
    *out = m;
    return 0;
}

void ds__sim_vmm_release(struct ds_backend *b, struct ds_bpmem *m)
{
    close(m->fd);
    ds_shm_sim_release(b->cfg.shm, b->cfg.slot, m->size);
    free(m);
}

int ds__sim_vmm_map(struct ds_backend *b, uint64_t addr, uint64_t size, struct ds_bpmem *m,
                    uint64_t offset)
{
    struct ds_memtab_entry e = { .base = addr, .size = size };
    unsigned char *host = host_of_reserved(b, addr, size);
    int rc;

    if (mmap(host, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, m->fd,
             (off_t)offset) == MAP_FAILED)
        return DS_ENOMEM;
    rc = ds_memtab_insert(&b->vmm_maps, &e);
    if (rc != 0)
        ds__sim_vmm_unmap(b, addr, size);
    return rc;
}

/* The host range goes back to reserved address space, as the device range does. */
void ds__sim_vmm_unmap(struct ds_backend *b, uint64_t addr, uint64_t size)
{
    mmap(host_of_reserved(b, addr, size), size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    ds_memtab_remove(&b->vmm_maps, addr, NULL);
}

/* The executor keeps the tenant's access rights and checks every copy and fill against
 * them; the host mapping stays readable and writable for the executor's own memmove. */
int ds__sim_vmm_set_access(struct ds_backend *b, uint64_t addr, uint64_t size, unsigned flags)
{
    (void)b;
    (void)addr;
    (void)size;
    (void)flags;
    return 0;
}

int ds__sim_vmm_mapped(const struct ds_backend *b, uint64_t addr, uint64_t n)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&b->vmm_maps, addr, 0);
    uint64_t reach;

    while (e != NULL) {
        reach = e->base + e->size;
        if (n <= reach - addr)
            return 1;
        /* Only here is the table known not to be empty: NULL + 0 is undefined. */
        e = e + 1 < b->vmm_maps.v + b->vmm_maps.n && e[1].base == reach ? e + 1 : NULL;
    }
    return 0;
}
