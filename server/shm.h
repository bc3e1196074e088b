/*
 * The control block shared by the control process and every executor: one slot per
 * tenant.  It is an anonymous MAP_SHARED mapping made before the first fork, so it needs
 * no file and disappears with the server.  The control process owns slot assignment
 * (state, pid) and clears a slot when it reaps the executor, which is what returns a
 * dead tenant's share of the sim device's memory; an executor writes only its own
 * slot.  Versioned with reserved space so later fields (gates, bindings) fit.
 */
#ifndef DS_SHM_H
#define DS_SHM_H

#include "detshare.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define DS_SHM_VERSION 1
#define DS_SHM_SLOTS 64

struct ds_shm_slot {
    atomic_uint state; /* 0 free, 1 taken */
    pid_t pid;
    char tenant[DS_NAME_MAX + 1];
    atomic_uint_fast64_t sim_mem_used;
    uint64_t reserved[8];
};

struct ds_shm {
    uint32_t version;
    uint32_t nslots;
    uint64_t sim_mem_total;
    uint64_t reserved[8];
    struct ds_shm_slot slots[DS_SHM_SLOTS];
};

/* Map a zeroed block.  Returns NULL on failure (errno set).  Free with ds_shm_unmap. */
struct ds_shm *ds_shm_map(uint64_t sim_mem_total);
void ds_shm_unmap(struct ds_shm *shm);

/* Take a free slot; returns its index or -1 when all are taken. */
int ds_shm_slot_take(struct ds_shm *shm);

/* Return a slot to the free pool, forgetting everything its tenant held. */
void ds_shm_slot_clear(struct ds_shm *shm, int idx);

/* Account `size` bytes of sim device memory to slot idx.  Returns 0, or DS_ENOMEM when
 * the device has less than that free.  Concurrent reservations never overcommit: each
 * adds first and backs out if the sum went over. */
int ds_shm_sim_reserve(struct ds_shm *shm, int idx, uint64_t size);
void ds_shm_sim_release(struct ds_shm *shm, int idx, uint64_t size);

/* Sim device bytes in use by all tenants. */
uint64_t ds_shm_sim_used(const struct ds_shm *shm);

#endif
