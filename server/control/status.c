#include "status.h"

#include "admin_fields.h"
#include "ds_clock.h"
#include "ds_slo.h"
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
    key(pk, DS_ADMIN_KEY_BACKEND);
    key(pk, cfg->backend->name);
    key(pk, DS_ADMIN_KEY_SMS);
    msgpack_pack_unsigned_int(pk, cfg->sm.sms);
    key(pk, DS_ADMIN_KEY_SM_GROUPS);
    msgpack_pack_unsigned_int(pk, cfg->sm.count);
    key(pk, DS_ADMIN_KEY_SM_GROUP_SIZE);
    msgpack_pack_unsigned_int(pk, cfg->sm.size);
    key(pk, DS_ADMIN_KEY_MEMORY);
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
    key(pk, DS_ADMIN_KEY_PID);
    msgpack_pack_int(pk, s->peer_pid);
    key(pk, DS_ADMIN_KEY_UID);
    msgpack_pack_unsigned_int(pk, s->peer_uid);
    key(pk, DS_ADMIN_KEY_GID);
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
    key(pk, DS_ADMIN_KEY_COMPLETED);
    msgpack_pack_uint64(pk, t->done);
    key(pk, DS_ADMIN_KEY_IN_FLIGHT);
    msgpack_pack_uint64(pk, t->inflight);
    key(pk, DS_ADMIN_KEY_KERNEL_US);
    if (t->kernel_us > 0)
        msgpack_pack_double(pk, t->kernel_us);
    else
        msgpack_pack_nil(pk);
    key(pk, DS_ADMIN_KEY_COMPLETION_RATE);
    msgpack_pack_double(pk, t->rate);
}

/* What the policy decided for it, which the executor follows at its next kernel. */
static void pack_decision(msgpack_packer *pk, const struct ds_server_config *cfg,
                          const struct ds_shm_slot *s, const struct ds_sched_tenant *t)
{
    static const char *const phases[] = { "auto", "decode", "prefill" };

    key(pk, DS_ADMIN_KEY_PHASE);
    key(pk, t->phase >= 0 && t->phase <= 2 ? phases[t->phase] : "auto");
    key(pk, DS_ADMIN_KEY_DECIDED_SM_GROUPS);
    pack_groups(pk, atomic_load(&s->groups), cfg->sm.count);
    key(pk, DS_ADMIN_KEY_DECISION);
    if (t->why != NULL)
        key(pk, t->why);
    else
        msgpack_pack_nil(pk);
}

/* What the tenant holds by kind, and the quota of its name (nil: none, or no name yet). */
static void pack_memory(msgpack_packer *pk, const struct ds_shm *shm, const struct ds_shm_slot *s)
{
    const struct ds_shm_quota *q = ds_quota_match_slot(shm->quotas, shm->nquotas, s);

    key(pk, DS_ADMIN_KEY_MEMORY);
    msgpack_pack_map(pk, 4);
    key(pk, DS_ADMIN_KEY_DEVICE);
    msgpack_pack_uint64(pk, atomic_load(&s->mem_kind[DS_MEM_DEVICE]));
    key(pk, DS_ADMIN_KEY_VMM);
    msgpack_pack_uint64(pk, atomic_load(&s->mem_kind[DS_MEM_VMM]));
    key(pk, DS_ADMIN_KEY_POOL);
    msgpack_pack_uint64(pk, atomic_load(&s->mem_kind[DS_MEM_POOL]));
    key(pk, DS_ADMIN_KEY_MANAGED);
    msgpack_pack_uint64(pk, atomic_load(&s->mem_kind[DS_MEM_MANAGED]));
    key(pk, DS_ADMIN_KEY_MEMORY_QUOTA);
    pack_limit(pk, q ? q->memory : 0);
    key(pk, DS_ADMIN_KEY_SM_SHARE);
    pack_limit(pk, q ? q->sm_share : 0);
    key(pk, DS_ADMIN_KEY_KERNEL_TIME_QUOTA);
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

    key(pk, DS_ADMIN_KEY_ISOLATION);
    key(pk, ds_quota_isolation_format(atomic_load(&s->isolation),
                                      g <= DS_SHM_GROUPS ? shm->domains[g].group : "", iso,
                                      sizeof(iso)));
    key(pk, DS_ADMIN_KEY_QUARANTINED);
    if (e != NULL && e->quarantine_end > now)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    key(pk, DS_ADMIN_KEY_PROBATION);
    if (ds__domain_on_probation(e, now))
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    key(pk, DS_ADMIN_KEY_FAULTS);
    msgpack_pack_uint64(pk, e != NULL ? e->own_faults : 0);
    key(pk, DS_ADMIN_KEY_LOST_TO);
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

    key(pk, DS_ADMIN_KEY_QUOTA_RULE);
    key(pk, q ? q->name : "");
    key(pk, DS_ADMIN_KEY_HOST_BYTES);
    msgpack_pack_uint64(pk, atomic_load(&s->host_bytes));
}

