/*
 * slo-aware, the default: best-effort tenants get every SM that latency-critical tenants
 * leave them, and lose SMs only while the predictor shows a latency-critical tenant
 * being slowed down by them, or, for one with an SLO, near it.
 *
 * Latency-critical tenants always run on the whole device: a decoder at batch 1 needs
 * many SMs to pull memory bandwidth (on 25% of an H100's SMs it ran at 0.57x), so
 * protecting it means taking SMs from its neighbours, never fencing it in.  Best-effort
 * tenants share a set of SM groups, all but a floor kept from them, and may be held at
 * their gates.  Which depends on how busy latency-critical work keeps the device (the
 * demand: completions a second times kernel time, averaged over DEMAND_AVG ticks):
 *
 * - Dense work (busy more than DENSE of the time: a decoder generating back to back)
 *   gets no floor at level 0, and each level above keeps more groups from best-effort
 *   tenants (FLOOR_EIGHTHS); the top level also holds them while it is busy.  Holding a
 *   neighbour of dense work while it is busy would hold it for good.
 * - Sparse work (an inference service whose requests leave gaps) gets a floor at every
 *   level, sized from its demand (floor_of: an eighth of the device per tenth of its
 *   time, at most a quarter), so that a request arriving after a gap finds SMs no
 *   best-effort kernel occupies and starts at once: a kernel queued behind another
 *   tenant's running blocks waits for them.  From level 1 on, best-effort tenants are
 *   held while it has work queued or in flight, and released the first tick it has none,
 *   on every SM but the floor; levels above also fence them as the dense ladder's rung
 *   below does.  Before this, ResNet-50 inference beside a GEMM flood on an H200 ended
 *   with the flood on an eighth of the SMs between requests too: 0.29x of its alone rate
 *   (issue 28).  Holding says nothing about whether the service would be at ease without
 *   it, so without an SLO ticks at ease while holding do not lower the level: probes do.
 *
 * Without an SLO the levels stop at 1 (three quarters of the SMs for dense work, holding
 * for sparse work); the levels above are used only for a tenant with an SLO or one slowed
 * severely (below).
 *
 * With an SLO the levels follow the SLO, not the baseline: a tenant is under pressure when
 * its latency nears the SLO (over NEAR of it), at ease when it stays comfortably under it
 * (below COMFORT) and few of its recent ticks went over it (under BUDGET), whatever its
 * kernels take against its baseline.  A decoder with slack to its SLO is slower beside a
 * trainer by design: on an H200 (bench/eval llm, issue 28) steering on the baseline kept
 * a decoder at 1.05x its alone TPOT, 20% under its SLO, and the trainer at 0.39x.
 * Its latency is the drain time of what it has in flight: that many launches at what one
 * takes now, at least one.  The predictor knows launches, not requests or tokens; a
 * serving loop that waits for each step's result (a decode step in a CUDA graph, or the
 * sim's one kernel a step) has that step in flight, so its drain time is the step's
 * device time, what stands between it and its next token, queueing behind a neighbour's
 * blocks included.  The host's part of a step is not seen, which is what the room
 * between NEAR and 1 leaves it.  A burst of many launches (a prefill) drains in what it
 * takes as a whole, which a token waiting behind it waits too.
 * Every lowering under an SLO is a lend on trial: one that brings pressure back within
 * LEND_WATCH ticks doubles the ease needed before the next (from CALM up to PROBE_MAX),
 * and one that holds resets it, so a tenant right at its edge pays for a failed lend,
 * about SETTLE + RAISE ticks near its SLO, ever more rarely.  Ticks at ease count while
 * best-effort tenants are held too: the trial says whether it stays at ease without.
 *
 * A latency-critical tenant slowed to SEVERE times its baseline or worse is not in a band
 * a lender can live with: without an SLO too, the levels then go past level 1, as far as
 * holding best-effort kernels while it works on the smallest fence, for as long as it
 * stays that slow (on an H200, ResNet-50 inference beside a GEMM flood ran at 3.7x its
 * alone median with the flood held to three quarters of the SMs, issue 28).  Probes bring
 * them back down.
 *
 * Every tick (5 ms) it compares each busy latency-critical tenant's kernel time, as the
 * progress stamps measure it, with the fastest it has shown (its baseline, learned while
 * it runs alone or on the fastest level so far, and let drift up slowly so that a change
 * of workload is learned too).  Without an SLO it is under pressure when its kernels
 * take SLOW times their baseline, at ease when they take less than EASE times (with one,
 * as above).  Pressure on RAISE ticks in a row raises the
 * level by one; CALM ticks at ease lower it by one, so SMs are lent back gradually.
 * Between EASE and SLOW (COMFORT and NEAR), and while the latency-critical tenant
 * pauses, the level stays:
 * that band, and SETTLE ticks after any change for the move to take effect and the
 * estimate to follow, keep it from flapping.
 * Without an SLO the band could keep best-effort tenants fenced for good after one
 * burst of pressure (on an H100, GPT-2 training stayed on 3/4 of the SMs for a whole run
 * beside a decoder in the band: 0.81x of its native-MPS speed, runs 95 and 100), so
 * after PROBE ticks on a level without sustained pressure (RAISE ticks in a row) the
 * policy tries the level below.  A probe that brings pressure back within WATCH ticks
 * doubles the wait before the next one, up to PROBE_MAX: a decoder that really needs the
 * SMs pays for a probe, about SETTLE + RAISE ticks of slowdown, ever more rarely.
 * When no latency-critical tenant has had work for HOLD ticks the level drops to 0 at
 * once.  HOLD is long enough (200 ms) to ride out a decoding service's pauses between
 * requests and while a library compiles kernels, which made the first version's fence
 * flap 250 times in 30 s on an H100.
 *
 * A best-effort kernel whose thread-block clusters do not fit its fence runs on the whole
 * device (a partition escape, counted in the tenant's escapes), on the very SMs the level
 * keeps free.  A tenant whose escapes rose on a fence of k groups is taken not to fit
 * fences of k groups or fewer, and on such a fence it is held at its gate while
 * latency-critical work is busy, instead of being fenced in name only.  A larger fence
 * is not tried instead: which groups would hold its clusters depends on how the device
 * lays groups out over GPCs, which a policy does not see, each try would cost escapes,
 * and a fence large enough gives back the SMs the level took.  It stays on its fence
 * meanwhile, so that only the gate moves as latency-critical work comes and goes, and is
 * fenced as any other tenant again once the level's fence is larger than the one it
 * escaped.
 */
