/*
 * Quota rules: per-tenant limits chosen by tenant name.  A rule names one tenant
 * ("infer-1") or every tenant whose name starts with a prefix ("train-*"; "*" alone is
 * everyone).  The one rule that applies to a name is the most specific: an exact name
 * before any pattern, a longer prefix before a shorter one; its limits apply whole (rules
 * are not merged).
 *
 * The control process owns the rules (set through the admin API and the config file) and
 * publishes them in the control block; an executor looks its tenant's up there, at the
 * hello and again whenever they change, with no system call.
 */
#ifndef DS_QUOTA_H
#define DS_QUOTA_H

#include "shm.h"

#include <stddef.h>
#include <stdint.h>

/* "4GiB", "512MiB", "80G", "1048576" -> bytes (K, M, G, T are powers of 1024; "B",
 * "iB" may follow).  Returns 0, or DS_EINVAL for anything else, 0 bytes or overflow. */
int ds_quota_parse_size(const char *s, uint64_t *out);

/* 1 when `name` may name a rule: 1..DS_NAME_MAX printable characters without spaces (as
 * tenant names are kept), with '*' only as its last one. */
int ds_quota_name_ok(const char *name);

/* The limits of a rule, as bits: which ones a request or a setting names. */
enum {
    DS_QUOTA_MEMORY = 1,
    DS_QUOTA_SM_SHARE = 2,
    DS_QUOTA_KERNEL_TIME = 4,
    DS_QUOTA_CLASS = 8,
    DS_QUOTA_ISOLATION = 16,
    DS_QUOTA_UID = 32,
};

/* "shared", "own", "group:NAME" (a named fault domain; ds_quota_group_ok), or "default"
 * (also "none": not set by the rule) -> enum ds_isolation, and the group's name into
 * group (DS_GROUP_MAX + 1 bytes; "" but for a group).  Returns 0, or DS_EINVAL. */
int ds_quota_parse_isolation(const char *v, uint32_t *out, char *group);

/* 1 when `name` may name a group: 1..DS_GROUP_MAX letters, digits, '-' or '_' (it names
 * a directory, and shows in logs and status). */
int ds_quota_group_ok(const char *name);

/* "shared", "own", "group:NAME" or "default" of `isolation` (group: its name, for
 * DS_ISO_GROUP), for status and logs, into buf (at least DS_GROUP_MAX + 8 bytes). */
const char *ds_quota_isolation_format(uint32_t isolation, const char *group, char *buf,
                                      size_t len);

/* NULL when rules v[0..n) and the group `also` (NULL or "": none; the server's
 * --isolation) name DS_SHM_GROUPS named groups at most, else why not (static text). */
const char *ds_quota_groups_check(const struct ds_shm_quota *v, unsigned n, const char *also);

/* The named groups rules v[0..n) and `also` (a group, NULL or "": none) name together,
 * each counted once. */
unsigned ds_quota_groups(const struct ds_shm_quota *v, unsigned n, const char *also);

/* A rule's class=: the tenant's own word (its hello's DETSHARE_CLASS), or one the
 * operator sets, since a class a tenant may claim is priority any tenant may take. */
enum ds_quota_class { DS_QUOTA_CLAIMED = 0, DS_QUOTA_LATENCY = 1, DS_QUOTA_BEST_EFFORT = 2 };

/* 1 when rule q sets nothing (a rule left so goes). */
int ds_quota_empty(const struct ds_shm_quota *q);

/* The class (DS_CLASS_*) a tenant whose hello claims `claimed` gets under rule q (NULL:
 * none). */
int ds_quota_class_of(const struct ds_shm_quota *q, int claimed);

/* Apply one "key=value" setting to rule q: memory=SIZE|none, sm-share=PCT|none,
 * kernel-time=PCT|none (PCT 1..100), class=latency|best-effort|claimed,
 * isolation=shared|own|group:NAME|default, uid=N|none.  Returns NULL and sets *which to
 * the limit's bit, or returns why the setting is refused (static text). */
const char *ds_quota_setting(const char *kv, struct ds_shm_quota *q, unsigned *which);

/* The rule of v[0..n) that applies to tenant `name`, by its name alone, or NULL. */
const struct ds_shm_quota *ds_quota_match(const struct ds_shm_quota *v, unsigned n,
                                          const char *name);

/*
 * The rule of v[0..n) that applies to tenant `name` of Unix user uid (-1: unknown, a TCP
 * tenant), or NULL.  Rules bound to the tenant's uid (uid=) come first, whatever name it
 * claims: of those, the one that fits its name best, else the one whose name sorts
 * first.  Without one, the name decides, as ds_quota_match.
 */
const struct ds_shm_quota *ds_quota_match_uid(const struct ds_shm_quota *v, unsigned n,
                                              const char *name, long uid);

/* The rule of v[0..n) that applies to the tenant in slot s (ds_quota_match_uid with its
 * peer uid), or NULL, also until its hello has named it. */
const struct ds_shm_quota *ds_quota_match_slot(const struct ds_shm_quota *v, unsigned n,
                                               const struct ds_shm_slot *s);

/* The key of rule q (NULL: none) in slots' quota_key: 0 for none, else a hash of its
 * name, which names one rule. */
uint64_t ds_quota_key(const struct ds_shm_quota *q);

/* Replace the rules in the control block by v[0..n), n <= DS_SHM_QUOTAS, and every named
 * tenant's quota_key by its rule's under them.  Control process only. */
void ds_quota_publish(struct ds_shm *shm, const struct ds_shm_quota *v, unsigned n);

/* The rule that applies to `name` of Unix user uid (-1: unknown; ds_quota_match_uid) in
 * the control block, into *out (all zero: none).  Returns the rules' sequence number it
 * was read at, which ds_quota_changed compares. */
unsigned ds_quota_lookup(struct ds_shm *shm, const char *name, long uid,
                         struct ds_shm_quota *out);

/* 1 when the rules were republished since the lookup that returned `seq`: one atomic
 * load, for the allocation path. */
static inline int ds_quota_changed(struct ds_shm *shm, unsigned seq)
{
    return atomic_load_explicit(&shm->quota_seq, memory_order_relaxed) != seq;
}

/* SM groups `groups` (0: the whole device) of a device with `count` groups, cut down to
 * at most pct percent of them (at least one group): the lowest-numbered of the groups
 * given, so a policy's disjoint partitions stay disjoint.  pct 0 or 100 cuts nothing. */
uint64_t ds_quota_cap_groups(uint64_t groups, unsigned count, unsigned pct);

#endif
