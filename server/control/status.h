/*
 * The server's state as the admin API shows it (`detshare-ctl status`): the device, MPS,
 * the policy and every tenant, read from the control block.  Packed as one msgpack map;
 * docs/admin.md names each field.
 */
#ifndef DS_STATUS_H
#define DS_STATUS_H

#include "control.h"
#include "domain.h"
#include "shm.h"

#include <msgpack.h>

/* How long the policy's callbacks took (placement.c times each): what a policy costs the
 * control loop, and how it grows with the tenants (issue 28's scale experiment). */
struct ds_decisions {
    uint64_t count, total_ns, max_ns;
};

/* `domains`: the fault domains' quarantine and counts by tenant name (domain.h). */
void ds_status_pack(msgpack_packer *pk, const struct ds_server_config *cfg,
                    const struct ds_shm *shm, const char *policy,
                    const struct ds_decisions *decisions, const struct ds_domains *domains,
                    const struct ds_sched_tenant *tenants, int n);

/* Quota rules v[0..n) as an array of {"name", "class", "memory", "sm_share",
 * "kernel_time", "isolation"} maps, nil for no limit. */
void ds_status_pack_quotas(msgpack_packer *pk, const struct ds_shm_quota *v, unsigned n);

#endif
