#include "account.h"

#include "ds_error.h"
#include "ds_log.h"
#include "quota.h"

#include <string.h>

void ds__account_init(struct ds_account *a, struct ds_shm *shm, int slot, const char *name)
{
    memset(a, 0, sizeof(*a));
    a->shm = shm;
    a->slot = slot;
    a->name = name;
}

/* Read the tenant's memory limit from the rules in force, saying when it changed. */
static void refresh(struct ds_account *a)
{
    struct ds_shm_quota q;
    uint64_t was = a->limit;

    a->seq = ds_quota_lookup(a->shm, a->name, &q);
    a->limit = q.memory;
    if (a->joined && a->limit != was)
        ds_info("memory quota now %llu bytes (0: none), holding %llu",
                (unsigned long long)a->limit, (unsigned long long)a->total);
}

uint64_t ds__account_join(struct ds_account *a, uint64_t device_total)
{
    refresh(a);
    a->joined = 1;
    if (a->limit == 0 || a->limit >= device_total)
        return device_total;
    ds_info("memory quota: %llu bytes of the device's %llu", (unsigned long long)a->limit,
            (unsigned long long)device_total);
    return a->limit;
}

static void publish(struct ds_account *a, enum ds_mem_kind k)
{
    struct ds_shm_slot *s = &a->shm->slots[a->slot];

    atomic_store_explicit(&s->mem_kind[k], a->used[k], memory_order_relaxed);
    atomic_store_explicit(&s->mem_used, a->total, memory_order_relaxed);
}

int ds__account_take(struct ds_account *a, enum ds_mem_kind k, uint64_t size)
{
    if (a->joined && ds_quota_changed(a->shm, a->seq))
        refresh(a);
    if (a->limit != 0 && (size > a->limit || a->total > a->limit - size)) {
        int first = a->refused++ == 0;

        ds_log(first ? DS_LOG_INFO : DS_LOG_DEBUG,
               "over its memory quota: %llu bytes refused (CUDA_ERROR_OUT_OF_MEMORY), holding "
               "%llu of %llu%s", (unsigned long long)size, (unsigned long long)a->total,
               (unsigned long long)a->limit, first ? "; further refusals at debug level" : "");
        return DS_ENOMEM;
    }
    a->used[k] += size;
    a->total += size;
    publish(a, k);
    return 0;
}

void ds__account_give(struct ds_account *a, enum ds_mem_kind k, uint64_t size)
{
    a->used[k] -= size;
    a->total -= size;
    publish(a, k);
}

void ds__account_info(struct ds_account *a, uint64_t view_total, uint64_t *free_bytes,
                      uint64_t *total)
{
    uint64_t left;

    if (a->joined && ds_quota_changed(a->shm, a->seq))
        refresh(a);
    *total = view_total;
    if (a->limit == 0)
        return;
    left = a->total < a->limit ? a->limit - a->total : 0;
    if (left < *free_bytes)
        *free_bytes = left;
    if (*free_bytes > view_total)
        *free_bytes = view_total;
}
