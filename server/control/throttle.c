#include "throttle.h"

static int64_t share(unsigned pct, int64_t ns)
{
    return ns / 100 * (int64_t)pct;
}

int ds_throttle_step(struct ds_throttle *t, unsigned pct, uint64_t kernel_ns, uint64_t dt_ns,
                     int was_held)
{
    uint64_t used = kernel_ns - t->seen_ns;

    t->seen_ns = kernel_ns;
    if (pct == 0 || pct >= 100 || !t->started) {
        t->started = pct != 0 && pct < 100;
        t->tokens_ns = share(pct, DS_THROTTLE_BURST_NS);
        t->held = 0;
        return 0;
    }
    t->held_steps = was_held ? t->held_steps + 1 : 0;
    if (t->held_steps > 1)
        used = 0;
    t->tokens_ns += share(pct, (int64_t)dt_ns) - (int64_t)used;
    if (t->tokens_ns > share(pct, DS_THROTTLE_BURST_NS))
        t->tokens_ns = share(pct, DS_THROTTLE_BURST_NS);
    if (!t->held && t->tokens_ns < 0)
        t->held = 1;
    else if (t->held && t->tokens_ns >= share(pct, DS_THROTTLE_RESUME_NS))
        t->held = 0;
    return t->held;
}
