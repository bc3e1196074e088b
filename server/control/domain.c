#include "domain.h"

#include <stdio.h>
#include <string.h>

/* A rule's pattern: a name, or a prefix ending in '*' (quota.h). */
static int matches(const char *pattern, const char *name)
{
    size_t n = strlen(pattern);

    if (n > 0 && pattern[n - 1] == '*')
        return strncmp(pattern, name, n - 1) == 0;
    return strcmp(pattern, name) == 0;
}

const struct ds_domain_name *ds__domain_find(const struct ds_domains *d, const char *name)
{
    for (int i = 0; i < DS_DOMAIN_NAMES; i++)
        if (d->names[i].name[0] != '\0' && strcmp(d->names[i].name, name) == 0)
            return &d->names[i];
    return NULL;
}

/* The entry of `name`, made when missing in place of the one seen longest ago. */
static struct ds_domain_name *entry(struct ds_domains *d, const char *name, uint64_t now)
{
    struct ds_domain_name *e = (struct ds_domain_name *)ds__domain_find(d, name), *old;

    if (e == NULL) {
        old = &d->names[0];
        for (int i = 1; i < DS_DOMAIN_NAMES; i++)
            if (d->names[i].seen_ns < old->seen_ns)
                old = &d->names[i];
        e = old;
        *e = (struct ds_domain_name){ 0 };
        snprintf(e->name, sizeof(e->name), "%s", name);
    }
    e->seen_ns = now;
    return e;
}

uint32_t ds__domain_of(struct ds_domains *d, const struct ds_shm_quota *rule, const char *name,
                       uint64_t now)
{
    const struct ds_domain_name *e = ds__domain_find(d, name);

    if (e != NULL && (e->quarantine_end > now || e->probation_end > now))
        return DS_ISO_OWN;
    if (rule != NULL && rule->isolation != DS_ISO_UNSET)
        return rule->isolation;
    return d->fallback != DS_ISO_UNSET ? d->fallback : DS_ISO_SHARED;
}

const char *ds__domain_group(const struct ds_domains *d, const struct ds_shm_quota *rule)
{
    if (rule != NULL && rule->isolation != DS_ISO_UNSET)
        return rule->group;
    return d->fallback_group;
}

int ds__domain_fault(struct ds_domains *d, const char *name, uint64_t now)
{
    struct ds_domain_name *e = entry(d, name, now);
    int was = e->quarantine_end > now;

    e->own_faults++;
    if (d->quarantine_ns == 0)
        return 0;
    e->quarantine_end = now + d->quarantine_ns;
    return !was;
}

int ds__domain_on_probation(const struct ds_domain_name *e, uint64_t now)
{
    return e != NULL && e->probation_end > now;
}

int ds__domain_own_fault(struct ds_domains *d, const char *name, uint64_t now)
{
    struct ds_domain_name *e = entry(d, name, now);
    uint64_t incident = e->incident;

    e->own_faults++;
    if (!ds__domain_on_probation(e, now))
        return 0;
    /* The others suspected of the same fault are innocent: one fault has one culprit. */
    for (int i = 0; i < DS_DOMAIN_NAMES; i++)
        if (d->names[i].incident == incident)
            d->names[i].probation_end = 0;
    e->quarantine_end = now + d->quarantine_ns;
    return 1;
}

void ds__domain_lost(struct ds_domains *d, const char *name, uint64_t now)
{
    entry(d, name, now)->lost++;
}

/* Under MPS every context of the domain fails within milliseconds of the fault (run
 * 114: six within 3 ms); their executors report as they notice, within the second. */
#define DS_DOMAIN_BURST_NS 1000000000ull

int ds__domain_unknown(struct ds_domains *d, const char *name, uint64_t now)
{
    struct ds_domain_name *e = entry(d, name, now);
    int was = ds__domain_on_probation(e, now);

    e->unknown++;
    if (d->quarantine_ns == 0)
        return 0;
    if (d->incident == 0 || now - d->last_unknown > DS_DOMAIN_BURST_NS)
        d->incident++;
    d->last_unknown = now;
    e->incident = d->incident;
    e->probation_end = now + d->quarantine_ns;
    return !was;
}

int ds__domain_clean(struct ds_domains *d, const char *name, uint64_t now)
{
    struct ds_domain_name *e = (struct ds_domain_name *)ds__domain_find(d, name);

    if (!ds__domain_on_probation(e, now))
        return 0;
    e->probation_end = 0;
    return 1;
}

void ds__domain_lift(struct ds_domains *d, const char *pattern)
{
    for (int i = 0; i < DS_DOMAIN_NAMES; i++)
        if (d->names[i].name[0] != '\0' && matches(pattern, d->names[i].name))
            d->names[i].quarantine_end = d->names[i].probation_end = 0;
}
