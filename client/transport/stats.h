/*
 * Per-procedure call counts and time spent waiting, so that whoever asks why a program
 * is slow through detshare sees which calls crossed the wire and what they cost.  With
 * DETSHARE_LOG=debug the client logs a summary when the library is unloaded (at the
 * program's exit); tests read the same table with ds__stats_get.
 */
#ifndef DS_STATS_H
#define DS_STATS_H

#include <stdint.h>

struct ds_proc_stats {
    uint64_t calls;
    uint64_t ns; /* time inside the transport: a round trip for synchronous calls */
};

/* Account one call of procedure `proc` that took `ns`; from any thread. */
void ds__stats_add(unsigned long proc, uint64_t ns);

/* Copy procedure `proc`'s counters into *out.  Returns 0, or -1 for an unknown number. */
int ds__stats_get(unsigned long proc, struct ds_proc_stats *out);

#endif
