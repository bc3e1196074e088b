#include "status.h"

#include "ds_clock.h"
#include "detshare.h"
#include "quota.h"

#include <string.h>

static void key(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);

    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_device(msgpack_packer *pk, const struct ds_server_config *cfg)
{
    msgpack_pack_map(pk, 5);
    key(pk, "backend");
    key(pk, cfg->backend->name);
    key(pk, "sms");
    msgpack_pack_unsigned_int(pk, cfg->sm.sms);
    key(pk, "sm_groups");
    msgpack_pack_unsigned_int(pk, cfg->sm.count);
    key(pk, "sm_group_size");
    msgpack_pack_unsigned_int(pk, cfg->sm.size);
    key(pk, "memory");
    /* The sim's size is the server's setting; a GPU's, what its probe read. */
    if (cfg->device_memory > 0)
        msgpack_pack_uint64(pk, cfg->device_memory);
    else
        msgpack_pack_nil(pk);
}

/* A tenant bound to no groups in particular runs on all of them. */
static void pack_groups(msgpack_packer *pk, uint64_t groups, unsigned count)
{
    unsigned n = groups == 0 ? count : (unsigned)__builtin_popcountll(groups);

    msgpack_pack_array(pk, n);
    for (unsigned i = 0; i < count && i < 64; i++)
        if (groups == 0 || (groups >> i & 1))
            msgpack_pack_unsigned_int(pk, i);
}

/* The connecting process as the kernel saw it, or nil for a TCP tenant. */
static void pack_peer(msgpack_packer *pk, const struct ds_shm_slot *s)
{
    if (s->peer_pid == 0) {
        msgpack_pack_nil(pk);
        return;
    }
    msgpack_pack_map(pk, 3);
    key(pk, "pid");
    msgpack_pack_int(pk, s->peer_pid);
    key(pk, "uid");
    msgpack_pack_unsigned_int(pk, s->peer_uid);
    key(pk, "gid");
    msgpack_pack_unsigned_int(pk, s->peer_gid);
}

static void pack_limit(msgpack_packer *pk, uint64_t v)
{
    if (v != 0)
        msgpack_pack_uint64(pk, v);
    else
        msgpack_pack_nil(pk);
}

/* What the predictor sees of the tenant's running work (sched/predict.h). */
static void pack_running(msgpack_packer *pk, const struct ds_sched_tenant *t)
{
    key(pk, "completed");
    msgpack_pack_uint64(pk, t->done);
    key(pk, "in_flight");
    msgpack_pack_uint64(pk, t->inflight);
    key(pk, "kernel_us");
    if (t->kernel_us > 0)
        msgpack_pack_double(pk, t->kernel_us);
    else
        msgpack_pack_nil(pk);
    key(pk, "completion_rate");
    msgpack_pack_double(pk, t->rate);
}

/* What the policy decided for it, which the executor follows at its next kernel. */
static void pack_decision(msgpack_packer *pk, const struct ds_server_config *cfg,
                          const struct ds_shm_slot *s, const struct ds_sched_tenant *t)
{
    static const char *const phases[] = { "auto", "decode", "prefill" };

    key(pk, "phase");
    key(pk, t->phase >= 0 && t->phase <= 2 ? phases[t->phase] : "auto");
    key(pk, "decided_sm_groups");
    pack_groups(pk, atomic_load(&s->groups), cfg->sm.count);
    key(pk, "decision");
    if (t->why != NULL)
        key(pk, t->why);
    else
        msgpack_pack_nil(pk);
}

