#include "fault.h"

#include "ds_clock.h"
#include "ds_log.h"
#include "shm.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static unsigned origin_of(const struct ds_tenant *t, const struct ds_shm_slot *s)
{
    unsigned o = atomic_load(&s->fault_origin);

    if (o != DS_FAULT_NONE)
        return o;
    if (!t->view.attrs[CU_DEVICE_ATTRIBUTE_MPS_ENABLED])
        return DS_FAULT_OWN;
    return DS_FAULT_UNKNOWN;
}

/* One line on the tenant's stderr (fd 2 is the tenant's in an executor, devout.h). */
static void tell_tenant(const struct ds_tenant *t, const char *line)
{
    if (t->own_process && write(2, line, strlen(line)) < 0)
        ds_debug("could not write to the tenant's stderr");
}

void ds__fault_record(struct ds_tenant *t, int cu)
{
    struct ds_shm_slot *s = &t->shm->slots[t->slot];
    unsigned origin = origin_of(t, s);
    uint64_t by = atomic_load(&s->lost_to);
    struct ds_shm_domain *d = ds_shm_domain_of(t->shm, s);
    const char *culprit = d != NULL ? d->fault_name : "?";
    char line[DS_NAME_MAX + 200];

    atomic_store(&s->fault_cu, cu);
    atomic_store(&s->fault_ns, ds_now_ns());
    atomic_store(&s->fault_origin, origin);
    /* Under MPS every client of the domain lost its context too: the others look at
     * theirs now, and, in the shared domain, the control process hands out no warm
     * executor started before. */
    if (t->view.attrs[CU_DEVICE_ATTRIBUTE_MPS_ENABLED] && d != NULL)
        atomic_fetch_add(&d->lost, 1);
    if (origin == DS_FAULT_OWN) {
        ds_error("the device context failed (CUresult %d), by a fault of this tenant's own "
                 "kernel: every later call fails with it, as natively", cu);
    } else if (origin == DS_FAULT_NEIGHBOUR && by != 0) {
        snprintf(line, sizeof(line), "detshare: context lost: tenant %llu (%s) faulted on the "
                 "shared GPU (CUresult %d)\n", (unsigned long long)by, culprit, cu);
        ds_error("the device context failed (CUresult %d): tenant %llu (%s) faulted on the "
                 "shared GPU", cu, (unsigned long long)by, culprit);
        tell_tenant(t, line);
    } else {
        snprintf(line, sizeof(line), "detshare: context lost (CUresult %d): a kernel of this "
                 "process or of another tenant sharing the GPU under MPS faulted; which one "
                 "cannot be told\n", cu);
        ds_error("the device context failed (CUresult %d): this tenant's kernel or, under MPS, "
                 "a neighbour's faulted; which one cannot be told", cu);
        tell_tenant(t, line);
    }
    ds_info("every later call of this tenant fails with CUresult %d; its executor leaves in "
            "a second so that the GPU can take new tenants again", cu);
}
