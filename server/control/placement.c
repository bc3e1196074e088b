#include "control_int.h"

#include "ds_clock.h"
#include "ds_error.h"
#include "ds_groups.h"
#include "ds_log.h"
#include "ds_slo.h"
#include "status.h"

#include <string.h>

/* While a quota limits SM shares: how often tenants' names are looked at, since a name
 * is known only from its tenant's hello, which the executor sees, not this process. */
#define DS_WATCH_MS 20

/* The quota rule of tenant `slot`, or NULL.  Until its hello names it, none applies. */
static const struct ds_shm_quota *rule_of(const struct control *c, int slot)
{
    return ds_quota_match_slot(c->rules, c->nrules, &c->shm->slots[slot]);
}

/* The share of the SM groups tenant `slot`'s quota allows, in percent (0: no limit). */
static unsigned sm_share_of(const struct control *c, int slot)
{
    const struct ds_shm_quota *q = rule_of(c, slot);

    return q != NULL ? q->sm_share : 0;
}

/* Hand the policy's decisions to the executors (shm.h), saying what changed.  Every
 * binding is cut to the tenant's SM share here, whatever the policy, which keeps its own
 * decision (so a share raised later gives back what the policy chose); a tenant its
 * kernel-time quota holds stays gated whatever the policy says. */
static void apply(struct control *c)
{
    char what[200];
    uint64_t want;

    for (int i = 0; i < c->ntenants; i++) {
        struct ds_sched_tenant *t = &c->tenants[i];

        int gated = t->gated || c->track[t->id].bucket.held;

        if ((unsigned)gated != atomic_load(&c->shm->slots[t->id].gate)) {
            ds_shm_gate(c->shm, t->id, gated);
            ds__tracectl_gate(c, t->id, gated);
            ds_debug("policy %s: tenant #%d %s%s", c->policy->name, t->id,
                     gated ? "held" : "released",
                     gated && !t->gated ? " (its kernel-time quota)" : "");
        }
        want = ds_quota_cap_groups(t->groups, c->cfg->sm.count, sm_share_of(c, t->id));
        if (want == atomic_load(&c->shm->slots[t->id].groups))
            continue;
        ds_shm_bind(c->shm, t->id, want);
        ds_groups_format(want, c->cfg->sm.size, what, sizeof(what));
        ds_info("policy %s: tenant #%d runs on %s%s", c->policy->name, t->id, what,
                want != t->groups ? " (held to its sm-share)" : "");
    }
}

static void on_watch(uv_timer_t *h)
{
    apply(h->data);
}

/* A connected tenant whose rule sets its class gets it now (its executor gave a later
 * tenant its rule's class at its hello). */
static void class_by_rule(struct control *c, int id)
{
    const struct ds_shm_quota *q = rule_of(c, id);
    struct ds_shm_slot *s = &c->shm->slots[id];
    int was = atomic_load(&s->klass), now = ds_quota_class_of(q, was);

    if (now == was)
        return;
    atomic_store(&s->klass, now);
    ds_info("tenant #%d (%s) is now %s, by its quota rule %s", id, s->tenant,
            now == DS_CLASS_LATENCY ? "latency-critical" : "best-effort", q->name);
}

/* Make rules v[0..n) the quotas in force: executors see them at their next allocation,
 * bindings at once (and, while any rule limits SM shares, as tenants name themselves). */
void ds__place_set_rules(struct control *c, const struct ds_shm_quota *v, unsigned n)
{
    int shares = 0;

    memmove(c->rules, v, (size_t)n * sizeof(*v));
    c->nrules = n;
    ds_quota_publish(c->shm, c->rules, n);
    for (int i = 0; i < c->ntenants; i++)
        class_by_rule(c, c->tenants[i].id);
    for (unsigned i = 0; i < n; i++)
        shares |= v[i].sm_share != 0;
    if (!shares)
        uv_timer_stop(&c->watch);
    else if (!uv_is_active((uv_handle_t *)&c->watch))
        uv_timer_start(&c->watch, on_watch, DS_WATCH_MS, DS_WATCH_MS);
    apply(c);
}

/* Tenant `id`'s kernel-time bucket, after the sample that took dt_ns.  Returns 1 when
 * whether it is held changed. */