/* What the tenant holds by kind, and the quota of its name (nil: none, or no name yet). */
static void pack_memory(msgpack_packer *pk, const struct ds_shm *shm, const struct ds_shm_slot *s)
{
    const struct ds_shm_quota *q = ds_quota_match_slot(shm->quotas, shm->nquotas, s);

    key(pk, "memory");
    msgpack_pack_map(pk, 4);
    key(pk, "device");
    msgpack_pack_uint64(pk, atomic_load(&s->mem_kind[DS_MEM_DEVICE]));
    key(pk, "vmm");
    msgpack_pack_uint64(pk, atomic_load(&s->mem_kind[DS_MEM_VMM]));
    key(pk, "pool");
    msgpack_pack_uint64(pk, atomic_load(&s->mem_kind[DS_MEM_POOL]));
    key(pk, "managed");
    msgpack_pack_uint64(pk, atomic_load(&s->mem_kind[DS_MEM_MANAGED]));
    key(pk, "memory_quota");
    pack_limit(pk, q ? q->memory : 0);
    key(pk, "sm_share");
    pack_limit(pk, q ? q->sm_share : 0);
    key(pk, "kernel_time_quota");
    pack_limit(pk, q ? q->kernel_time : 0);
}

/* Its fault domain, and what faults did to tenants of its name (domain.h). */
static void pack_faults(msgpack_packer *pk, const struct ds_shm *shm,
                        const struct ds_domains *d, const struct ds_shm_slot *s)
{
    unsigned g = atomic_load(&s->group);
    char iso[DS_GROUP_MAX + 8];

    const struct ds_domain_name *e = s->tenant[0] ? ds__domain_find(d, s->tenant) : NULL;
    uint64_t by = atomic_load(&s->lost_to), now = ds_now_ns();

    key(pk, "isolation");
    key(pk, ds_quota_isolation_format(atomic_load(&s->isolation),
                                      g <= DS_SHM_GROUPS ? shm->domains[g].group : "", iso,
                                      sizeof(iso)));
    key(pk, "quarantined");
    if (e != NULL && e->quarantine_end > now)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    key(pk, "faults");
    msgpack_pack_uint64(pk, e != NULL ? e->own_faults : 0);
    key(pk, "lost_to");
    if (by != 0)
        msgpack_pack_uint64(pk, by);
    else
        msgpack_pack_nil(pk);
}

/* The rule the tenant falls under (by uid or name; "" for none), and the host memory its
 * executor holds for its pending calls. */
static void pack_held(msgpack_packer *pk, const struct ds_shm *shm, const struct ds_shm_slot *s)
{
    const struct ds_shm_quota *q = ds_quota_match_slot(shm->quotas, shm->nquotas, s);

    key(pk, "quota_rule");
    key(pk, q ? q->name : "");
    key(pk, "host_bytes");
    msgpack_pack_uint64(pk, atomic_load(&s->host_bytes));
}

static void pack_tenant(msgpack_packer *pk, const struct ds_server_config *cfg,
                        const struct ds_shm *shm, const struct ds_domains *d,
                        const struct ds_shm_slot *s, const struct ds_sched_tenant *t)
{
    uint64_t groups = atomic_load(&s->bound_groups);
    unsigned sms = groups == 0 ? cfg->sm.sms : (unsigned)__builtin_popcountll(groups) * cfg->sm.size;

    msgpack_pack_map(pk, 34);
    key(pk, "id");
    msgpack_pack_uint64(pk, s->id);
    key(pk, "slot");
    msgpack_pack_int(pk, t->id);
    key(pk, "name");
    key(pk, s->tenant[0] ? s->tenant : "");
    key(pk, "class");
    key(pk, s->tenant[0] == '\0' ? "" :
            atomic_load(&s->klass) == DS_CLASS_LATENCY ? "latency" : "best-effort");
    key(pk, "slo_ms");
    if (atomic_load(&s->slo_ms) != 0)
        msgpack_pack_unsigned_int(pk, atomic_load(&s->slo_ms));
    else
        msgpack_pack_nil(pk);
    key(pk, "pid");
    msgpack_pack_int(pk, s->pid);
    key(pk, "sms");
    msgpack_pack_unsigned_int(pk, sms);
    key(pk, "sm_groups");
    pack_groups(pk, groups, cfg->sm.count);
    key(pk, "memory_used");
    msgpack_pack_uint64(pk, atomic_load(&s->mem_used));
    key(pk, "launches");
    msgpack_pack_uint64(pk, atomic_load(&s->launches));
    key(pk, "migrations");
    msgpack_pack_unsigned_int(pk, atomic_load(&s->migrations));
    key(pk, "escapes");
    msgpack_pack_uint64(pk, atomic_load(&s->escapes));
    key(pk, "gated");
    if (atomic_load(&s->gate))
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    key(pk, "gated_ms");
    msgpack_pack_uint64(pk, atomic_load(&s->gated_ns) / 1000000u);
    key(pk, "kernel_ms");
    msgpack_pack_uint64(pk, atomic_load(&s->kernel_ns) / 1000000u);
    key(pk, "throttled");
    if (atomic_load(&s->throttled))
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    pack_running(pk, t);
    pack_decision(pk, cfg, s, t);
    pack_faults(pk, shm, d, s);
    pack_held(pk, shm, s);
    /* Last: the nested maps. */
    key(pk, "peer");
    pack_peer(pk, s);
    pack_memory(pk, shm, s);
}

