/*
 * Kernel-time quotas (quota.h, kernel-time=PCT): a token bucket per tenant,
 * kept by the control process at every sample of running work.  The bucket fills at PCT
 * percent of wall time, up to PCT percent of DS_THROTTLE_BURST_NS, and the tenant's time
 * with work on the device (the predictor's kernel_ns) drains it.  When it runs dry the
 * tenant's gate closes until it holds PCT percent of DS_THROTTLE_RESUME_NS again: a
 * tenant that keeps the device busy runs in bursts, and at PCT percent of the time on
 * average.
 *
 * The time a tenant is held is not charged, but for the first step after its gate closed:
 * its kernels the gate keeps waiting look in flight but do not run, while those that had
 * started before the close run on, and that first step charges them (too much, when they
 * end sooner: the limit errs towards holding).  So the executor of a tenant under such a
 * quota gates on the GPU as well (shm.h, metered), which stops even work submitted long
 * before at its next kernel; other tenants' executors do not, since each wait is a driver
 * call on the launch path.
 *
 * The limit is meant for best-effort work, but it holds whatever class a tenant claims:
 * the class comes from the tenant's own hello, so an exemption would be its to take.
 */
#ifndef DS_THROTTLE_H
#define DS_THROTTLE_H

#include <stdint.h>

#define DS_THROTTLE_BURST_NS (500 * 1000000ll)
#define DS_THROTTLE_RESUME_NS (50 * 1000000ll)

struct ds_throttle {
    int started;       /* the bucket was filled once */
    int held;          /* its gate is to be closed */
    int held_steps;    /* steps in a row its gate was closed, as the caller says */
    int64_t tokens_ns; /* kernel time the tenant may still use now */
    uint64_t seen_ns;  /* the tenant's kernel_ns at the last step */
};

/* One step of dt_ns, after which the tenant's kernel time so far is kernel_ns; was_held
 * says whether its gate was closed during the step.  pct 0 (or 100 and above) lifts the
 * limit.  Returns whether the tenant is to be held now. */
int ds_throttle_step(struct ds_throttle *t, unsigned pct, uint64_t kernel_ns, uint64_t dt_ns,
                     int was_held);

#endif
