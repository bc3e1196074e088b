#include "quota.h"

#include "detshare.h"
#include "ds_error.h"

#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_shift(const char *u, int *shift)
{
    static const char units[] = "KMGT";
    const char *at;

    *shift = 0;
    if (*u != '\0' && (at = strchr(units, *u & ~0x20)) != NULL) {
        *shift = 10 * (int)(at - units + 1);
        u++;
        if (*u == 'i')
            u++;
    }
    if (*u == 'B' || *u == 'b')
        u++;
    return *u == '\0' ? 0 : DS_EINVAL;
}

int ds_quota_parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    int shift;

    if (*s < '0' || *s > '9')
        return DS_EINVAL;
    v = strtoull(s, &end, 10);
    if (unit_shift(end, &shift) != 0 || v == 0 || v > (UINT64_MAX >> shift))
        return DS_EINVAL;
    *out = (uint64_t)v << shift;
    return 0;
}

int ds_quota_name_ok(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > DS_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (name[i] <= 32 || name[i] >= 127 || (name[i] == '*' && i != n - 1))
            return 0;
    return 1;
}

static const char *set_memory(const char *v, struct ds_shm_quota *q)
{
    if (strcmp(v, "none") == 0)
        q->memory = 0;
    else if (ds_quota_parse_size(v, &q->memory) != 0)
        return "memory= takes a size (4GiB, 512MiB, a number of bytes) or none";
    return NULL;
}

/* A percentage limit: 1..100, a '%' allowed after it, or none (0). */
static int set_percent(const char *v, uint32_t *out)
{
    char *end;
    unsigned long pct;

    if (strcmp(v, "none") == 0) {
        *out = 0;
        return 0;
    }
    pct = strtoul(v, &end, 10);
    if (*v < '0' || *v > '9' || (*end != '\0' && strcmp(end, "%") != 0) || pct == 0 || pct > 100)
        return -1;
    *out = (uint32_t)pct;
    return 0;
}

static const char *set_class(const char *v, struct ds_shm_quota *q)
{
    if (strcmp(v, "claimed") == 0 || strcmp(v, "none") == 0)
        q->klass = DS_QUOTA_CLAIMED;
    else if (strcmp(v, "latency") == 0)
        q->klass = DS_QUOTA_LATENCY;
    else if (strcmp(v, "best-effort") == 0)
        q->klass = DS_QUOTA_BEST_EFFORT;
    else
        return "class= takes latency, best-effort, or claimed (the tenant's own word)";
    return NULL;
}

/* A Unix user id, or none.  uid=0 binds a rule to root like any other user. */
static const char *set_uid(const char *v, struct ds_shm_quota *q)
{
    char *end;
    unsigned long uid;

    if (strcmp(v, "none") == 0) {
        q->uid = 0;
        q->has_uid = 0;
        return NULL;
    }
    uid = strtoul(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0' || uid >= UINT32_MAX)
        return "uid= takes a Unix user id (a number) or none";
    q->uid = (uint32_t)uid;
    q->has_uid = 1;
    return NULL;
}

#define TEXT_OF(x) #x
#define TEXT(x) TEXT_OF(x)
#define GROUP_MAX_TEXT TEXT(DS_GROUP_MAX)
#define GROUPS_TEXT TEXT(DS_SHM_GROUPS)

const char *ds_quota_setting(const char *kv, struct ds_shm_quota *q, unsigned *which)
{
    if (strncmp(kv, "memory=", 7) == 0) {
        *which = DS_QUOTA_MEMORY;
        return set_memory(kv + 7, q);
    }
    if (strncmp(kv, "sm-share=", 9) == 0) {
        *which = DS_QUOTA_SM_SHARE;
        return set_percent(kv + 9, &q->sm_share) == 0
                   ? NULL
                   : "sm-share= takes a percentage of the SM groups, 1 to 100, or none";
    }
    if (strncmp(kv, "kernel-time=", 12) == 0) {
        *which = DS_QUOTA_KERNEL_TIME;
        return set_percent(kv + 12, &q->kernel_time) == 0
                   ? NULL
                   : "kernel-time= takes a percentage of the time, 1 to 100, or none";
    }
    if (strncmp(kv, "class=", 6) == 0) {
        *which = DS_QUOTA_CLASS;
        return set_class(kv + 6, q);
    }
    if (strncmp(kv, "isolation=", 10) == 0) {
        *which = DS_QUOTA_ISOLATION;
        return ds_quota_parse_isolation(kv + 10, &q->isolation, q->group) == 0
                   ? NULL
                   : "isolation= takes shared, own, group:NAME (a named fault domain; NAME: 1 "
                     "to " GROUP_MAX_TEXT " letters, digits, '-' or '_'), or default (the "
                     "server's --isolation)";
    }
    if (strncmp(kv, "uid=", 4) == 0) {
        *which = DS_QUOTA_UID;
        return set_uid(kv + 4, q);
    }
    return "expected memory=SIZE, sm-share=PCT, kernel-time=PCT, class=CLASS, "
           "isolation=DOMAIN or uid=UID";
}

int ds_quota_group_ok(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > DS_GROUP_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '-' && name[i] != '_')
            return 0;
    return 1;
}

