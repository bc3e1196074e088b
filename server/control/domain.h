/*
 * Fault domains: which executors share an MPS server, and so share their faults
 * (shm.h, enum ds_isolation; docs/reliability.md).  A tenant's domain is decided by the
 * control process from the name its preface gave, before an executor is chosen: its
 * name's quarantine first, then its quota rule's isolation=, then the server's
 * --isolation; a named group (isolation=group:NAME) shares an MPS server of its own.
 * A tenant name whose kernel faulted in the shared domain or a group is quarantined:
 * its next connections run in a domain of their own for a while (--quarantine), unless
 * the operator sets the rule's isolation= again, which lifts it.
 *
 * On a GPU under MPS nothing tells whose kernel ended a shared domain's contexts (docs/
 * reliability.md: the first to report, MPS's log and the driver's log all named victims).
 * So every tenant name that lost its context to such an unattributed fault is put on
 * probation: its next connections run in a domain of their own, where a fault can only
 * be their own.  The first suspect to fault there is the culprit: it is quarantined, and
 * the other suspects of the same fault are cleared.  A suspect is also cleared when one
 * of its connections ran kernels in its own domain and ended without a fault, and when
 * the quarantine's time has passed.
 *
 * The table also counts, per tenant name, the faults of its own kernels and the
 * contexts it lost to neighbours, for status and metrics.  It holds DS_DOMAIN_NAMES
 * names; the one not seen for longest makes room for a new one.
 */
#ifndef DS_CONTROL_DOMAIN_H
#define DS_CONTROL_DOMAIN_H

#include "detshare.h"
#include "shm.h"

#include <stdint.h>

#define DS_DOMAIN_NAMES 64

struct ds_domain_name {
    char name[DS_NAME_MAX + 1];
    uint64_t seen_ns;        /* last counted or quarantined */
    uint64_t quarantine_end; /* ds_now_ns clock; 0: not quarantined */
    uint64_t probation_end;  /* the same clock; 0: not a suspect */
    uint64_t incident;       /* the unattributed fault it is a suspect of */
    uint64_t own_faults;
    uint64_t lost;           /* contexts lost to a neighbour's fault */
    uint64_t unknown;        /* contexts lost to a fault nobody could attribute */
};

struct ds_domains {
    uint32_t fallback;       /* enum ds_isolation: the server's --isolation */
    char fallback_group[DS_GROUP_MAX + 1]; /* its group, for DS_ISO_GROUP */
    uint64_t quarantine_ns;  /* --quarantine; 0: never (and no probation either) */
    uint64_t incident;       /* unattributed faults so far, one per burst */
    uint64_t last_unknown;   /* when the last context was lost to one */
    struct ds_domain_name names[DS_DOMAIN_NAMES];
};

/* The domain (DS_ISO_SHARED, DS_ISO_OWN or DS_ISO_GROUP) of tenant `name` at time now,
 * given its quota rule (NULL: none). */
uint32_t ds__domain_of(struct ds_domains *d, const struct ds_shm_quota *rule, const char *name,
                       uint64_t now);

/* The group's name where ds__domain_of gave DS_ISO_GROUP for `rule`: the rule's, or the
 * server's --isolation's. */
const char *ds__domain_group(const struct ds_domains *d, const struct ds_shm_quota *rule);

/* Tenant `name`'s kernel faulted in the shared domain: count it and quarantine the
 * name (when quarantine is on).  Returns 1 when it was quarantined now. */
int ds__domain_fault(struct ds_domains *d, const char *name, uint64_t now);

/* Count a fault of tenant `name`'s own kernel in a domain of its own.  Nobody else was
 * hurt, so no quarantine, unless the name was on probation: then it is the culprit of
 * the fault it was suspected of, and is quarantined.  Returns 1 in that case. */
int ds__domain_own_fault(struct ds_domains *d, const char *name, uint64_t now);

/* Tenant `name` lost its context to a neighbour's fault: count it. */
void ds__domain_lost(struct ds_domains *d, const char *name, uint64_t now);

/* Tenant `name` lost its context to a fault whose kernel was not told: count it, and
 * put the name on probation (when quarantine is on).  Contexts lost within a second of
 * each other count as one fault.  Returns 1 when the name went on probation now. */
int ds__domain_unknown(struct ds_domains *d, const char *name, uint64_t now);

/* A connection of tenant `name` ran kernels in a domain of its own and ended without a
 * fault: it is no longer a suspect.  Returns 1 when it was one. */
int ds__domain_clean(struct ds_domains *d, const char *name, uint64_t now);

/* Whether `name` is on probation at time now. */
int ds__domain_on_probation(const struct ds_domain_name *e, uint64_t now);

/* The operator set isolation= for rule `pattern` (a name, or a prefix ending in '*'):
 * the quarantine and probation of every name it matches end. */
void ds__domain_lift(struct ds_domains *d, const char *pattern);

/* The entry of `name`, or NULL when it has none. */
const struct ds_domain_name *ds__domain_find(const struct ds_domains *d, const char *name);

#endif
