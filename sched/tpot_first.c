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
 * left to the policy (phase auto), when it is latency-critical with an SLO (a serving
 * engine told its TPOT SLO), or latency-critical without one and its kernels are short:
 * one whose kernel time rose to PREFILL_X times the shortest it has shown is running a
 * prompt of its own, and counts as prefill until its kernels are short again.  Every
 * other tenant is prefill.  Kernel times alone could not tell a server that prefills
 * and decodes by turns (continuous batching) from a decoder slowed by its neighbours:
 * on an H200 (run 129) a batched decoder beside a trainer had its kernels stretched past
 * PREFILL_X times its shortest by the trainer's, was taken for prefill, and the trainer
 * was let onto every SM for the rest of the run: TPOT 17x its alone median, every token
 * over the SLO, as under MPS.
 *
 * A tenant is confined only for another tenant's decoding.  A lone decoder that turns to
 * a prompt of its own (or whose kernel estimate jumps: the predictor's is about the last
 * 16 launches') had been put on a quarter of the SMs by its own decoding a moment
 * before: on an H100 (run 108, 2026-11-23) a decoder beside a trainer moved there 6
 * times in 8 s, for 5-35 ms each, slowing the steps it was to protect.
 */
#include "policy.h"

#define HOLD 40 /* ticks of 5 ms */
#define PREFILL_X 4.0
#define SLOTS 64

static double short_us[SLOTS]; /* by slot: the shortest kernel time it has shown */
static int quiet[SLOTS];       /* by slot: ticks since it last had decode work */

static int decodes(const struct ds_sched_tenant *t)
{
    double s = t->id >= 0 && t->id < SLOTS ? short_us[t->id] : 0;

    if (t->phase != DS_SCHED_AUTO)
        return t->phase == DS_SCHED_DECODE;
    if (t->klass != DS_SCHED_LATENCY)
        return 0;
    if (t->slo_us > 0)
        return 1;
    return s == 0 || t->kernel_us <= PREFILL_X * s;
}

/* Each tenant's decode work this tick, learning kernel times on the way. */
static void decode_work(const struct ds_sched_view *v)
{
    for (int i = 0; i < v->n; i++) {
        const struct ds_sched_tenant *t = &v->t[i];

        if (t->id < 0 || t->id >= SLOTS)
            continue;
        if (t->kernel_us > 0 && t->new_done > 0 &&
            (short_us[t->id] == 0 || t->kernel_us < short_us[t->id]))
            short_us[t->id] = t->kernel_us;
        if (decodes(t) && (t->inflight > 0 || t->new_launches > 0))
            quiet[t->id] = 0;
        else if (quiet[t->id] <= HOLD)
            quiet[t->id]++;
    }
}

/* Whether a tenant other than v->t[self] has had decode work within HOLD ticks. */
static int other_decoding(const struct ds_sched_view *v, int self)
{
    for (int i = 0; i < v->n; i++) {
        int id = v->t[i].id;

        if (i != self && id >= 0 && id < SLOTS && quiet[id] <= HOLD)
            return 1;
    }
    return 0;
}

static void place(struct ds_sched_view *v)
{
    unsigned keep = v->sm_groups / 4 > 0 ? v->sm_groups / 4 : 1;

    for (int i = 0; i < v->n; i++) {
        struct ds_sched_tenant *t = &v->t[i];
        int active = other_decoding(v, i);

        if (!active || decodes(t) || v->sm_groups < 2) {
            t->groups = 0;
            t->gated = 0;
            t->why = decodes(t) ? "decode: every SM"
                     : !active      ? "nobody else decoding: every SM"
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
    decode_work(v);
    place(v);
}

static void start(struct ds_sched_view *v)
{
    for (int i = 0; i < SLOTS; i++) {
        short_us[i] = 0;
        quiet[i] = HOLD + 1;
    }
    place(v);
}

/* A slot's new tenant inherits nothing from the one before. */
static void join(struct ds_sched_view *v, int joined)
{
    int id = v->t[joined].id;

    if (id >= 0 && id < SLOTS) {
        short_us[id] = 0;
        quiet[id] = HOLD + 1;
    }
    place(v);
}

/* A decoder gone leaves nothing to protect: those left are placed for each other. */
static void leave(struct ds_sched_view *v)
{
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
