/* The predictor behind what policies see of running work (sched/predict.h), and the
 * control block's reading of progress stamps (server/shm.h), on made-up samples. */
#include "predict.h"
#include "shm.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <unistd.h>

#define MS 1000000ull

/* A tenant that keeps `queued` kernels of kernel_us each in flight, sampled every 5 ms
 * from *t for `ms`: launches and completions as a device would give them. */
static void busy_for(struct ds_predict *p, uint64_t *t, uint64_t *launched, double *done,
                     double kernel_us, int ms)
{
    for (int i = 0; i < ms / 5; i++) {
        *t += 5 * MS;
        *done += 5000.0 / kernel_us;
        *launched = (uint64_t)*done + 8;
        ds_predict_sample(p, *t, *launched, (uint64_t)*done);
    }
}

Test(predict, a_kernel_time_is_learned_and_follows_a_change)
{
    struct ds_predict p = { 0 };
    uint64_t t = 1000 * MS, launched = 0;
    double done = 0;

    ds_predict_sample(&p, t, 0, 0);
    busy_for(&p, &t, &launched, &done, 250, 200);
    cr_expect(p.kernel_us > 240 && p.kernel_us < 260, "250 us kernels, estimated %.1f", p.kernel_us);
    cr_expect(p.rate > 3800 && p.rate < 4200, "4000 a second, estimated %.0f", p.rate);
    cr_expect_eq(ds_predict_inflight(&p), 8);
    busy_for(&p, &t, &launched, &done, 1000, 200);
    cr_expect(p.kernel_us > 900 && p.kernel_us < 1100, "now 1 ms kernels, estimated %.1f",
              p.kernel_us);
}

/* Kernels longer than a sample: their time adds up over the samples they span. */
Test(predict, kernels_longer_than_a_sample_are_timed_whole)
{
    struct ds_predict p = { 0 };
    uint64_t t = 1000 * MS, launched = 0;
    double done = 0;

    ds_predict_sample(&p, t, 0, 0);
    busy_for(&p, &t, &launched, &done, 20000, 400);
    cr_expect(p.kernel_us > 18000 && p.kernel_us < 22000, "20 ms kernels, estimated %.1f",
              p.kernel_us);
}

/* Idle time between bursts is not kernel time; completions never go back. */
Test(predict, idle_time_is_not_counted_and_counts_never_go_back)
{
    struct ds_predict p = { 0 };

    ds_predict_sample(&p, 1000 * MS, 10, 10);
    ds_predict_sample(&p, 1005 * MS, 12, 10); /* launched a burst */
    ds_predict_sample(&p, 1105 * MS, 12, 12); /* done at some point in 100 ms */
    cr_expect_eq(p.kernel_us, 0, "an interval with idle time taught %.1f us", p.kernel_us);
    ds_predict_sample(&p, 1110 * MS, 20, 11); /* a stamp overwritten before it was seen */
    cr_expect_eq(p.done, 12);
    cr_expect_eq(ds_predict_inflight(&p), 8);
    ds_predict_sample(&p, 1115 * MS, 20, 25);
    cr_expect_eq(p.done, 20, "more done than launched is what was launched");
}

/* kernel_ns: whole intervals with work in flight at both ends, half at one, and the
 * estimate for launches that came and went between two samples. */
Test(predict, time_with_work_in_flight_is_summed)
{
    struct ds_predict p = { 0 };
    uint64_t t = 1000 * MS, launched = 0;
    double done = 0;

    ds_predict_sample(&p, t, 0, 0);
    busy_for(&p, &t, &launched, &done, 250, 200);
    cr_expect(p.kernel_ns >= 195 * MS && p.kernel_ns <= 200 * MS, "busy 200 ms, summed %llu ns",
              (unsigned long long)p.kernel_ns);
    /* Drained: in flight at the start of the next interval, not at its end. */
    t += 5 * MS;
    ds_predict_sample(&p, t, launched, launched);
    cr_expect(p.kernel_ns >= 197 * MS && p.kernel_ns <= 203 * MS);
    /* Idle for 100 ms: nothing more. */
    uint64_t before = p.kernel_ns;
    t += 100 * MS;
    ds_predict_sample(&p, t, launched, launched);
    cr_expect_eq(p.kernel_ns, before);
    /* Ten 250 us kernels between two samples, never seen in flight: 2.5 ms. */
    t += 5 * MS;
    ds_predict_sample(&p, t, launched + 10, launched + 10);
    cr_expect(p.kernel_ns - before > 2400000 && p.kernel_ns - before < 2600000, "%llu",
              (unsigned long long)(p.kernel_ns - before));
    /* A thousand of them: at most half the interval. */
    before = p.kernel_ns;
    t += 5 * MS;
    ds_predict_sample(&p, t, launched + 1010, launched + 1010);
    cr_expect_eq(p.kernel_ns - before, 2500000);
}

/* The sim's stamps carry when the work ends; a device's are written when it does. */
Test(predict, stamps_count_what_is_done_by_now)
{
    int fd;
    struct ds_shm *shm = ds_shm_create(1000, &fd);
    int a = ds_shm_slot_take(shm);
    struct ds_shm_slot *s = &shm->slots[a];

    cr_assert_not_null(shm);
    for (uint32_t n = 1; n <= 10; n++) {
        atomic_store(&s->stamps[n % DS_SHM_STAMPS].seq, n);
        atomic_store(&s->stamps[n % DS_SHM_STAMPS].at_ns, 100 * n);
    }
    cr_expect_eq(ds_shm_stamps_done(shm, a, 10, 50), 0);
    cr_expect_eq(ds_shm_stamps_done(shm, a, 10, 450), 4);
    cr_expect_eq(ds_shm_stamps_done(shm, a, 10, 5000), 10);
    /* Launch numbers past 2^32: the device writes their low 32 bits. */
    ds_shm_slot_clear(shm, a);
    for (uint64_t n = (1ull << 32) - 3; n <= (1ull << 32) + 2; n++)
        atomic_store(&s->stamps[n % DS_SHM_STAMPS].seq, (uint32_t)n);
    cr_expect_eq(ds_shm_stamps_done(shm, a, (1ull << 32) + 5, 5000), (1ull << 32) + 2);
    atomic_store(&s->stamps_off, 1);
    cr_expect_eq(ds_shm_stamps_done(shm, a, 77, 0), 77, "without stamps, all is done");
    ds_shm_slot_clear(shm, a);
    cr_expect_eq(atomic_load(&s->stamps_off), 0);
    cr_expect_eq(ds_shm_stamps_done(shm, a, 0, 5000), 0);
    ds_shm_unmap(shm);
    close(fd);
}
