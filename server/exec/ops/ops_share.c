/* The tenant's share of its device, which detshare's NVML library shows in place of the
 * whole card's, and the device's own facts, which it shows as they are (docs/nvml.md). */
#include "ops.h"

#include "ds_clock.h"
#include "ds_devfacts.h"
#include "shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CUresult ds__ops_tenant_share(struct ds_tenant *t, const int *dev, ds_share_res *r)
{
    ds_share *s = &r->ds_share_res_u.share;

    if (*dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    /* Free and total exactly as cuMemGetInfo reports them, so that the two never
     * disagree. */
    t->ops->dev_info(t->be, &s->mem_free, &s->mem_total);
    ds__account_info(&t->acct, t->view.total_mem, &s->mem_free, &s->mem_total);
    s->mem_used = t->acct.total;
    /* The control process adds to kernel_ns at every sample (DS_SCHED_SAMPLE_MS); read
     * with the clock, the library turns two readings into a busy fraction. */
    s->kernel_ns = atomic_load(&t->shm->slots[t->slot].kernel_ns);
    s->now_ns = ds_now_ns();
    return CUDA_SUCCESS;
}

_Static_assert(DS_FACTS_ROOM == DS_FACTS_MAX && DS_FACT_TEXTS_ROOM == DS_FACT_TEXTS_MAX &&
                   DS_FACT_TEXT_LEN == DS_FACT_TEXT_MAX + 1 &&
                   DS_FACT_CPU_WORDS_ROOM == DS_FACT_CPU_WORDS &&
                   DS_FACT_NODE_WORDS_ROOM == DS_FACT_NODE_WORDS,
               "ds_devfacts.h and detshare.x agree on the bounds");

/* Copy n words into a fresh array the dispatcher frees with the reply. */
static uint64_t *words(const uint64_t *from, unsigned n)
{
    uint64_t *w = malloc((n ? n : 1) * sizeof(*w));

    if (w != NULL && n > 0)
        memcpy(w, from, n * sizeof(*w));
    return w;
}

static int to_wire(const struct ds_devfacts *d, ds_facts *w)
{
    w->served = d->served;
    w->values.values_len = DS_FACT_COUNT;
    w->texts.texts_len = DS_TEXT_COUNT;
    w->cpus.cpus_len = d->ncpu_words;
    w->nodes.nodes_len = d->nnode_words;
    if ((w->values.values_val = words(d->v, DS_FACT_COUNT)) == NULL ||
        (w->cpus.cpus_val = words(d->cpus, d->ncpu_words)) == NULL ||
        (w->nodes.nodes_val = words(d->nodes, d->nnode_words)) == NULL ||
        (w->texts.texts_val = calloc(DS_TEXT_COUNT, sizeof(ds_fact_text))) == NULL)
        return -1;
    for (unsigned i = 0; i < DS_TEXT_COUNT; i++)
        if ((w->texts.texts_val[i] = strdup(d->text[i])) == NULL)
            return -1;
    return 0;
}

/* The host's boot id into text, or "" when it cannot be read: the NVML library then
 * takes the device for one of an unknown host. */
static void host_boot(char text[DS_FACT_TEXT_LEN])
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    text[0] = '\0';
    if (f == NULL)
        return;
    if (fgets(text, DS_FACT_TEXT_LEN, f) == NULL)
        text[0] = '\0';
    fclose(f);
    text[strcspn(text, "\n")] = '\0';
}

CUresult ds__ops_device_facts(struct ds_tenant *t, const int *dev, ds_facts_res *r)
{
    struct ds_devfacts d;

    if (*dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    memset(&d, 0, sizeof(d));
    t->ops->device_facts(t->be, &d);
    host_boot(d.text[DS_TEXT_HOST_BOOT]);
    /* What the backend read goes out as the tenant will check it. */
    ds_devfacts_sanitize(&d);
    memset(r, 0, sizeof(*r));
    if (to_wire(&d, &r->ds_facts_res_u.facts) != 0) {
        xdr_free((xdrproc_t)xdr_ds_facts_res, (char *)r);
        memset(r, 0, sizeof(*r));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}