#include "policy.h"

#define RAISE 2
#define CALM 40
#define SETTLE 8
#define HOLD 40
#define SLOW 1.25
#define SEVERE 2.0
#define EASE 1.1
#define DRIFT 1.0002 /* a baseline's rise per tick towards slower kernels: x1.04 a second */
#define GATE_LEVEL 5
#define NO_SLO_TOP 1 /* three quarters of the SMs, or held while busy (a sparse tenant) */
#define DENSE 0.8    /* a latency-critical busy share above which holding starves others */
#define DEMAND_AVG 64 /* ticks a demand estimate is averaged over: about 0.3 s */
#define PROBE 200      /* 1 s */
#define PROBE_MAX 2560 /* 12.8 s */
#define WATCH 400     /* 2 s */
#define COMFORT 0.85  /* of an SLO: under it, at ease */
#define NEAR 0.95     /* of an SLO: over it, under pressure */
#define BUDGET 0.05   /* share of recent ticks over its SLO above which nothing is lent */
#define VIOL_AVG 200  /* ticks with work the share is averaged over: about 1 s of it */
/* A lend's trial: SETTLE + RAISE ticks show a dense tenant on the lower level several
 * times over, and a service its next requests; a decoder's next prefill, often a second
 * away, is not blamed on it. */
