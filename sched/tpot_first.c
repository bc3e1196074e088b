/*
 * tpot-first, for LLM serving: decode steps first.  A decoding tenant's time per output
 * token is a chain of small kernels; a neighbour's prefill (a prompt's long GEMMs) on the
 * same SMs stretches every one of them.  So from the first tick a decoder has work until
 * HOLD ticks after its last, prefill runs on a quarter of the SMs while decoders keep all
 * of them; then everyone gets every SM again.  It acts at once, where slo-aware waits to
 * see decode slowed down: a prefill burst is often over before slo-aware has moved.
 *
 * Prefill is confined, never held.  The first version held it at its next kernel while a
 * decode step was in flight: on an H100 (run 90, 2026-11-23) its bursts took 30 times as
 * long as alone, and the decoder missed its SLO more often than under slo-aware (11% of
 * steps against 3.4%), since a decoder on an otherwise idle GPU runs slower (alone, it
 * missed the same SLO in 13-18% of steps).
 *
 * A tenant decodes when the operator says so (detshare-ctl tenant NAME phase decode), or,
 * left to the policy (phase auto), when it is latency-critical and its kernels are short:
 * one whose kernel time rose to PREFILL_X times the shortest it has shown is running a
 * prompt of its own, and counts as prefill until its kernels are short again.  Every
 * other tenant is prefill.
 */
#include "policy.h"

#define HOLD 40 /* ticks of 5 ms */
#define PREFILL_X 4.0
#define SLOTS 64

static double short_us[SLOTS]; /* by slot: the shortest kernel time it has shown */
static int quiet = HOLD + 1;

static int decodes(const struct ds_sched_tenant *t)
{
    double s = t->id >= 0 && t->id < SLOTS ? short_us[t->id] : 0;

    if (t->phase != DS_SCHED_AUTO)
        return t->phase == DS_SCHED_DECODE;
    if (t->klass != DS_SCHED_LATENCY)
        return 0;
    return s == 0 || t->kernel_us <= PREFILL_X * s;
}

/* Whether a decoder has work now, learning kernel times on the way. */
static int decode_work(const struct ds_sched_view *v)
{
    int step = 0;

    for (int i = 0; i < v->n; i++) {
        const struct ds_sched_tenant *t = &v->t[i];

        if (t->id >= 0 && t->id < SLOTS && t->kernel_us > 0 && t->new_done > 0 &&
            (short_us[t->id] == 0 || t->kernel_us < short_us[t->id]))
            short_us[t->id] = t->kernel_us;
        if (decodes(t) && (t->inflight > 0 || t->new_launches > 0))
            step = 1;
    }
    return step;
}

static void place(struct ds_sched_view *v)
{
    int active = quiet <= HOLD;
    unsigned keep = v->sm_groups / 4 > 0 ? v->sm_groups / 4 : 1;

    for (int i = 0; i < v->n; i++) {
        struct ds_sched_tenant *t = &v->t[i];

        if (!active || decodes(t) || v->sm_groups < 2) {
            t->groups = 0;
            t->gated = 0;
            t->why = !active ? "no decoding: every SM" : decodes(t) ? "decode: every SM"
                                                                    : "prefill: every SM";
            continue;
        }
        t->groups = ds_groups_range(0, keep);
        t->gated = 0;
        t->why = "prefill: a quarter of the SMs while decoding goes on";
    }
}

static void tick(struct ds_sched_view *v)
{
    quiet = decode_work(v) ? 0 : quiet + 1;
    place(v);
}

static int any_decoder(const struct ds_sched_view *v)
{
    for (int i = 0; i < v->n; i++)
        if (decodes(&v->t[i]))
            return 1;
    return 0;
}

static void start(struct ds_sched_view *v)
{
    quiet = HOLD + 1;
    for (int i = 0; i < SLOTS; i++)
        short_us[i] = 0;
    place(v);
}

static void join(struct ds_sched_view *v, int joined)
{
    if (v->t[joined].id >= 0 && v->t[joined].id < SLOTS)
        short_us[v->t[joined].id] = 0;
    place(v);
}

/* The last decoder gone, nothing is left to protect. */
static void leave(struct ds_sched_view *v)
{
    if (!any_decoder(v))
        quiet = HOLD + 1;
    place(v);
}

const struct ds_policy ds_policy_tpot_first = {
    .name = "tpot-first",
    .about = "LLM serving: prefill on a quarter of the SMs while decoding goes on",
    .on_start = start,
    .on_tenant_join = join,
    .on_tenant_leave = leave,
    .on_tick = tick,
    .tick_ms = 5,
};
