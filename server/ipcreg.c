#include "ipcreg.h"

#include "ds_error.h"

#include <string.h>
#include <sys/random.h>

/* The handle a tenant holds.  Every byte but the entry's coordinates and key is fixed, so
 * a handle changed anywhere is refused. */
struct handle {
    char magic[8];
    uint32_t kind, slot, index, zero;
    uint64_t key[2];
    unsigned char pad[24];
};

_Static_assert(sizeof(struct handle) == DS_IPCREG_HANDLE, "a handle is a CUipcMemHandle");

static const char magic[8] = { 'd', 's', 'i', 'p', 'c', 0, 0, 1 };

/* A reader that meets an entry being rewritten tries again this many times: a rewrite is
 * a few stores, and one that never ends (its executor died within it) must not hang. */
#define READ_TRIES 1000

/* The writer's side of the sequence count: odd from begin to end. */
static void begin_write(struct ds_shm_ipc *e)
{
    atomic_store_explicit(&e->seq, atomic_load_explicit(&e->seq, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

static void end_write(struct ds_shm_ipc *e)
{
    atomic_store_explicit(&e->seq, atomic_load_explicit(&e->seq, memory_order_relaxed) + 1,
                          memory_order_release);
}

static void wipe(struct ds_shm_ipc *e)
{
    begin_write(e);
    e->kind = 0;
    e->uid = 0;
    e->size = 0;
    memset(e->key, 0, sizeof(e->key));
    memset(e->blob, 0, sizeof(e->blob));
    end_write(e);
}

/* A free entry of the slot's table (only its own executor writes it, so a plain read
 * of kind is current), or -1. */
static int free_entry(struct ds_shm *shm, int slot)
{
    for (int i = 0; i < DS_SHM_IPC_MAX; i++)
        if (shm->ipc[slot][i].kind == 0)
            return i;
    return -1;
}

int ds_ipcreg_publish(struct ds_shm *shm, int slot, uint32_t uid, enum ds_ipcreg_kind kind,
                      uint64_t size, const unsigned char blob[DS_SHM_IPC_BLOB],
                      unsigned char handle[DS_IPCREG_HANDLE])
{
    struct handle h = { .kind = (uint32_t)kind, .slot = (uint32_t)slot };
    atomic_uint *used = &shm->slots[slot].ipc_used;
    int idx = free_entry(shm, slot);
    struct ds_shm_ipc *e;

    if (idx < 0)
        return DS_ENOMEM;
    if (getrandom(h.key, sizeof(h.key), 0) != (ssize_t)sizeof(h.key) || (h.key[0] | h.key[1]) == 0)
        return DS_EDEVICE;
    if ((unsigned)idx >= atomic_load(used))
        atomic_store(used, (unsigned)idx + 1);
    e = &shm->ipc[slot][idx];
    begin_write(e);
    e->kind = (uint32_t)kind;
    e->uid = uid;
    e->size = size;
    memcpy(e->key, h.key, sizeof(e->key));
    memcpy(e->blob, blob, sizeof(e->blob));
    end_write(e);
    memcpy(h.magic, magic, sizeof(magic));
    h.index = (uint32_t)idx;
    memcpy(handle, &h, sizeof(h));
    return idx;
}

void ds_ipcreg_withdraw(struct ds_shm *shm, int slot, int idx)
{
    wipe(&shm->ipc[slot][idx]);
}

/* A copy of entry e taken while no rewrite was under way.  Returns 0 or DS_EHANDLE. */
static int read_entry(const struct ds_shm_ipc *e, struct ds_shm_ipc *copy)
{
    for (int i = 0; i < READ_TRIES; i++) {
        unsigned s = atomic_load_explicit(&e->seq, memory_order_acquire);

        if (s & 1)
            continue;
        copy->kind = e->kind;
        copy->uid = e->uid;
        copy->size = e->size;
        memcpy(copy->key, e->key, sizeof(copy->key));
        memcpy(copy->blob, e->blob, sizeof(copy->blob));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&e->seq, memory_order_relaxed) == s)
            return 0;
    }
    return DS_EHANDLE;
}

/* The handle's fixed bytes are as publish writes them and its coordinates in range. */
static int well_formed(const struct handle *h, enum ds_ipcreg_kind kind)
{
    static const unsigned char zeros[sizeof(h->pad)];

    return memcmp(h->magic, magic, sizeof(magic)) == 0 && h->kind == (uint32_t)kind &&
           h->slot < DS_SHM_SLOTS && h->index < DS_SHM_IPC_MAX && h->zero == 0 &&
           memcmp(h->pad, zeros, sizeof(zeros)) == 0;
}

int ds_ipcreg_lookup(struct ds_shm *shm, const unsigned char handle[DS_IPCREG_HANDLE],
                     enum ds_ipcreg_kind kind, uint32_t uid, struct ds_ipcreg_found *out)
{
    struct ds_shm_ipc e;
    struct handle h;

    memcpy(&h, handle, sizeof(h));
    if (!well_formed(&h, kind) || read_entry(&shm->ipc[h.slot][h.index], &e) != 0)
        return DS_EHANDLE;
    if (e.kind != (uint32_t)kind || ((e.key[0] ^ h.key[0]) | (e.key[1] ^ h.key[1])) != 0)
        return DS_EHANDLE;
    if (e.uid != uid)
        return DS_EPERM;
    out->slot = (int)h.slot;
    out->index = (int)h.index;
    memcpy(out->key, e.key, sizeof(out->key));
    out->size = e.size;
    memcpy(out->blob, e.blob, sizeof(out->blob));
    return 0;
}

void ds_ipcreg_clear(struct ds_shm *shm, int slot)
{
    atomic_uint *used = &shm->slots[slot].ipc_used;
    unsigned n = atomic_load(used);

    for (unsigned i = 0; i < n && i < DS_SHM_IPC_MAX; i++)
        if (shm->ipc[slot][i].kind != 0)
            wipe(&shm->ipc[slot][i]);
    atomic_store(used, 0);
}
