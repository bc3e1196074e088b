/*
 * A tenant's memory, counted by its executor whatever the backend.
 *
 * Device memory is held to the tenant's memory quota (server/quota.h).  Every path that
 * gives the tenant device memory takes its bytes here before asking the backend, and
 * gives them back when the memory goes (or the backend refused it), so a tenant over its
 * quota is refused before the device is touched and nobody else notices.  A rule's limit
 * covers every live tenant under it together: the executor reserves in its control-block
 * slot and sums the slots of the same rule (quota_key), backing out when the sum went
 * over, so that tenants allocating at once never overcommit it.  What memory pools keep
 * for reuse counts too (server/exec/ops/ops_pool.c): before refusing, the account asks for it
 * back (reclaim).  The counts are published in the tenant's slot for status.
 *
 * Host memory the executor holds for the tenant's pending calls is counted here too,
 * against the server's per-tenant and total limits (shm.h, host_limit and host_total).
 */
#ifndef DS_ACCOUNT_H
#define DS_ACCOUNT_H

#include "shm.h"

#include <stdint.h>

struct ds_account {
    struct ds_shm *shm;
    int slot;
    const char *name;  /* the tenant's, known from its hello */
    long uid;          /* its Unix user, -1 for a TCP tenant: known from its hello */
    uint64_t used[DS_MEM_KINDS];
    uint64_t total;    /* all kinds: what the quota is compared with */
    uint64_t limit;    /* bytes, of every tenant under the rule together; 0: none */
    uint64_t key;      /* the rule's (ds_quota_key), 0: none */
    char rule[DS_NAME_MAX + 1]; /* its name, for the log */
    unsigned seq;      /* of the quota rules limit was read from */
    int joined;        /* limit is the tenant's (ds__account_join) */
    unsigned refused;  /* allocations refused: the first is logged at info level */
    uint64_t host;     /* host bytes held (ds__account_host_take) */
    unsigned host_refused;
    /* Asked, once, before a device allocation is refused: give back device memory the
     * tenant holds without using it (what its pools keep).  NULL: nothing to give. */
    void (*reclaim)(void *ctx);
    void *reclaim_ctx;
};

/* Count nothing yet, for the tenant in slot `slot` of shm, whose name will be at
 * `name`. */
void ds__account_init(struct ds_account *a, struct ds_shm *shm, int slot, const char *name);

/* At the tenant's hello, its name set: read its quota, and return the device memory its
 * view is to show: device_total, or the quota when that is smaller. */
uint64_t ds__account_join(struct ds_account *a, uint64_t device_total);

/* Count size bytes of kind k.  Returns 0, or DS_ENOMEM (counting nothing) when that
 * would take the tenant's rule over its limit even after reclaim.  The quota is read
 * again first when the rules changed since. */
int ds__account_take(struct ds_account *a, enum ds_mem_kind k, uint64_t size);

/* Size bytes of kind k, taken before, are gone. */
void ds__account_give(struct ds_account *a, enum ds_mem_kind k, uint64_t size);

/* Kind k now holds `now` bytes, as the backend reports memory the tenant already has
 * (a pool's reserve): counted whatever the quota, which the next take then sees. */
void ds__account_set(struct ds_account *a, enum ds_mem_kind k, uint64_t now);

/* cuMemGetInfo as the tenant is to see it: the device's free bytes, no more than its
 * rule leaves, and its view's total; *free_bytes and *total hold the device's on entry. */
void ds__account_info(struct ds_account *a, uint64_t view_total, uint64_t *free_bytes,
                      uint64_t *total);

/* Hold size more bytes of host memory for the tenant's calls; `what` names them for the
 * log.  Returns 0, or DS_ENOMEM (holding nothing more) past the server's limits. */
int ds__account_host_take(struct ds_account *a, uint64_t size, const char *what);

/* Size host bytes, taken before, are freed. */
void ds__account_host_give(struct ds_account *a, uint64_t size);

#endif