/* The SLO exactly, in us, and in whole ms rounded up for readers older than us; both
 * nil when there is none. */
static void pack_slo(msgpack_packer *pk, uint32_t us)
{
    key(pk, DS_ADMIN_KEY_SLO_MS);
    if (us != 0)
        msgpack_pack_uint32(pk, ds_slo_ms_ceil(us));
    else
        msgpack_pack_nil(pk);
    key(pk, DS_ADMIN_KEY_SLO_US);
    if (us != 0)
        msgpack_pack_uint32(pk, us);
    else
        msgpack_pack_nil(pk);
}

static void pack_tenant(msgpack_packer *pk, const struct ds_server_config *cfg,
                        const struct ds_shm *shm, const struct ds_domains *d,
                        const struct ds_shm_slot *s, const struct ds_sched_tenant *t)
{
    uint64_t groups = atomic_load(&s->bound_groups);
    unsigned sms = groups == 0 ? cfg->sm.sms : (unsigned)__builtin_popcountll(groups) * cfg->sm.size;

    msgpack_pack_map(pk, 36);
    key(pk, DS_ADMIN_KEY_ID);
    msgpack_pack_uint64(pk, s->id);
    key(pk, DS_ADMIN_KEY_SLOT);
    msgpack_pack_int(pk, t->id);
    key(pk, DS_ADMIN_KEY_NAME);
    key(pk, s->tenant[0] ? s->tenant : "");
    key(pk, DS_ADMIN_KEY_CLASS);
    key(pk, s->tenant[0] == '\0' ? "" :
            atomic_load(&s->klass) == DS_CLASS_LATENCY ? "latency" : "best-effort");
    pack_slo(pk, atomic_load(&s->slo_us));
    key(pk, DS_ADMIN_KEY_PID);
    msgpack_pack_int(pk, s->pid);
    key(pk, DS_ADMIN_KEY_SMS);
    msgpack_pack_unsigned_int(pk, sms);
    key(pk, DS_ADMIN_KEY_SM_GROUPS);
    pack_groups(pk, groups, cfg->sm.count);
    key(pk, DS_ADMIN_KEY_MEMORY_USED);
    msgpack_pack_uint64(pk, atomic_load(&s->mem_used));
    key(pk, DS_ADMIN_KEY_LAUNCHES);
    msgpack_pack_uint64(pk, atomic_load(&s->launches));
    key(pk, DS_ADMIN_KEY_MIGRATIONS);
    msgpack_pack_unsigned_int(pk, atomic_load(&s->migrations));
    key(pk, DS_ADMIN_KEY_ESCAPES);
    msgpack_pack_uint64(pk, atomic_load(&s->escapes));
    key(pk, DS_ADMIN_KEY_GATED);
    if (atomic_load(&s->gate))
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    key(pk, DS_ADMIN_KEY_GATED_MS);
    msgpack_pack_uint64(pk, atomic_load(&s->gated_ns) / 1000000u);
    key(pk, DS_ADMIN_KEY_KERNEL_MS);
    msgpack_pack_uint64(pk, atomic_load(&s->kernel_ns) / 1000000u);
    key(pk, DS_ADMIN_KEY_THROTTLED);
    if (atomic_load(&s->throttled))
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    pack_running(pk, t);
    pack_decision(pk, cfg, s, t);
    pack_faults(pk, shm, d, s);
    pack_held(pk, shm, s);
    /* Last: the nested maps. */
    key(pk, DS_ADMIN_KEY_PEER);
    pack_peer(pk, s);
    pack_memory(pk, shm, s);
}

