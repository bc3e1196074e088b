#include "shm.h"

#include "ds_error.h"

#include <string.h>
#include <sys/mman.h>

struct ds_shm *ds_shm_map(uint64_t sim_mem_total)
{
    struct ds_shm *shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (shm == MAP_FAILED)
        return NULL;
    shm->version = DS_SHM_VERSION;
    shm->nslots = DS_SHM_SLOTS;
    shm->sim_mem_total = sim_mem_total;
    return shm;
}

void ds_shm_unmap(struct ds_shm *shm)
{
    munmap(shm, sizeof(*shm));
}

int ds_shm_slot_take(struct ds_shm *shm)
{
    for (int i = 0; i < (int)shm->nslots; i++) {
        unsigned expected = 0;

        if (atomic_compare_exchange_strong(&shm->slots[i].state, &expected, 1))
            return i;
    }
    return -1;
}

void ds_shm_slot_clear(struct ds_shm *shm, int idx)
{
    struct ds_shm_slot *s = &shm->slots[idx];

    atomic_store(&s->sim_mem_used, 0);
    s->pid = 0;
    memset(s->tenant, 0, sizeof(s->tenant));
    atomic_store(&s->state, 0);
}

uint64_t ds_shm_sim_used(const struct ds_shm *shm)
{
    uint64_t sum = 0;

    for (uint32_t i = 0; i < shm->nslots; i++)
        sum += atomic_load(&shm->slots[i].sim_mem_used);
    return sum;
}

int ds_shm_sim_reserve(struct ds_shm *shm, int idx, uint64_t size)
{
    atomic_uint_fast64_t *mine = &shm->slots[idx].sim_mem_used;

    if (size > shm->sim_mem_total)
        return DS_ENOMEM;
    atomic_fetch_add(mine, size);
    if (ds_shm_sim_used(shm) > shm->sim_mem_total) {
        atomic_fetch_sub(mine, size);
        return DS_ENOMEM;
    }
    return 0;
}

void ds_shm_sim_release(struct ds_shm *shm, int idx, uint64_t size)
{
    atomic_fetch_sub(&shm->slots[idx].sim_mem_used, size);
}