static int throttle(struct control *c, int id, uint64_t dt)
{
    struct ds_shm_slot *s = &c->shm->slots[id];
    const struct ds_shm_quota *q = rule_of(c, id);
    /* Whatever class the tenant claims: its hello says which, so an exemption for
     * latency-critical work would be one any tenant could give itself. */
    unsigned pct = q != NULL ? q->kernel_time : 0;
    int was = c->track[id].bucket.held;
    int held = ds_throttle_step(&c->track[id].bucket, pct, c->track[id].p.kernel_ns, dt,
                                (int)atomic_load(&s->gate));

    atomic_store(&s->kernel_ns, c->track[id].p.kernel_ns);
    atomic_store(&s->throttled, (unsigned)held);
    if (atomic_load(&s->metered) != (pct != 0 && pct < 100))
        atomic_store(&s->metered, pct != 0 && pct < 100);
    if (held != was)
        ds_debug("tenant #%d %s its kernel-time quota (%u%%)", id,
                 held ? "is held to" : "is back within", pct);
    return held != was;
}

/* Read every tenant's launches and progress stamps into its predictor, and charge its
 * kernel time; a tenant its quota now holds or releases is gated or released at once. */
static void sample(struct control *c, uint64_t now)
{
    uint64_t dt = c->sampled_ns != 0 && now > c->sampled_ns ? now - c->sampled_ns : 0;
    int changed = 0;

    c->sampled_ns = now;
    for (int i = 0; i < c->ntenants; i++) {
        int id = c->tenants[i].id;
        uint64_t n = atomic_load_explicit(&c->shm->slots[id].launches, memory_order_acquire);

        ds_predict_sample(&c->track[id].p, now, n, ds_shm_stamps_done(c->shm, id, n, now));
        changed |= throttle(c, id, dt);
    }
    if (changed)
        apply(c);
}

/* The policy's view, with what executors and stamps reported since the last one. */
static struct ds_sched_view view_of(struct control *c)
{
    for (int i = 0; i < c->ntenants; i++) {
        struct ds_sched_tenant *t = &c->tenants[i];
        const struct ds_shm_slot *s = &c->shm->slots[t->id];
        const struct ds_predict *p = &c->track[t->id].p;

        /* Best-effort until its handshake says otherwise. */
        t->klass = s->tenant[0] != '\0' && atomic_load(&s->klass) == DS_CLASS_LATENCY
                       ? DS_SCHED_LATENCY
                       : DS_SCHED_BEST_EFFORT;
        t->slo_us = atomic_load(&s->slo_us);
        t->slo_ms = ds_slo_ms_ceil(t->slo_us);
        t->launches = p->launches;
        t->done = p->done;
        t->inflight = ds_predict_inflight(p);
        t->new_launches = p->launches - c->track[t->id].launches;
        t->new_done = p->done - c->track[t->id].done;
        t->rate = p->rate;
        t->launch_rate = p->launch_rate;
        t->kernel_us = p->kernel_us;
        t->escapes = atomic_load(&s->escapes);
    }
    struct ds_sched_view v = { .sm_groups = c->cfg->sm.count, .sm_group_size = c->cfg->sm.size,
                               .n = c->ntenants, .t = c->tenants, .now_ns = ds_now_ns() };

    return v;
}

/* One of the policy's callbacks started at t0 has returned. */
static void decided(struct control *c, uint64_t t0)
{
    uint64_t ns = ds_now_ns() - t0;

    c->decisions.count++;
    c->decisions.total_ns += ns;
    if (ns > c->decisions.max_ns)
        c->decisions.max_ns = ns;
}

void ds__place_joined(struct control *c, int slot)
{
    struct ds_sched_view v;
    uint64_t t0;

    c->tenants[c->ntenants++] = (struct ds_sched_tenant){ .id = slot };
    memset(&c->track[slot], 0, sizeof(c->track[slot]));
    v = view_of(c);
    t0 = ds_now_ns();
    c->policy->on_tenant_join(&v, c->ntenants - 1);
    decided(c, t0);
    apply(c);
}

/* A tenant's executor was reaped: its SM groups go back to the policy. */
void ds__place_left(struct control *c, int slot)
{
    struct ds_sched_view v;
    uint64_t t0;
    int i = 0;

    while (i < c->ntenants && c->tenants[i].id != slot)
        i++;
    if (i == c->ntenants)
        return;
    memmove(&c->tenants[i], &c->tenants[i + 1],
            (size_t)(c->ntenants - i - 1) * sizeof(c->tenants[0]));
    c->ntenants--;
    v = view_of(c);
    t0 = ds_now_ns();
    c->policy->on_tenant_leave(&v);
    decided(c, t0);
    apply(c);
}

/* The policy's tick: what happened since the last one is counted from here on. */
static void policy_tick(struct control *c)
{
    struct ds_sched_view v = view_of(c);
    uint64_t t0 = ds_now_ns();

    c->policy->on_tick(&v);
    decided(c, t0);
    apply(c);
    for (int i = 0; i < c->ntenants; i++) {
        int id = c->tenants[i].id;

        c->track[id].launches = c->track[id].p.launches;
        c->track[id].done = c->track[id].p.done;
    }
}