#define LEND_WATCH 100 /* 0.5 s */
#define SLOTS 64

/* Eighths of the SM groups kept from best-effort tenants (the floor) at each step of
 * the ladder, at least the demand floor (floor_of). */
static const unsigned FLOOR_EIGHTHS[GATE_LEVEL] = { 0, 2, 4, 6, 7 };

static double base_us[SLOTS]; /* by slot: a latency-critical tenant's baseline */
static double over_slo[SLOTS]; /* by slot: its share of recent ticks over its SLO */
/* By slot, for best-effort tenants: escapes already accounted for, the last fence given
 * (groups, 0: none yet), and the largest fence its kernels escaped (0: none). */
static uint64_t esc_seen[SLOTS];
static unsigned last_fence[SLOTS], escaped_fence[SLOTS];
static int level, quiet = HOLD + 1, hot, severe, calm, settle;
/* The latency-critical tenants' busy share, averaged (demand_of); whether best-effort
 * tenants were held at the last tick to protect them (not for escaping). */
static double demand;
static int held;
/* The demand the floor is sized by: the demand once it has moved by a tenth of the
 * device's time or more, so that the floor does not move best-effort tenants while the
 * demand wanders. */
static double floor_demand;
/* Ticks on this level since the last sustained pressure; the wait before a probe; ticks
 * left to watch the last one. */
static int since, probe_after = PROBE, watch;
/* Whether a latency-critical tenant has an SLO (the levels follow it); the ease needed
 * before a lend under it. */
static int by_slo, lend_after = CALM;

static int busy(const struct ds_sched_tenant *t)
{
    return t->inflight > 0 || t->new_launches > 0;
}

static int any_busy(const struct ds_sched_view *v, int klass)
{
    for (int i = 0; i < v->n; i++)
        if (v->t[i].klass == klass && busy(&v->t[i]))
            return 1;
    return 0;
}

static const char *why_be(int lvl, int hold)
{
    static const char *const why[2][GATE_LEVEL] = {
        { "lent every SM but the latency-critical floor",
          "shrunk: latency-critical work slowed (3/4 of the SMs)",
          "shrunk: latency-critical work slowed (1/2 of the SMs)",
          "shrunk: latency-critical work slowed (1/4 of the SMs)",
          "shrunk: latency-critical work slowed (1/8 of the SMs)" },
        { "lent every SM but the latency-critical floor",
          "shrunk: latency-critical work near its SLO (3/4 of the SMs)",
          "shrunk: latency-critical work near its SLO (1/2 of the SMs)",
          "shrunk: latency-critical work near its SLO (1/4 of the SMs)",
          "shrunk: latency-critical work near its SLO (1/8 of the SMs)" },
    };

    if (hold)
        return by_slo ? "held while latency-critical work runs: it neared its SLO, and has "
                        "work queued or in flight"
                      : "held while latency-critical work runs: it was slowed, and has work "
                        "queued or in flight";
    return why[by_slo][lvl < GATE_LEVEL ? lvl : GATE_LEVEL - 1];
}

static int valid(const struct ds_sched_tenant *t)
{
    return t->id >= 0 && t->id < SLOTS;
}

/* Whether best-effort tenant t's clusters are known not to fit a fence of keep groups. */
static int escapes_fence(const struct ds_sched_tenant *t, unsigned keep)
{
    return valid(t) && keep <= escaped_fence[t->id];
}

/* Whether latency-critical work keeps busy most of the time (a decoder generating back
 * to back), so that holding best-effort work while it is busy would hold it for good. */
static int dense(void)
{
    return floor_demand > DENSE;
}

/* The rung of the ladder level lvl stands for: a sparse tenant's ladder holds from level 1
 * on and fences one rung lower, a dense one's fences and holds only at the top. */
static int rung_of(int lvl)
{
    return dense() || lvl == 0 ? lvl : lvl - 1;
}

