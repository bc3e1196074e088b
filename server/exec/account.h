/*
 * A tenant's device memory, counted by its executor whatever the backend, and held to
 * the tenant's memory quota (server/quota.h).  Every path that gives the tenant device
 * memory takes its bytes here before asking the backend, and gives them back when the
 * memory goes (or the backend refused it), so a tenant over its quota is refused before
 * the device is touched and nobody else notices.  The counts are published in the
 * tenant's control-block slot for status.
 */
#ifndef DS_ACCOUNT_H
#define DS_ACCOUNT_H

#include "shm.h"

#include <stdint.h>

struct ds_account {
    struct ds_shm *shm;
    int slot;
    const char *name;  /* the tenant's, known from its hello */
    uint64_t used[DS_MEM_KINDS];
    uint64_t total;    /* all kinds: what the quota is compared with */
    uint64_t limit;    /* bytes; 0: none */
    unsigned seq;      /* of the quota rules limit was read from */
    int joined;        /* limit is the tenant's (ds__account_join) */
    unsigned refused;  /* allocations refused: the first is logged at info level */
};

/* Count nothing yet, for the tenant in slot `slot` of shm, whose name will be at
 * `name`. */
void ds__account_init(struct ds_account *a, struct ds_shm *shm, int slot, const char *name);

/* At the tenant's hello, its name set: read its quota, and return the device memory its
 * view is to show: device_total, or the quota when that is smaller. */
uint64_t ds__account_join(struct ds_account *a, uint64_t device_total);

/* Count size bytes of kind k.  Returns 0, or DS_ENOMEM (counting nothing) when that
 * would take the tenant over its quota.  The quota is read again first when the rules
 * changed since. */
int ds__account_take(struct ds_account *a, enum ds_mem_kind k, uint64_t size);

/* Size bytes of kind k, taken before, are gone. */
void ds__account_give(struct ds_account *a, enum ds_mem_kind k, uint64_t size);

/* cuMemGetInfo as the tenant is to see it: the device's free bytes, no more than its
 * quota leaves, and its view's total; *free_bytes and *total hold the device's on entry. */
void ds__account_info(struct ds_account *a, uint64_t view_total, uint64_t *free_bytes,
                      uint64_t *total);

#endif
