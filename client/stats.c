#include "stats.h"

#include "ds_log.h"
#include "ds_procs.h"
#include "ds_clock.h"


static struct ds_proc_stats table[DS_PROC_MAX + 1];

void ds__stats_add(unsigned long proc, uint64_t ns)
{
    if (proc > DS_PROC_MAX)
        return;
    table[proc].calls++;
    table[proc].ns += ns;
}

int ds__stats_get(unsigned long proc, struct ds_proc_stats *out)
{
    if (proc > DS_PROC_MAX || ds_proc_name(proc) == NULL)
        return -1;
    *out = table[proc];
    return 0;
}

/* At unload the application's threads may still be calling in; a torn 64-bit read only
 * skews a debug line. */
__attribute__((destructor)) static void summary(void)
{
    if (!ds_log_enabled(DS_LOG_DEBUG))
        return;
    for (unsigned long p = 0; p <= DS_PROC_MAX; p++) {
        const struct ds_proc_stats *s = &table[p];

        if (s->calls == 0)
            continue;
        ds_debug("calls: %-20s %10llu  %10.1f us each  (%s)", ds_proc_name(p),
                 (unsigned long long)s->calls, (double)s->ns / 1e3 / (double)s->calls,
                 ds_proc_batched(p) ? "batched" : "round trip");
    }
}