int ds_quota_parse_isolation(const char *v, uint32_t *out, char *group)
{
    group[0] = '\0';
    if (strcmp(v, "shared") == 0) {
        *out = DS_ISO_SHARED;
    } else if (strcmp(v, "own") == 0) {
        *out = DS_ISO_OWN;
    } else if (strcmp(v, "default") == 0 || strcmp(v, "none") == 0) {
        *out = DS_ISO_UNSET;
    } else if (strncmp(v, "group:", 6) == 0 && ds_quota_group_ok(v + 6)) {
        *out = DS_ISO_GROUP;
        memcpy(group, v + 6, strlen(v + 6) + 1);
    } else {
        return DS_EINVAL;
    }
    return 0;
}

const char *ds_quota_isolation_format(uint32_t isolation, const char *group, char *buf,
                                      size_t len)
{
    if (isolation == DS_ISO_GROUP)
        snprintf(buf, len, "group:%s", group);
    else
        snprintf(buf, len, "%s", isolation == DS_ISO_OWN      ? "own"
                                 : isolation == DS_ISO_SHARED ? "shared"
                                                              : "default");
    return buf;
}

unsigned ds_quota_groups(const struct ds_shm_quota *v, unsigned n, const char *also)
{
    unsigned count = also != NULL && also[0] != '\0';

    for (unsigned i = 0; i < n; i++) {
        int seen = v[i].isolation != DS_ISO_GROUP ||
                   (also != NULL && strcmp(v[i].group, also) == 0);

        for (unsigned j = 0; j < i && !seen; j++)
            seen = v[j].isolation == DS_ISO_GROUP && strcmp(v[j].group, v[i].group) == 0;
        count += !seen;
    }
    return count;
}

const char *ds_quota_groups_check(const struct ds_shm_quota *v, unsigned n, const char *also)
{
    if (ds_quota_groups(v, n, also) <= DS_SHM_GROUPS)
        return NULL;
    return "too many named fault domains: the quota rules and --isolation may name at most "
           GROUPS_TEXT " groups (isolation=group:NAME); each is an MPS daemon of its own";
}

int ds_quota_empty(const struct ds_shm_quota *q)
{
    return q->memory == 0 && q->sm_share == 0 && q->kernel_time == 0 &&
           q->klass == DS_QUOTA_CLAIMED && q->isolation == DS_ISO_UNSET && !q->has_uid;
}

int ds_quota_class_of(const struct ds_shm_quota *q, int claimed)
{
    if (q == NULL || q->klass == DS_QUOTA_CLAIMED)
        return claimed;
    return q->klass == DS_QUOTA_LATENCY ? DS_CLASS_LATENCY : DS_CLASS_BEST_EFFORT;
}

/* How well rule `pattern` fits `name`: 0 not at all, else higher for a closer fit. */
static size_t fit(const char *pattern, const char *name)
{
    size_t n = strlen(pattern);

    if (n > 0 && pattern[n - 1] == '*')
        return strncmp(pattern, name, n - 1) == 0 ? n : 0;
    return strcmp(pattern, name) == 0 ? SIZE_MAX : 0;
}

const struct ds_shm_quota *ds_quota_match(const struct ds_shm_quota *v, unsigned n,
                                          const char *name)
{
    const struct ds_shm_quota *best = NULL;
    size_t best_fit = 0, f;

    for (unsigned i = 0; i < n; i++)
        if ((f = fit(v[i].name, name)) > best_fit) {
            best = &v[i];
            best_fit = f;
        }
    return best;
}

