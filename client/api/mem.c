/* The device ranges this client knows (mem.h). */
#include "mem.h"

#include "ds_log.h"
#include "ds_memtab.h"
#include "route.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ds_memtab device_mem; /* what cuMemAlloc returned, and VMM mappings */
static _Atomic(ds_mem_drop_hook) drop_hook;

/* device_mem's kind: what cuPointerSetAttribute set on the allocation, and above
 * KIND_DEV_SHIFT the device whose server made the range (the one the calling thread's
 * last call went to: the allocation's). */
#define KIND_SYNC_MEMOPS 1u
#define KIND_DEV_SHIFT 8

/* Two servers handed out the same device addresses: a pointer no longer tells which
 * device it is on (docs/design.md, "Several servers"), and the older range's device
 * loses it.  Said once. */
static void coincide(const struct ds_memtab_entry *old, const struct ds_memtab_entry *e)
{
    static int said;

    if (said++ == 0)
        ds_warn("devices %u and %u both use device addresses 0x%llx-0x%llx: calls naming "
                "them go to device %u only",
                old->kind >> KIND_DEV_SHIFT, e->kind >> KIND_DEV_SHIFT,
                (unsigned long long)e->base, (unsigned long long)(e->base + e->size),
                e->kind >> KIND_DEV_SHIFT);
}

/* Ranges the server dropped without telling us (a context destroyed or reset) give way
 * to whatever it hands out at the same addresses later.  owner: the pool, if any. */
void ds__mem_remember_pool(uint64_t base, uint64_t size, uint64_t pool)
{
    struct ds_memtab_entry e = { .base = base, .size = size, .owner = pool,
                                 .kind = (unsigned)ds__route_last() << KIND_DEV_SHIFT };
    const struct ds_memtab_entry *old;

    pthread_mutex_lock(&lock);
    while ((old = ds_memtab_overlap(&device_mem, base, size)) != NULL) {
        uint64_t gone = old->base;
        int dev = (int)(old->kind >> KIND_DEV_SHIFT);
        ds_mem_drop_hook fn = atomic_load(&drop_hook);

        if (dev != (int)(e.kind >> KIND_DEV_SHIFT))
            coincide(old, &e);
        ds_memtab_remove(&device_mem, gone, NULL);
        /* An allocation the client never saw freed (its context ended with it) is
         * replaced: what was mapped of it elsewhere (peer.c) goes with it, or a copy to
         * the new one would use the old mapping. */
        if (fn != NULL) {
            pthread_mutex_unlock(&lock);
            fn(gone, dev);
            pthread_mutex_lock(&lock);
        }
    }
    ds_memtab_insert(&device_mem, &e);
    pthread_mutex_unlock(&lock);
}

void ds__mem_remember(uint64_t base, uint64_t size)
{
    ds__mem_remember_pool(base, size, 0);
}

void ds__mem_drop(uint64_t base)
{
    struct ds_memtab_entry e;
    ds_mem_drop_hook fn = atomic_load(&drop_hook);
    int found;

    pthread_mutex_lock(&lock);
    found = ds_memtab_remove(&device_mem, base, &e) == 0;
    pthread_mutex_unlock(&lock);
    if (found && fn != NULL)
        fn(base, (int)(e.kind >> KIND_DEV_SHIFT));
}

void ds__mem_set_drop_hook(ds_mem_drop_hook fn)
{
    atomic_store(&drop_hook, fn);
}

void ds__mem_forget(uint64_t base, uint64_t size)
{
    const struct ds_memtab_entry *old;

    pthread_mutex_lock(&lock);
    while ((old = ds_memtab_overlap(&device_mem, base, size)) != NULL)
        ds_memtab_remove(&device_mem, old->base, NULL);
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

int ds__mem_runs_past(uint64_t p, uint64_t n)
{
    const struct ds_memtab_entry *e;
    int past;

    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&device_mem, p, 0);
    past = e != NULL && n > e->size - (p - e->base);
    pthread_mutex_unlock(&lock);
    return past;
}

int ds__mem_range(uint64_t p, uint64_t *base, uint64_t *size, uint64_t *pool,
                  unsigned *sync_memops)
{
    const struct ds_memtab_entry *e;

    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&device_mem, p, 0);
    if (e != NULL) {
        *base = e->base;
        *size = e->size;
        *pool = e->owner;
        *sync_memops = (e->kind & KIND_SYNC_MEMOPS) != 0;
    }
    pthread_mutex_unlock(&lock);
    return e != NULL;
}

int ds__mem_set_sync_memops(uint64_t p, int on)
{
    const struct ds_memtab_entry *e;
    size_t at;

    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&device_mem, p, 0);
    if (e != NULL) {
        at = (size_t)(e - device_mem.v);
        if (on)
            device_mem.v[at].kind |= KIND_SYNC_MEMOPS;
        else
            device_mem.v[at].kind &= ~KIND_SYNC_MEMOPS;
    }
    pthread_mutex_unlock(&lock);
    return e != NULL;
}

int ds__mem_device_of(uint64_t p)
{
    const struct ds_memtab_entry *e;
    int dev;

    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&device_mem, p, 0);
    dev = e != NULL ? (int)(e->kind >> KIND_DEV_SHIFT) : -1;
    pthread_mutex_unlock(&lock);
    return dev;
}
