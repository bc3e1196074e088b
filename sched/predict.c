#include "predict.h"

/* Weight of a new sample in the running averages: about the last four count.  A
 * completed launch is one sample of the kernel time, so a progress step of 16 launches
 * (the executor stamps every 16th) all but replaces what came before: the kernel time
 * follows the last step, which is what slo-aware was tuned with on the H100. */
#define NEW_WEIGHT 0.25

static double blend(double old, double sample, int first)
{
    return first ? sample : old + NEW_WEIGHT * (sample - old);
}

/* The same for n samples of one value at once: stamps come every few launches (the
 * executor stamps every 16th), and n launches seen done at once weigh as n. */
static double blend_n(double old, double sample, int first, uint64_t n)
{
    double keep = 1;

    for (uint64_t i = 0; i < n && keep > 1e-6; i++)
        keep *= 1 - NEW_WEIGHT;
    return first ? sample : sample + keep * (old - sample);
}

/* busy_ns: how long the device has just been busy with the tenant's work throughout (0:
 * it was idle at some point); new_done: launches completed meanwhile. */
static void learn(struct ds_predict *p, uint64_t busy_ns, uint64_t new_done)
{
    if (busy_ns == 0) {
        p->busy_ns = 0;
        return;
    }
    /* A kernel longer than a sample spans several: its time adds up until it ends. */
    p->busy_ns += busy_ns;
    if (new_done == 0)
        return;
    p->kernel_us = blend_n(p->kernel_us, (double)p->busy_ns / 1e3 / (double)new_done,
                           p->kernel_us == 0, new_done);
    p->busy_ns = 0;
}

/* What a launch whose kernel came and went between two samples is taken to have
 * taken while no duration is known: about what the shortest kernels take. */
#define DS_PREDICT_SHORT_NS 5000.0

/* What the interval of dt_ns that ends now adds to kernel_ns (predict.h). */
static uint64_t in_flight_ns(const struct ds_predict *p, uint64_t dt, int was, int is,
                             uint64_t new_launches)
{
    uint64_t guess;

    if (was || is)
        return (uint64_t)(was + is) * dt / 2;
    if (new_launches == 0)
        return 0;
    guess = (uint64_t)((double)new_launches *
                       (p->kernel_us > 0 ? p->kernel_us * 1e3 : DS_PREDICT_SHORT_NS));
    return guess < dt / 2 ? guess : dt / 2;
}

void ds_predict_sample(struct ds_predict *p, uint64_t now_ns, uint64_t launches, uint64_t done)
{
    uint64_t was_inflight = ds_predict_inflight(p), dt, new_done;
    int first = p->at_ns == 0;

    if (done > launches)
        done = launches;
    if (done < p->done)
        done = p->done;
    if (!first && now_ns > p->at_ns) {
        dt = now_ns - p->at_ns;
        new_done = done - p->done;
        p->rate = blend(p->rate, (double)new_done * 1e9 / (double)dt, 0);
        p->launch_rate = blend(p->launch_rate, (double)(launches - p->launches) * 1e9 / (double)dt, 0);
        p->kernel_ns += in_flight_ns(p, dt, was_inflight > 0, launches > done,
                                     launches - p->launches);
        learn(p, was_inflight > 0 && launches > done ? dt : 0, new_done);
    }
    p->at_ns = now_ns;
    p->launches = launches;
    p->done = done;
}

uint64_t ds_predict_inflight(const struct ds_predict *p)
{
    return p->launches - p->done;
}
