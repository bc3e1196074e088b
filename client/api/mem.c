/* The device ranges this client knows (mem.h). */
#include "mem.h"

#include "ds_memtab.h"

#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ds_memtab device_mem; /* what cuMemAlloc returned, and VMM mappings */

/* device_mem's kind: what cuPointerSetAttribute set on the allocation. */
#define KIND_SYNC_MEMOPS 1u

/* Ranges the server dropped without telling us (a context destroyed or reset) give way
 * to whatever it hands out at the same addresses later.  owner: the pool, if any. */
void ds__mem_remember_pool(uint64_t base, uint64_t size, uint64_t pool)
{
    struct ds_memtab_entry e = { .base = base, .size = size, .owner = pool };
    const struct ds_memtab_entry *old;

    pthread_mutex_lock(&lock);
    while ((old = ds_memtab_overlap(&device_mem, base, size)) != NULL)
        ds_memtab_remove(&device_mem, old->base, NULL);
    ds_memtab_insert(&device_mem, &e);
    pthread_mutex_unlock(&lock);
}

void ds__mem_remember(uint64_t base, uint64_t size)
{
    ds__mem_remember_pool(base, size, 0);
}

void ds__mem_drop(uint64_t base)
{
    pthread_mutex_lock(&lock);
    ds_memtab_remove(&device_mem, base, NULL);
    pthread_mutex_unlock(&lock);
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