static void on_tick(uv_timer_t *h)
{
    struct control *c = h->data;
    uint64_t now = ds_now_ns();

    ds__recovery_watch(c);
    sample(c, now);
    if (c->policy->on_tick == NULL || now < c->next_tick_ns)
        return;
    c->next_tick_ns += (uint64_t)c->policy->tick_ms * 1000000u;
    /* Late by more than a tick (a stalled loop): the next one is a tick from now. */
    if (c->next_tick_ns <= now)
        c->next_tick_ns = now + (uint64_t)c->policy->tick_ms * 1000000u;
    policy_tick(c);
}

/* The sampling clock, the policy's first tick, whether executors gate on the GPU, and
 * the host memory limits they hold tenants to, all before the first tenant is served. */
void ds__place_start(struct control *c)
{
    c->shm->host_limit = c->cfg->host_limit;
    c->shm->host_total = c->cfg->host_total;
    atomic_store(&c->shm->gating, c->policy->gates ? 1u : 0u);
    c->next_tick_ns = ds_now_ns() + (uint64_t)c->policy->tick_ms * 1000000u;
    if (!uv_is_active((uv_handle_t *)&c->tick))
        uv_timer_start(&c->tick, on_tick, DS_SCHED_SAMPLE_MS, DS_SCHED_SAMPLE_MS);
}

static void admin_status(void *ctx, msgpack_packer *pk)
{
    struct control *c = ctx;

    /* The predictor's latest, whether or not the policy has looked since. */
    view_of(c);
    ds_status_pack(pk, c->cfg, c->shm, c->policy->name, &c->decisions, &c->domains, c->tenants,
                   c->ntenants);
}

/* A run-time switch: the new policy places every tenant served now. */
static const char *admin_policy(void *ctx, const char *name)
{
    struct control *c = ctx;
    const struct ds_policy *p;
    struct ds_sched_view v;

    if (name == NULL)
        return c->policy->name;
    if ((p = ds_policy_find(name)) == NULL)
        return NULL;
    if (p != c->policy) {
        ds_info("policy: %s, switched from %s", p->name, c->policy->name);
        c->policy = p;
        v = view_of(c);
        p->on_start(&v);
        apply(c);
        ds__place_start(c);
    }
    return c->policy->name;
}

/* The executor set the class from the tenant's handshake; from now on it is the
 * operator's, and the policy sees it at its next decision. */
static int admin_tenant_class(void *ctx, const char *name, int klass, unsigned slo_us)
{
    struct control *c = ctx;
    char ms[16];
    int n = 0;

    ds_slo_format(slo_us, ms, sizeof(ms));

    for (int i = 0; i < c->ntenants; i++) {
        struct ds_shm_slot *s = &c->shm->slots[c->tenants[i].id];

        if (s->tenant[0] == '\0' || strcmp(s->tenant, name) != 0)
            continue;
        n++;
        /* The device plugin says it again every round for tenants that came since: a
         * line only for a change. */
        if (atomic_load(&s->klass) == klass && atomic_load(&s->slo_us) == slo_us)
            continue;
        atomic_store(&s->klass, klass);
        atomic_store(&s->slo_us, slo_us);
        ds_info("tenant #%d (%s) is now %s, SLO %s ms (0: none)", c->tenants[i].id, name,
                klass == DS_CLASS_LATENCY ? "latency-critical" : "best-effort", ms);
    }
    return n;
}

/* The operator's word on what a tenant does; the policy sees it at its next decision. */
static int admin_tenant_phase(void *ctx, const char *name, int phase)
{
    static const char *const said[] = { "auto (the policy tells)", "decode", "prefill" };
    struct control *c = ctx;
    int n = 0;

    for (int i = 0; i < c->ntenants; i++) {
        const struct ds_shm_slot *s = &c->shm->slots[c->tenants[i].id];

        if (s->tenant[0] == '\0' || strcmp(s->tenant, name) != 0)
            continue;
        c->tenants[i].phase = phase;
        ds_info("tenant #%d (%s) phase: %s", c->tenants[i].id, name, said[phase]);
        n++;
    }
    return n;
}

static void admin_quotas(void *ctx, msgpack_packer *pk)
{
    struct control *c = ctx;

    ds_status_pack_quotas(pk, c->rules, c->nrules);
}

