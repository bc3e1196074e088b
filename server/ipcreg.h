/*
 * The CUDA IPC registry: what tenants exported with cuIpcGetMemHandle and
 * cuIpcGetEventHandle, kept in the control block (shm.h) for other tenants' executors to
 * find.
 *
 * A tenant never sees the registry, only the 64-byte handle that ds_ipcreg_publish made
 * for it: the exporter's slot, the entry's index and the entry's random 128-bit key.  The
 * opener's executor looks the handle up, and gets the entry only when one of that kind
 * is there with that key, exported by a tenant of the opener's own user: a forged,
 * altered or stale handle (the export withdrawn, its exporter gone) opens nothing, and a
 * handle cannot be guessed.  What opening takes comes from the entry, written by an
 * executor, never from the tenant: the backend's blob (on a GPU the driver's own IPC
 * handle; on the sim where its shared memory is).
 *
 * Each slot has a table of its own that only its executor writes, so a tenant's exports
 * can neither crowd out nor touch another's: a tenant holding DS_SHM_IPC_MAX exports
 * gets DS_ENOMEM until it frees some.  The control process clears a slot's table once its
 * executor is gone.  Readers write nothing: a sequence count per entry lets them copy an
 * entry whole while its executor may be rewriting it.
 */
#ifndef DS_IPCREG_H
#define DS_IPCREG_H

#include "shm.h"

#include <stdint.h>

#define DS_IPCREG_HANDLE 64 /* CU_IPC_HANDLE_SIZE */

enum ds_ipcreg_kind { DS_IPCREG_MEM = 1, DS_IPCREG_EVENT = 2 };

/* An export as a lookup found it. */
struct ds_ipcreg_found {
    int slot, index;  /* where it is: with key, which export it is */
    uint64_t key[2];
    uint64_t size;
    unsigned char blob[DS_SHM_IPC_BLOB];
};

/* Publish an export of slot `slot` (the caller's own), made by a tenant of user uid, and
 * write the tenant's handle to it in `handle`.  Returns the entry's index, DS_ENOMEM when
 * the slot's table is full, or DS_EDEVICE when no random key could be had. */
int ds_ipcreg_publish(struct ds_shm *shm, int slot, uint32_t uid, enum ds_ipcreg_kind kind,
                      uint64_t size, const unsigned char blob[DS_SHM_IPC_BLOB],
                      unsigned char handle[DS_IPCREG_HANDLE]);

/* Withdraw entry idx of slot `slot` (the caller's own): handles to it open nothing more. */
void ds_ipcreg_withdraw(struct ds_shm *shm, int slot, int idx);

/* The export that `handle` (64 bytes from a tenant) names, for an opener of user uid:
 * 0 with *out, DS_EHANDLE when it names no live export of that kind, or DS_EPERM when the
 * export is another user's. */
int ds_ipcreg_lookup(struct ds_shm *shm, const unsigned char handle[DS_IPCREG_HANDLE],
                     enum ds_ipcreg_kind kind, uint32_t uid, struct ds_ipcreg_found *out);

/* Withdraw every export of slot `slot`: by the control process, once its executor is
 * gone. */
void ds_ipcreg_clear(struct ds_shm *shm, int slot);

#endif