static int holds_at(int lvl)
{
    return dense() ? lvl == GATE_LEVEL : lvl >= 1;
}

/* Groups kept from best-effort tenants at level lvl: the ladder's rung and, for sparse
 * latency-critical work, never fewer than its demand asks (an eighth of the device for
 * each tenth of its time it keeps busy, at most a quarter, at least one group), so that
 * its kernels, arriving after a pause, find SMs no best-effort kernel occupies and start
 * at once.  Dense work's kernels follow each other on SMs it holds already. */
static unsigned floor_of(const struct ds_sched_view *v, int lvl)
{
    int r = rung_of(lvl);
    unsigned g = v->sm_groups, fl = g * FLOOR_EIGHTHS[r < GATE_LEVEL ? r : GATE_LEVEL - 1] / 8;
    double want = floor_demand * 10 / 8 * g;
    unsigned need = dense() ? 0 : want > g / 4.0 ? g / 4 : (unsigned)want + 1;

    fl = fl > need ? fl : need;
    return fl >= g ? g - 1 : fl;
}

/* The highest level worth using.  Without an SLO, three quarters of the SMs: on the
 * H100, decoding beside ResNet-50 drove the levels to 1/8 within 0.6 s and the trainer
 * fell to 0.34x of its native-MPS speed; capped at half the SMs it kept 0.76-0.79x in
 * four runs (bench/coloc, 2026-11-23, runs 59-73), short of issue 9's 0.9x, while the
 * decoder ran at its alone speed.  Going further, and holding best-effort work, is only
 * for protecting an SLO. */
static int top(const struct ds_sched_view *v)
{
    for (int i = 0; i < v->n; i++)
        if (v->t[i].klass == DS_SCHED_LATENCY && v->t[i].slo_us > 0)
            return GATE_LEVEL;
    return NO_SLO_TOP;
}

static void place(struct ds_sched_view *v)
{
    int lvl = level, any_lc = 0;
    unsigned keep;
    int busy_lc = any_busy(v, DS_SCHED_LATENCY), hold;

    by_slo = top(v) == GATE_LEVEL;
    for (int i = 0; i < v->n; i++)
        any_lc |= v->t[i].klass == DS_SCHED_LATENCY;
    /* With no latency-critical tenant, or none busy lately, nothing is kept from anyone. */
    keep = !any_lc || quiet > HOLD ? v->sm_groups : v->sm_groups - floor_of(v, lvl);
    hold = holds_at(lvl) && busy_lc;
    held = 0;
    for (int i = 0; i < v->n; i++) {
        struct ds_sched_tenant *t = &v->t[i];
        int fenced = keep < v->sm_groups;

        if (t->klass == DS_SCHED_LATENCY || v->sm_groups < 2) {
            t->groups = 0;
            t->gated = 0;
            t->why = t->klass == DS_SCHED_LATENCY ? "latency-critical: every SM"
                                                  : why_be(0, 0);
            continue;
        }
        t->groups = fenced ? ds_groups_range(0, keep) : 0;
        t->gated = hold;
        t->why = fenced || hold ? why_be(rung_of(lvl), hold) : "lent every SM";
        if (fenced && valid(t))
            last_fence[t->id] = keep;
        if (fenced && !hold && escapes_fence(t, keep)) {
            t->gated = busy_lc;
            t->why = "held while latency-critical work runs: its kernels' clusters escape "
                     "its SMs";
        }
        held |= hold;
    }
}

/* Escapes since the last tick happened on the last fence t was given (or, when the
 * policy never fenced it, on one an sm-share quota set, of unknown size: any fence). */
static void note_escapes(const struct ds_sched_view *v)
{
    for (int i = 0; i < v->n; i++) {
        const struct ds_sched_tenant *t = &v->t[i];
        unsigned on;

        if (t->klass == DS_SCHED_LATENCY || !valid(t) || t->escapes <= esc_seen[t->id])
            continue;
        esc_seen[t->id] = t->escapes;
        on = last_fence[t->id] != 0 ? last_fence[t->id] : v->sm_groups - 1;
        if (on > escaped_fence[t->id])
            escaped_fence[t->id] = on;
    }
}