/* Of the rules bound to uid, the one that fits `name` best, else the first by name. */
static const struct ds_shm_quota *match_bound(const struct ds_shm_quota *v, unsigned n,
                                              const char *name, uint32_t uid)
{
    const struct ds_shm_quota *best = NULL;
    size_t best_fit = 0, f;

    for (unsigned i = 0; i < n; i++) {
        if (!v[i].has_uid || v[i].uid != uid)
            continue;
        f = fit(v[i].name, name);
        if (best == NULL || f > best_fit ||
            (f == best_fit && strcmp(v[i].name, best->name) < 0)) {
            best = &v[i];
            best_fit = f;
        }
    }
    return best;
}

const struct ds_shm_quota *ds_quota_match_uid(const struct ds_shm_quota *v, unsigned n,
                                              const char *name, long uid)
{
    const struct ds_shm_quota *q = uid >= 0 ? match_bound(v, n, name, (uint32_t)uid) : NULL;

    return q != NULL ? q : ds_quota_match(v, n, name);
}

const struct ds_shm_quota *ds_quota_match_slot(const struct ds_shm_quota *v, unsigned n,
                                               const struct ds_shm_slot *s)
{
    if (s->tenant[0] == '\0')
        return NULL;
    return ds_quota_match_uid(v, n, s->tenant, s->peer_pid != 0 ? (long)s->peer_uid : -1);
}

/* FNV-1a: rules are few, and a collision only makes two of them share a limit. */
uint64_t ds_quota_key(const struct ds_shm_quota *q)
{
    uint64_t h = 14695981039346656037ull;

    if (q == NULL || q->name[0] == '\0')
        return 0;
    for (const char *c = q->name; *c != '\0'; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h != 0 ? h : 1;
}

/* After the rules changed: the rule each named tenant now falls under.  An executor that
 * read the old rules at its hello sees the change and writes its key again. */
static void rekey(struct ds_shm *shm)
{
    for (uint32_t i = 0; i < shm->nslots; i++) {
        struct ds_shm_slot *s = &shm->slots[i];

        if (atomic_load(&s->state) != 0)
            atomic_store(&s->quota_key,
                         ds_quota_key(ds_quota_match_slot(shm->quotas, shm->nquotas, s)));
    }
}

void ds_quota_publish(struct ds_shm *shm, const struct ds_shm_quota *v, unsigned n)
{
    unsigned seq = atomic_load_explicit(&shm->quota_seq, memory_order_relaxed);

    atomic_store_explicit(&shm->quota_seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    memset(shm->quotas, 0, sizeof(shm->quotas));
    memcpy(shm->quotas, v, (size_t)n * sizeof(*v));
    shm->nquotas = n;
    atomic_store_explicit(&shm->quota_seq, seq + 2, memory_order_release);
    rekey(shm);
}

unsigned ds_quota_lookup(struct ds_shm *shm, const char *name, long uid,
                         struct ds_shm_quota *out)
{
    const struct ds_shm_quota *q;
    unsigned seq;

    for (;;) {
        seq = atomic_load_explicit(&shm->quota_seq, memory_order_acquire);
        if (seq & 1) {
            sched_yield();
            continue;
        }
        q = ds_quota_match_uid(shm->quotas, shm->nquotas <= DS_SHM_QUOTAS ? shm->nquotas : 0,
                               name, uid);
        if (q != NULL)
            *out = *q;
        else
            memset(out, 0, sizeof(*out));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&shm->quota_seq, memory_order_relaxed) == seq)
            return seq;
    }
}

uint64_t ds_quota_cap_groups(uint64_t groups, unsigned count, unsigned pct)
{
    uint64_t all = count >= 64 ? ~0ull : (1ull << count) - 1, have = groups ? groups : all;
    unsigned k = count * pct / 100;

    if (pct == 0 || pct >= 100 || count == 0)
        return groups;
    if (k == 0)
        k = 1;
    if ((unsigned)__builtin_popcountll(have) <= k)
        return groups;
    for (uint64_t kept = 0;; have &= have - 1) {
        kept |= have & -have;
        if (--k == 0)
            return kept;
    }
}
