/* The monotonic clock in nanoseconds, for timeouts, spin limits and time accounting in
 * the client, the executors and the sim alike. */
#ifndef DS_CLOCK_H
#define DS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ds_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