/* Forget what slot t->id's earlier tenant escaped; t's escapes so far count as seen. */
static void forget_escapes(const struct ds_sched_tenant *t)
{
    if (!valid(t))
        return;
    esc_seen[t->id] = t->escapes;
    last_fence[t->id] = escaped_fence[t->id] = 0;
}

/* Learn t's baseline from a fresh estimate; `alone` when no best-effort work ran. */
static void learn(const struct ds_sched_tenant *t, int alone)
{
    double *b = &base_us[t->id];

    if (t->kernel_us <= 0 || t->new_done == 0)
        return;
    /* Down quickly, but not to one lucky sample. */
    if (*b == 0)
        *b = t->kernel_us;
    else if (t->kernel_us < *b)
        *b += (t->kernel_us - *b) / 4;
    else if (alone)
        *b += (t->kernel_us - *b) / 8;
    else if (*b * DRIFT < t->kernel_us)
        *b *= DRIFT;
}

/* Whether the predictor has something new to say about t's speed. */
static int fresh(const struct ds_sched_tenant *t)
{
    return busy(t) && t->kernel_us > 0 && t->new_done > 0 && base_us[t->id] > 0;
}

/* For a latency-critical tenant with a fresh estimate and an SLO: 1 when what it has in
 * flight takes NEAR its SLO or more to drain, -1 when it takes under COMFORT of it and
 * under BUDGET of its recent ticks went over it, 0 in between.  Counts the tick in its
 * share over the SLO. */
static int slo_pressure(const struct ds_sched_tenant *t)
{
    double drain = (double)(t->inflight > 0 ? t->inflight : 1) * t->kernel_us;
    double slo = t->slo_us, *over = &over_slo[t->id];

    *over += ((drain > slo) - *over) / VIOL_AVG;
    if (drain > NEAR * slo)
        return 1;
    return drain < COMFORT * slo && *over < BUDGET ? -1 : 0;
}

/* For a latency-critical tenant with a fresh estimate: as slo_pressure with an SLO;
 * without, 2 when it runs SEVERE times slower than its baseline, 1 when it is being
 * slowed down, -1 when it runs near its baseline, 0 in between. */
static int pressure_of(const struct ds_sched_tenant *t)
{
    double b = base_us[t->id];

    if (t->slo_us > 0)
        return slo_pressure(t);
    if (t->kernel_us > SEVERE * b)
        return 2;
    return t->kernel_us > SLOW * b ? 1 : t->kernel_us < EASE * b ? -1 : 0;
}

static void reset(void)
{
    level = hot = severe = calm = settle = since = watch = 0;
    probe_after = PROBE;
    lend_after = CALM;
}

/* Move to level `to`; a rise while a probe or a lend is watched means it failed. */
static void go(int to)
{
    int *wait = by_slo ? &lend_after : &probe_after;

    if (to > level && watch > 0)
        *wait = *wait * 2 > PROBE_MAX ? PROBE_MAX : *wait * 2;
    watch = 0;
    level = to;
    hot = severe = calm = since = 0;
    settle = SETTLE;
}

static void step(const struct ds_sched_view *v, int pressure)
{
    if (settle > 0) {
        settle--;
        return;
    }
    since++;
    if (watch > 0 && --watch == 0) {
        probe_after = PROBE;
        lend_after = CALM;
    }
    hot = pressure > 0 ? hot + 1 : 0;
    severe = pressure > 1 ? severe + 1 : 0;
    /* Without an SLO, at ease while best-effort work is held says nothing about it
     * running: only a probe finds out.  With one, every lend is such a trial. */
    calm = pressure > 0 ? 0 : calm + (pressure < 0 && (by_slo || !held));
    if (hot >= RAISE)
        since = 0;
    if (hot >= RAISE && (level < top(v) || (severe >= RAISE && level < GATE_LEVEL))) {
        go(level + 1);
    } else if (by_slo && calm >= lend_after && level > 0) {
        go(level - 1);
        watch = LEND_WATCH;
    } else if (!by_slo && calm >= CALM && level > 0) {
        go(level - 1);
        probe_after = PROBE;
    } else if (!by_slo && level > 0 && since >= probe_after) {
        go(level - 1);
        watch = WATCH;
    }
}

