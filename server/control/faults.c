#include "faults.h"

#include "control_int.h"

#include "ds_clock.h"
#include "ds_log.h"

#include <sys/wait.h>

/* Whether the executors of the shared domain share their faults: they are clients of
 * one MPS server (the sim models that). */
static int shares_faults(const struct control *c)
{
    return c->cfg->device == DS_SHM_SIM || atomic_load(&c->shm->mps_expected) != DS_SHM_MPS_NONE;
}

/* The name of the tenant whose fault ended the contexts of slot s's MPS domain. */
static const char *culprit_name(struct control *c, const struct ds_shm_slot *s)
{
    const struct ds_shm_domain *d = ds_shm_domain_of(c->shm, s);

    return d != NULL ? d->fault_name : "?";
}

/* The tenant in slot s left with a failed context: say whose fault it was, count it,
 * and quarantine a name whose own kernel faulted in the shared domain. */
static void tell_fault(struct control *c, const struct ds_shm_slot *s, const char *name)
{
    unsigned origin = atomic_load(&s->fault_origin);
    int cu = atomic_load(&s->fault_cu), shared = atomic_load(&s->isolation) != DS_ISO_OWN &&
                                                shares_faults(c);
    unsigned long long id = (unsigned long long)s->id, by = atomic_load(&s->lost_to);
    uint64_t now = ds_now_ns();

    if (origin == DS_FAULT_OWN) {
        ds_warn("tenant %llu (%s): its own kernel faulted (CUresult %d)%s", id, name, cu,
                shared ? ", ending the contexts of the tenants sharing its MPS domain" : "");
        if (shared && ds__domain_fault(&c->domains, name, now))
            ds_warn("tenant name %s is quarantined for %llu s: its connections run in a "
                    "fault domain of their own (detshare-ctl quota %s isolation=shared "
                    "lifts it)", name,
                    (unsigned long long)(c->domains.quarantine_ns / 1000000000ull), name);
        else if (!shared && ds__domain_own_fault(&c->domains, name, now))
            ds_warn("tenant name %s faulted alone while on probation: it is the culprit of "
                    "the shared domain's fault it was suspected of, and is quarantined for "
                    "%llu s; the other suspects are cleared", name,
                    (unsigned long long)(c->domains.quarantine_ns / 1000000000ull));
    } else if (origin == DS_FAULT_NEIGHBOUR && by != 0) {
        ds_warn("tenant %llu (%s) lost its context to tenant %llu (%s)'s fault on the shared "
                "GPU", id, name, by, culprit_name(c, s));
        ds__domain_lost(&c->domains, name, now);
    } else {
        ds_warn("tenant %llu (%s) lost its context (CUresult %d): its own kernel's fault or, "
                "under MPS, a neighbour's; which one cannot be told", id, name, cu);
        if (ds__domain_unknown(&c->domains, name, now))
            ds_warn("tenant name %s is on probation: its connections run in a fault domain "
                    "of their own until the culprit is found, one of them runs clean, or "
                    "%llu s pass (detshare-ctl quota %s isolation=shared lifts it)", name,
                    (unsigned long long)(c->domains.quarantine_ns / 1000000000ull), name);
    }
}

/* The tenant in slot s left without a fault: a suspect that ran kernels in a domain of
 * its own and ended cleanly is cleared (domain.h). */
static void tell_clean(struct control *c, const struct ds_shm_slot *s, const char *name)
{
    if (atomic_load(&s->isolation) != DS_ISO_OWN || atomic_load(&s->launches) == 0)
        return;
    if (ds__domain_clean(&c->domains, name, ds_now_ns()))
        ds_info("tenant name %s ran kernels in a domain of its own without a fault: its "
                "probation ends", name);
}

void ds__faults_tell(struct control *c, const struct ds_shm_slot *s, const char *name,
                     int status)
{
    if (atomic_load(&s->fault_cu) != 0)
        tell_fault(c, s, name);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == DS_EXEC_DISCONNECTED &&
             s->tenant[0] != '\0')
        tell_clean(c, s, name);
}

/* Under MPS a fault ends the context of every client of the domain: the other executors
 * are told to look at their own (shm faults); the warm ones, which have no tenant to find
 * out, are replaced by the domain's recovery. */
void ds__faults_lost(struct control *c, uint32_t isolation, unsigned group)
{
    if (isolation == DS_ISO_SHARED)
        atomic_fetch_add(&c->shm->faults, 1);
    if (isolation != DS_ISO_OWN && shares_faults(c))
        ds__recovery_begin(c, isolation == DS_ISO_GROUP ? group : 0);
}
