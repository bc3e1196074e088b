#include "account.h"

#include "ds_error.h"
#include "ds_log.h"
#include "quota.h"

#include <stdio.h>
#include <string.h>

void ds__account_init(struct ds_account *a, struct ds_shm *shm, int slot, const char *name)
{
    memset(a, 0, sizeof(*a));
    a->shm = shm;
    a->slot = slot;
    a->name = name;
    a->uid = -1;
}

static struct ds_shm_slot *slot_of(struct ds_account *a)
{
    return &a->shm->slots[a->slot];
}

/* Read the tenant's rule from the rules in force and say in its slot which it is, again
 * if they changed meanwhile: the control process rekeys slots as it publishes, and the
 * last word must be the newest rules'. */
static void refresh(struct ds_account *a)
{
    struct ds_shm_quota q;
    uint64_t was = a->limit;

    do {
        a->seq = ds_quota_lookup(a->shm, a->name, a->uid, &q);
        a->limit = q.memory;
        a->key = ds_quota_key(q.name[0] != '\0' ? &q : NULL);
        snprintf(a->rule, sizeof(a->rule), "%s", q.name);
        atomic_store(&slot_of(a)->quota_key, a->key);
    } while (ds_quota_changed(a->shm, a->seq));
    if (a->joined && a->limit != was)
        ds_info("memory quota now %llu bytes (0: none), holding %llu",
                (unsigned long long)a->limit, (unsigned long long)a->total);
}

uint64_t ds__account_join(struct ds_account *a, uint64_t device_total)
{
    const struct ds_shm_slot *s = slot_of(a);

    a->uid = s->peer_pid != 0 ? (long)s->peer_uid : -1;
    refresh(a);
    a->joined = 1;
    if (a->limit == 0 || a->limit >= device_total)
        return device_total;
    ds_info("memory quota: %llu bytes of the device's %llu (rule %s)",
            (unsigned long long)a->limit, (unsigned long long)device_total, a->rule);
    return a->limit;
}

static void publish(struct ds_account *a, enum ds_mem_kind k)
{
    struct ds_shm_slot *s = slot_of(a);

    atomic_store_explicit(&s->mem_kind[k], a->used[k], memory_order_relaxed);
    atomic_store_explicit(&s->mem_used, a->total, memory_order_relaxed);
}

/* Device memory of every live tenant under the tenant's rule, its own included. */
static uint64_t rule_used(struct ds_account *a)
{
    uint64_t sum = 0;

    for (uint32_t i = 0; i < a->shm->nslots; i++)
        if (atomic_load(&a->shm->slots[i].quota_key) == a->key)
            sum += atomic_load(&a->shm->slots[i].mem_used);
    return sum;
}

static void count(struct ds_account *a, enum ds_mem_kind k, uint64_t size)
{
    a->used[k] += size;
    a->total += size;
    publish(a, k);
}

/* Take size bytes if the rule has room: published first and summed after, so that of two
 * executors taking at once at least one sees the other's bytes. */
static int try_take(struct ds_account *a, enum ds_mem_kind k, uint64_t size)
{
    if (a->joined && ds_quota_changed(a->shm, a->seq))
        refresh(a);
    if (a->limit == 0) {
        count(a, k, size);
        return 0;
    }
    if (size > a->limit || a->total > a->limit - size)
        return DS_ENOMEM;
    atomic_store(&slot_of(a)->mem_used, a->total + size);
    if (rule_used(a) > a->limit) {
        atomic_store(&slot_of(a)->mem_used, a->total);
        return DS_ENOMEM;
    }
    count(a, k, size);
    return 0;
}

int ds__account_take(struct ds_account *a, enum ds_mem_kind k, uint64_t size)
{
    uint64_t all;
    int first;

    if (try_take(a, k, size) == 0)
        return 0;
    if (a->reclaim != NULL) {
        a->reclaim(a->reclaim_ctx);
        if (try_take(a, k, size) == 0)
            return 0;
    }
    all = rule_used(a);
    first = a->refused++ == 0;
    ds_log(first ? DS_LOG_INFO : DS_LOG_DEBUG,
           "over its memory quota: %llu bytes refused (CUDA_ERROR_OUT_OF_MEMORY), holding "
           "%llu of %llu; %llu held by every tenant under rule %s%s",
           (unsigned long long)size, (unsigned long long)a->total,
           (unsigned long long)a->limit, (unsigned long long)all, a->rule,
           first ? "; further refusals at debug level" : "");
    return DS_ENOMEM;
}

void ds__account_give(struct ds_account *a, enum ds_mem_kind k, uint64_t size)
{
    a->used[k] -= size;
    a->total -= size;
    publish(a, k);
}

void ds__account_set(struct ds_account *a, enum ds_mem_kind k, uint64_t now)
{
    a->total = a->total - a->used[k] + now;
    a->used[k] = now;
    publish(a, k);
}

void ds__account_info(struct ds_account *a, uint64_t view_total, uint64_t *free_bytes,
                      uint64_t *total)
{
    uint64_t left, all;

    if (a->joined && ds_quota_changed(a->shm, a->seq))
        refresh(a);
    *total = view_total;
    if (a->limit == 0)
        return;
    all = rule_used(a);
    left = all < a->limit ? a->limit - all : 0;
    if (left < *free_bytes)
        *free_bytes = left;
    if (*free_bytes > view_total)
        *free_bytes = view_total;
}

int ds__account_host_take(struct ds_account *a, uint64_t size, const char *what)
{
    const struct ds_shm_slot *s = slot_of(a);
    int first;

    if (ds_shm_host_reserve(a->shm, a->slot, size) == 0) {
        a->host += size;
        return 0;
    }
    first = a->host_refused++ == 0;
    ds_log(first ? DS_LOG_WARN : DS_LOG_DEBUG,
           "%s refused (CUDA_ERROR_OUT_OF_MEMORY): %llu more bytes of host memory for tenant "
           "%s (pid %d, uid %u) would pass the server's limit of %llu per tenant (holding "
           "%llu) or %llu for all%s",
           what, (unsigned long long)size, a->joined ? a->name : "(before its hello)",
           (int)s->peer_pid, (unsigned)s->peer_uid,
           (unsigned long long)a->shm->host_limit, (unsigned long long)a->host,
           (unsigned long long)a->shm->host_total,
           first ? "; further refusals at debug level" : "");
    return DS_ENOMEM;
}

void ds__account_host_give(struct ds_account *a, uint64_t size)
{
    a->host -= size;
    ds_shm_host_release(a->shm, a->slot, size);
}