/* The pressure on latency-critical work as a whole: up (2 when any is slowed severely)
 * when any tenant is pressed and best-effort work runs, which is what SMs can be taken
 * from; down when every one with something to say is at ease. */
static int pressure_now(const struct ds_sched_view *v)
{
    int up = 0, steady = 0, down = 0;

    for (int i = 0; i < v->n; i++) {
        const struct ds_sched_tenant *t = &v->t[i];
        int p;

        if (t->klass != DS_SCHED_LATENCY || t->id < 0 || t->id >= SLOTS)
            continue;
        learn(t, !any_busy(v, DS_SCHED_BEST_EFFORT));
        if (!fresh(t))
            continue;
        p = pressure_of(t);
        up = p > up ? p : up;
        steady |= p == 0;
        down |= p < 0;
    }
    if (up > 0)
        return any_busy(v, DS_SCHED_BEST_EFFORT) ? up : 0;
    return down && !steady ? -1 : 0;
}

/* The share of the device's time latency-critical tenants keep it busy, as they run
 * now: completions a second times what one takes. */
static double demand_of(const struct ds_sched_view *v)
{
    double d = 0;

    for (int i = 0; i < v->n; i++) {
        const struct ds_sched_tenant *t = &v->t[i];

        if (t->klass != DS_SCHED_LATENCY || !valid(t))
            continue;
        d += t->rate * t->kernel_us / 1e6;
    }
    return d > 1 ? 1 : d;
}

static void tick(struct ds_sched_view *v)
{
    int pressure = pressure_now(v);

    by_slo = top(v) == GATE_LEVEL;
    demand += (demand_of(v) - demand) / DEMAND_AVG;
    if (demand > floor_demand + 0.1 || demand < floor_demand - 0.1)
        floor_demand = demand;

    note_escapes(v);
    quiet = any_busy(v, DS_SCHED_LATENCY) ? 0 : quiet + 1;
    if (quiet > HOLD)
        reset();
    else
        step(v, pressure);
    place(v);
}

static void start(struct ds_sched_view *v)
{
    reset();
    quiet = HOLD + 1;
    demand = floor_demand = 0;
    for (int i = 0; i < SLOTS; i++)
        base_us[i] = over_slo[i] = 0;
    /* Escapes under another policy happened on fences of its own. */
    for (int i = 0; i < v->n; i++)
        forget_escapes(&v->t[i]);
    place(v);
}

/* A newcomer's slot may have served another tenant: its baseline starts afresh. */
static void join(struct ds_sched_view *v, int joined)
{
    if (valid(&v->t[joined]))
        base_us[v->t[joined].id] = over_slo[v->t[joined].id] = 0;
    forget_escapes(&v->t[joined]);
    place(v);
}

/* The last latency-critical tenant gone, everything is lent back at once. */
static void leave(struct ds_sched_view *v)
{
    int any = 0;

    for (int i = 0; i < v->n; i++)
        any |= v->t[i].klass == DS_SCHED_LATENCY;
    if (!any) {
        reset();
        quiet = HOLD + 1;
    }
    place(v);
}

const struct ds_policy ds_policy_slo_aware = {
    .name = "slo-aware",
    .about = "every SM lent to best-effort work until latency-critical work slows down",
    .on_start = start,
    .on_tenant_join = join,
    .on_tenant_leave = leave,
    .on_tick = tick,
    .tick_ms = 5,
};
