#define _GNU_SOURCE
#include "shm.h"

#include "ds_error.h"
#include "ds_clock.h"
#include "ipcreg.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static struct ds_shm *map_fd(int fd)
{
    void *p = mmap(NULL, sizeof(struct ds_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

    return p == MAP_FAILED ? NULL : p;
}

uint64_t ds_shm_default_host_total(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t half = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : 0;

    return half > DS_SHM_HOST_LIMIT ? half : DS_SHM_HOST_LIMIT;
}

struct ds_shm *ds_shm_create(uint64_t sim_mem_total, int *fd)
{
    struct ds_shm *shm = NULL;
    int mfd = memfd_create("detshare-control", MFD_CLOEXEC), err;

    if (mfd < 0)
        return NULL;
    if (ftruncate(mfd, sizeof(*shm)) != 0 || (shm = map_fd(mfd)) == NULL) {
        err = errno;
        close(mfd);
        errno = err;
        return NULL;
    }
    *fd = mfd;
    shm->version = DS_SHM_VERSION;
    shm->nslots = DS_SHM_SLOTS;
    shm->sim_mem_total = sim_mem_total;
    shm->host_limit = DS_SHM_HOST_LIMIT;
    shm->host_total = ds_shm_default_host_total();
    return shm;
}

struct ds_shm *ds_shm_attach(int fd)
{
    struct ds_shm *shm;
    struct stat st;

    if (fstat(fd, &st) != 0 || st.st_size != (off_t)sizeof(*shm) || (shm = map_fd(fd)) == NULL)
        return NULL;
    if (shm->version != DS_SHM_VERSION || shm->nslots != DS_SHM_SLOTS) {
        ds_shm_unmap(shm);
        return NULL;
    }
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
    atomic_store(&s->groups, 0);
    atomic_store(&s->bound_groups, 0);
    atomic_store(&s->migrations, 0);
    atomic_store(&s->launches, 0);
    atomic_store(&s->mem_used, 0);
    for (int k = 0; k < DS_SHM_MEM_KINDS; k++)
        atomic_store(&s->mem_kind[k], 0);
    atomic_store(&s->klass, 0);
    atomic_store(&s->slo_us, 0);
    atomic_store(&s->gate, 0);
    atomic_store(&s->gated_ns, 0);
    atomic_store(&s->kernel_ns, 0);
    atomic_store(&s->throttled, 0);
    atomic_store(&s->metered, 0);
    atomic_store(&s->sim_busy_until, 0);
    atomic_store(&s->sim_kernel_ns, 0);
    s->id = 0;
    atomic_store(&s->isolation, 0);
    atomic_store(&s->group, 0);
    atomic_store(&s->fault_cu, 0);
    atomic_store(&s->fault_origin, DS_FAULT_NONE);
    atomic_store(&s->fault_ns, 0);
    atomic_store(&s->lost_to, 0);
    atomic_store(&s->escapes, 0);
    for (int p = 0; p <= DS_PROC_MAX; p++) {
        atomic_store(&s->calls[p], 0);
        atomic_store(&s->errors[p], 0);
    }
    for (int i = 0; i < DS_SHM_STAMPS; i++) {
        atomic_store(&s->stamps[i].seq, 0);
        atomic_store(&s->stamps[i].at_ns, 0);
    }
    atomic_store(&s->stamps_off, 0);
    atomic_store(&s->quota_key, 0);
    atomic_store(&s->host_bytes, 0);
    atomic_store(&s->trace_on, 0);
    atomic_store(&s->trace_head, 0);
    atomic_store(&s->trace_tail, 0);
    atomic_store(&s->trace_dropped, 0);
    s->pid = 0;
    s->peer_pid = 0;
    s->peer_uid = 0;
    s->peer_gid = 0;
    memset(s->tenant, 0, sizeof(s->tenant));
    memset(s->granted, 0, sizeof(s->granted));
    ds_ipcreg_clear(shm, idx);
    atomic_store(&s->state, 0);
}

static void futex(atomic_uint *word, int op, unsigned val, const struct timespec *timeout)
{
    syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

/* Only the control process writes the list; an executor reading it mid-shift may see
 * a set twice or miss one for a moment, which costs nothing but an early or late make. */
static void remember_hot(struct ds_shm *shm, uint64_t groups)
{
    if (groups == 0)
        return;
    for (int i = 0; i < DS_SHM_HOT; i++)
        if (atomic_load(&shm->hot_groups[i]) == groups)
            return;
    for (int i = 0; i + 1 < DS_SHM_HOT; i++)
        atomic_store(&shm->hot_groups[i], atomic_load(&shm->hot_groups[i + 1]));
    atomic_store(&shm->hot_groups[DS_SHM_HOT - 1], groups);
}

void ds_shm_bind(struct ds_shm *shm, int idx, uint64_t groups)
{
    struct ds_shm_slot *s = &shm->slots[idx];

    remember_hot(shm, groups);

    atomic_store(&s->groups, groups);
    atomic_store(&s->bind_at_ns, ds_now_ns());
    atomic_fetch_add_explicit(&s->bind_gen, 1, memory_order_release);
    futex(&s->bind_gen, FUTEX_WAKE, INT32_MAX, NULL);
}

void ds_shm_bind_wake(struct ds_shm *shm, int idx)
{
    futex(&shm->slots[idx].bind_gen, FUTEX_WAKE, INT32_MAX, NULL);
}

unsigned ds_shm_bind_wait(struct ds_shm *shm, int idx, unsigned seen, int timeout_ms)
{
    atomic_uint *gen = &shm->slots[idx].bind_gen;
    struct timespec ts = { .tv_sec = timeout_ms / 1000,
                           .tv_nsec = (long)(timeout_ms % 1000) * 1000000 };

    if (atomic_load_explicit(gen, memory_order_acquire) == seen)
        futex(gen, FUTEX_WAIT, seen, &ts);
    return atomic_load_explicit(gen, memory_order_acquire);
}


void ds_shm_gate(struct ds_shm *shm, int idx, int closed)
{
    atomic_uint *g = &shm->slots[idx].gate;

    atomic_store_explicit(g, closed ? 1u : 0u, memory_order_release);
}

/* The launch number entry e holds, when it is done by now_ns; 0 when not (or unknown). */
static uint64_t stamp_done(const struct ds_shm_stamp *e, uint64_t launches, uint64_t now_ns)
{
    uint64_t at = atomic_load_explicit(&e->at_ns, memory_order_acquire);
    uint32_t seq = atomic_load_explicit(&e->seq, memory_order_acquire);
    int32_t behind;

    if (at > now_ns || atomic_load_explicit(&e->at_ns, memory_order_acquire) != at)
        return 0;
    /* 32 bits on the device: launches tells which 2^32 it belongs to.  A stamp ahead of
     * the published count (written before the count was) says no more than the count. */
    behind = (int32_t)((uint32_t)launches - seq);
    return behind <= 0 ? launches : launches - (uint32_t)behind;
}

uint64_t ds_shm_stamps_done(const struct ds_shm *shm, int idx, uint64_t launches,
                            uint64_t now_ns)
{
    const struct ds_shm_slot *s = &shm->slots[idx];
    uint64_t done = 0;

    if (atomic_load(&s->stamps_off))
        return launches;
    for (int i = 0; i < DS_SHM_STAMPS; i++) {
        uint64_t d = stamp_done(&s->stamps[i], launches, now_ns);

        if (d > done)
            done = d;
    }
    return done;
}

struct ds_shm_domain *ds_shm_domain_of(struct ds_shm *shm, const struct ds_shm_slot *s)
{
    uint32_t iso = atomic_load(&s->isolation), g = atomic_load(&s->group);

    if (iso == DS_ISO_OWN)
        return NULL;
    return &shm->domains[iso == DS_ISO_GROUP && g <= DS_SHM_GROUPS ? g : 0];
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

int ds_shm_host_reserve(struct ds_shm *shm, int idx, uint64_t size)
{
    atomic_uint_fast64_t *mine = &shm->slots[idx].host_bytes;
    uint64_t had = atomic_load(mine), sum = 0;

    if (shm->host_limit != 0 && (size > shm->host_limit || had > shm->host_limit - size))
        return DS_ENOMEM;
    atomic_fetch_add(mine, size);
    for (uint32_t i = 0; i < shm->nslots && shm->host_total != 0; i++)
        sum += atomic_load(&shm->slots[i].host_bytes);
    if (sum > shm->host_total) {
        atomic_fetch_sub(mine, size);
        return DS_ENOMEM;
    }
    return 0;
}

void ds_shm_host_release(struct ds_shm *shm, int idx, uint64_t size)
{
    atomic_fetch_sub(&shm->slots[idx].host_bytes, size);
}
