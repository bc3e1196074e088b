/*
 * The predictor behind what a policy sees of running work (policy.h): from a tenant's
 * launch count and the completions its progress stamps report, sampled by the control
 * process every few milliseconds, it keeps what is in flight, how fast work completes
 * and how long one of the tenant's kernels takes, without ever synchronising with the
 * device or being on the launch path.
 *
 * A kernel's duration is learned from the samples in which the tenant had work in flight
 * both at the start and at the end: the device was busy with its work throughout, so
 * the time since the last completion divided by the launches completed since is what one
 * took.  Samples in which it went idle or started say nothing about duration and leave
 * the estimate alone.
 */
#ifndef DS_SCHED_PREDICT_H
#define DS_SCHED_PREDICT_H

#include <stdint.h>

struct ds_predict {
    uint64_t at_ns;     /* time of the last sample, 0 before the first */
    uint64_t launches;  /* as of the last sample */
    uint64_t done;      /* completed, as of the last sample: never goes back */
    double rate;        /* completions per second, averaged over recent samples */
    double launch_rate; /* launches per second, likewise */
    double kernel_us;   /* one kernel's estimated duration; 0 until known */
    uint64_t busy_ns;   /* busy since the last completion, not yet in kernel_us */
    uint64_t kernel_ns; /* time the tenant had work in flight, summed over samples */
};

/* Take the sample (launches, done) of time now_ns.  A `done` below the last one (a stamp
 * overwritten before it was seen) is taken as the last one; above `launches`, as
 * `launches`. */
void ds_predict_sample(struct ds_predict *p, uint64_t now_ns, uint64_t launches, uint64_t done);

/* Launches not completed yet, as of the last sample. */
uint64_t ds_predict_inflight(const struct ds_predict *p);

#endif
