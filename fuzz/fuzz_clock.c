/*
 * Virtual time for fuzz_exec: the sim device makes work take modelled time, and an
 * executor sleeps (clock_nanosleep in the sim, ppoll with a timeout in its loop) until
 * the device would be done.  A real session spends most of its time so, which would
 * hold the fuzzer to tens of inputs a second.  These definitions take the place of the
 * C library's in this program only: CLOCK_MONOTONIC runs ahead by however long anything
 * would have slept, and a sleep returns at once.  Waiting for a descriptor with no
 * timeout still waits (the peer thread always writes or closes).  libFuzzer's own
 * clocks (CLOCK_REALTIME, SIGALRM for -timeout) are untouched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic uint64_t ahead_ns;

static uint64_t ns_of(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static void set_ns(struct timespec *t, uint64_t ns)
{
    t->tv_sec = (time_t)(ns / 1000000000u);
    t->tv_nsec = (long)(ns % 1000000000u);
}

static uint64_t now_ns(void)
{
    struct timespec t;

    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    return ns_of(&t) + atomic_load(&ahead_ns);
}

/* Let the clock pass `ns` nanoseconds at once. */
static void skip(uint64_t ns)
{
    atomic_fetch_add(&ahead_ns, ns);
}

int clock_gettime(clockid_t id, struct timespec *t)
{
    if (id != CLOCK_MONOTONIC)
        return (int)syscall(SYS_clock_gettime, id, t);
    set_ns(t, now_ns());
    return 0;
}

int clock_nanosleep(clockid_t id, int flags, const struct timespec *req, struct timespec *rem)
{
    uint64_t now = now_ns(), want = ns_of(req);

    if (id != CLOCK_MONOTONIC)
        return EINVAL;
    if (flags & TIMER_ABSTIME)
        want = want > now ? want - now : 0;
    skip(want);
    if (rem != NULL)
        set_ns(rem, 0);
    return 0;
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
    struct timespec zero = { 0, 0 };
    long rc = syscall(SYS_ppoll, fds, n, tmo != NULL ? &zero : NULL, mask, _NSIG / 8);

    if (rc == 0 && tmo != NULL)
        skip(ns_of(tmo));
    return (int)rc;
}