/* Tenants connected now whose quota rule is r. */
static int governed(const struct control *c, const struct ds_shm_quota *r)
{
    int n = 0;

    for (int i = 0; i < c->ntenants; i++) {
        n += ds_quota_match_slot(c->rules, c->nrules, &c->shm->slots[c->tenants[i].id]) == r;
    }
    return n;
}

static const char *admin_set_quota(void *ctx, const struct ds_shm_quota *q, unsigned limits,
                                   int *tenants)
{
    struct control *c = ctx;
    struct ds_shm_quota v[DS_SHM_QUOTAS], *r = NULL;
    unsigned n = c->nrules;
    char iso[DS_GROUP_MAX + 8];
    const char *why;

    memcpy(v, c->rules, (size_t)n * sizeof(*v));
    for (unsigned i = 0; i < n && r == NULL; i++)
        if (strcmp(v[i].name, q->name) == 0)
            r = &v[i];
    if (r == NULL) {
        if (n == DS_SHM_QUOTAS)
            return "the server holds no more quotas: remove one first";
        r = &v[n++];
        *r = (struct ds_shm_quota){ 0 };
        memcpy(r->name, q->name, sizeof(r->name));
    }
    if (limits & DS_QUOTA_MEMORY)
        r->memory = q->memory;
    if (limits & DS_QUOTA_SM_SHARE)
        r->sm_share = q->sm_share;
    if (limits & DS_QUOTA_KERNEL_TIME)
        r->kernel_time = q->kernel_time;
    if (limits & DS_QUOTA_CLASS)
        r->klass = q->klass;
    if (limits & DS_QUOTA_ISOLATION) {
        r->isolation = q->isolation;
        memcpy(r->group, q->group, sizeof(r->group));
    }
    if (limits & DS_QUOTA_UID) {
        r->uid = q->uid;
        r->has_uid = q->has_uid;
    }
    if ((why = ds_quota_groups_check(v, n, c->domains.fallback_group)) != NULL)
        return why;
    if (limits & DS_QUOTA_ISOLATION)
        ds__domain_lift(&c->domains, r->name);
    ds_info("quota %s: memory %llu bytes, sm-share %u%%, kernel-time %u%% (0: no limit), "
            "class %s, isolation %s, uid %ld (-1: any)", r->name,
            (unsigned long long)r->memory, r->sm_share, r->kernel_time,
            r->klass == DS_QUOTA_CLAIMED ? "as claimed" :
            r->klass == DS_QUOTA_LATENCY ? "latency" : "best-effort",
            ds_quota_isolation_format(r->isolation, r->group, iso, sizeof(iso)),
            r->has_uid ? (long)r->uid : -1L);
    if (ds_quota_empty(r))
        *r = v[--n];
    ds__place_set_rules(c, v, n);
    *tenants = 0;
    for (unsigned i = 0; i < c->nrules; i++)
        if (strcmp(c->rules[i].name, q->name) == 0)
            *tenants = governed(c, &c->rules[i]);
    return NULL;
}

static const char *admin_token(void *ctx, const char *token, const char *prefix,
                               const char *as, size_t *count)
{
    struct control *c = ctx;
    int rc;

    if (c->minted == NULL)
        return "the server had no memory for tokens at start";
    rc = prefix != NULL ? ds_tokens_add(c->minted, token, prefix, as)
                        : ds_tokens_revoke(c->minted, token);
    *count = ds_tokens_count(c->minted);
    if (rc == DS_EINVAL)
        return "a token is 1 to 255 bytes, its \"name\" prefix and \"as\" name printable and "
               "without spaces";
    if (rc == DS_EBUSY)
        return "the server holds as many added tokens as it may: revoke some first";
    if (rc == DS_EHANDLE)
        return "no such token (only tokens added through the admin socket can be revoked)";
    if (rc != 0)
        return ds_strerror(rc);
    /* Never the token: logs are read by more people than may use the GPU. */
    if (prefix != NULL)
        ds_info("a token is in force for tenant names beginning \"%s\"%s%s (%zu added)", prefix,
                as[0] ? ", naming them " : "", as, *count);
    else
        ds_info("a token was revoked (%zu added remain)", *count);
    return NULL;
}

void ds__place_admin_hooks(struct control *c, struct ds_admin_hooks *h)
{
    *h = (struct ds_admin_hooks){ .ctx = c, .pack_status = admin_status, .policy = admin_policy,
                                  .tenant_class = admin_tenant_class,
                                  .tenant_phase = admin_tenant_phase, .pack_quotas = admin_quotas,
                                  .set_quota = admin_set_quota, .trace = ds__tracectl_admin,
                                  .token = admin_token };
}