/* Tenant names quarantined now, with the seconds left. */
static void pack_quarantine(msgpack_packer *pk, const struct ds_domains *d)
{
    uint64_t now = ds_now_ns();
    uint32_t n = 0;

    for (int i = 0; i < DS_DOMAIN_NAMES; i++)
        n += d->names[i].quarantine_end > now;
    msgpack_pack_array(pk, n);
    for (int i = 0; i < DS_DOMAIN_NAMES; i++) {
        if (d->names[i].quarantine_end <= now)
            continue;
        msgpack_pack_map(pk, 2);
        key(pk, "name");
        key(pk, d->names[i].name);
        key(pk, "seconds_left");
        msgpack_pack_uint64(pk, (d->names[i].quarantine_end - now + 999999999u) / 1000000000u);
    }
}

void ds_status_pack(msgpack_packer *pk, const struct ds_server_config *cfg,
                    const struct ds_shm *shm, const char *policy,
                    const struct ds_domains *domains, const struct ds_sched_tenant *tenants,
                    int n)
{
    char iso[DS_GROUP_MAX + 8];

    msgpack_pack_map(pk, 6);
    key(pk, "isolation");
    key(pk, ds_quota_isolation_format(cfg->isolation, cfg->isolation_group, iso, sizeof(iso)));
    key(pk, "quarantine");
    pack_quarantine(pk, domains);
    key(pk, "device");
    pack_device(pk, cfg);
    key(pk, "mps");
    key(pk, cfg->mps);
    key(pk, "policy");
    key(pk, policy);
    key(pk, "tenants");
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++)
        pack_tenant(pk, cfg, shm, domains, &shm->slots[tenants[i].id], &tenants[i]);
}

void ds_status_pack_quotas(msgpack_packer *pk, const struct ds_shm_quota *v, unsigned n)
{
    char iso[DS_GROUP_MAX + 8];

    msgpack_pack_array(pk, n);
    for (unsigned i = 0; i < n; i++) {
        msgpack_pack_map(pk, 7);
        key(pk, "name");
        key(pk, v[i].name);
        key(pk, "isolation");
        key(pk, ds_quota_isolation_format(v[i].isolation, v[i].group, iso, sizeof(iso)));
        key(pk, "uid");
        if (v[i].has_uid)
            msgpack_pack_unsigned_int(pk, v[i].uid);
        else
            msgpack_pack_nil(pk);
        key(pk, "class");
        key(pk, v[i].klass == DS_QUOTA_LATENCY       ? "latency"
                : v[i].klass == DS_QUOTA_BEST_EFFORT ? "best-effort"
                                                     : "claimed");
        key(pk, "memory");
        pack_limit(pk, v[i].memory);
        key(pk, "sm_share");
        pack_limit(pk, v[i].sm_share);
        key(pk, "kernel_time");
        pack_limit(pk, v[i].kernel_time);
    }
}
