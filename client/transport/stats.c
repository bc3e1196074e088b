#include "stats.h"

#include "ds_log.h"
#include "ds_procs.h"
#include "ds_clock.h"

#include <stdatomic.h>

/* Added to by every calling thread at once: a synchronous call is accounted once its
 * reply is in, outside any lock. */
static struct {
    atomic_uint_fast64_t calls, ns;
} table[DS_PROC_MAX + 1];

void ds__stats_add(unsigned long proc, uint64_t ns)
{
    if (proc > DS_PROC_MAX)
        return;
    atomic_fetch_add_explicit(&table[proc].calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&table[proc].ns, ns, memory_order_relaxed);
}

int ds__stats_get(unsigned long proc, struct ds_proc_stats *out)
{
    if (proc > DS_PROC_MAX || ds_proc_name(proc) == NULL)
        return -1;
    out->calls = atomic_load_explicit(&table[proc].calls, memory_order_relaxed);
    out->ns = atomic_load_explicit(&table[proc].ns, memory_order_relaxed);
    return 0;
}

/* At unload the application's threads may still be calling in; a count and a time
 * read a call apart only skew a debug line. */
__attribute__((destructor)) static void summary(void)
{
    if (!ds_log_enabled(DS_LOG_DEBUG))
        return;
    for (unsigned long p = 0; p <= DS_PROC_MAX; p++) {
        struct ds_proc_stats s;

        if (ds__stats_get(p, &s) != 0 || s.calls == 0)
            continue;
        ds_debug("calls: %-20s %10llu  %10.1f us each  (%s)", ds_proc_name(p),
                 (unsigned long long)s.calls, (double)s.ns / 1e3 / (double)s.calls,
                 ds_proc_batched(p) ? "batched" : "round trip");
    }
}
