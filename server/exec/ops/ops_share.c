/* The tenant's share of its device, which detshare's NVML library shows in place of the
 * whole card's (docs/nvml.md). */
#include "ops.h"

#include "ds_clock.h"
#include "shm.h"

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