/* Tenant names whose quarantine (probation: 0) or probation (1) lasts past now, with
 * the seconds left. */
static void pack_until(msgpack_packer *pk, const struct ds_domains *d, int probation)
{
    uint64_t now = ds_now_ns(), end[DS_DOMAIN_NAMES];
    uint32_t n = 0;

    for (int i = 0; i < DS_DOMAIN_NAMES; i++) {
        end[i] = probation ? d->names[i].probation_end : d->names[i].quarantine_end;
        n += end[i] > now;
    }
    msgpack_pack_array(pk, n);
    for (int i = 0; i < DS_DOMAIN_NAMES; i++) {
        if (end[i] <= now)
            continue;
        msgpack_pack_map(pk, 2);
        key(pk, DS_ADMIN_KEY_NAME);
        key(pk, d->names[i].name);
        key(pk, DS_ADMIN_KEY_SECONDS_LEFT);
        msgpack_pack_uint64(pk, (end[i] - now + 999999999u) / 1000000000u);
    }
}

static void pack_decisions(msgpack_packer *pk, const struct ds_decisions *d)
{
    msgpack_pack_map(pk, 3);
    key(pk, DS_ADMIN_KEY_COUNT);
    msgpack_pack_uint64(pk, d->count);
    key(pk, DS_ADMIN_KEY_MEAN_US);
    msgpack_pack_double(pk, d->count > 0 ? (double)d->total_ns / (double)d->count / 1e3 : 0.0);
    key(pk, DS_ADMIN_KEY_MAX_US);
    msgpack_pack_double(pk, (double)d->max_ns / 1e3);
}

void ds_status_pack(msgpack_packer *pk, const struct ds_server_config *cfg,
                    const struct ds_shm *shm, const char *policy,
                    const struct ds_decisions *decisions, const struct ds_domains *domains,
                    const struct ds_sched_tenant *tenants, int n)
{
    char iso[DS_GROUP_MAX + 8];

    msgpack_pack_map(pk, 8);
    key(pk, DS_ADMIN_KEY_ISOLATION);
    key(pk, ds_quota_isolation_format(cfg->isolation, cfg->isolation_group, iso, sizeof(iso)));
    key(pk, DS_ADMIN_KEY_QUARANTINE);
    pack_until(pk, domains, 0);
    key(pk, DS_ADMIN_KEY_PROBATION);
    pack_until(pk, domains, 1);
    key(pk, DS_ADMIN_KEY_DEVICE);
    pack_device(pk, cfg);
    key(pk, DS_ADMIN_KEY_MPS);
    key(pk, cfg->mps);
    key(pk, DS_ADMIN_KEY_POLICY);
    key(pk, policy);
    key(pk, DS_ADMIN_KEY_POLICY_DECISIONS);
    pack_decisions(pk, decisions);
    key(pk, DS_ADMIN_KEY_TENANTS);
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
        key(pk, DS_ADMIN_KEY_NAME);
        key(pk, v[i].name);
        key(pk, DS_ADMIN_KEY_ISOLATION);
        key(pk, ds_quota_isolation_format(v[i].isolation, v[i].group, iso, sizeof(iso)));
        key(pk, DS_ADMIN_KEY_UID);
        if (v[i].has_uid)
            msgpack_pack_unsigned_int(pk, v[i].uid);
        else
            msgpack_pack_nil(pk);
        key(pk, DS_ADMIN_KEY_CLASS);
        key(pk, v[i].klass == DS_QUOTA_LATENCY       ? "latency"
                : v[i].klass == DS_QUOTA_BEST_EFFORT ? "best-effort"
                                                     : "claimed");
        key(pk, DS_ADMIN_KEY_MEMORY);
        pack_limit(pk, v[i].memory);
        key(pk, DS_ADMIN_KEY_SM_SHARE);
        pack_limit(pk, v[i].sm_share);
        key(pk, DS_ADMIN_KEY_KERNEL_TIME);
        pack_limit(pk, v[i].kernel_time);
    }
}
