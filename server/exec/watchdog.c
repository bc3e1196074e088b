#define _GNU_SOURCE /* POLLRDHUP */

#include "watchdog.h"

#include "ds_log.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Wait for the tenant to hang up, then for the grace to pass; woken by stop at any time. */
static void *watchdog_main(void *arg)
{
    struct ds_watchdog *w = arg;
    struct pollfd p[2] = { { .fd = w->wake, .events = POLLIN },
                           { .fd = w->fd, .events = POLLRDHUP } };
    int n;

    for (;;) {
        if ((n = poll(p, 2, -1)) < 0 && errno != EINTR)
            return NULL;
        if (n <= 0)
            continue;
        if (p[0].revents != 0 || (p[1].revents & POLLNVAL) != 0)
            return NULL;
        if ((p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0)
            break;
    }
    while ((n = poll(p, 1, DS_WATCHDOG_GRACE_MS)) < 0 && errno == EINTR)
        ;
    if (n != 0)
        return NULL;
    ds_error("the tenant left %d s ago and this executor is still stuck in a call to the "
             "device: ending it, so that the driver frees what it held",
             DS_WATCHDOG_GRACE_MS / 1000);
    /* The serving thread cannot be woken from inside the driver: only the process's exit
     * returns what it holds. */
    _exit(w->status);
}

int ds_watchdog_start(struct ds_watchdog *w, int fd, int status)
{
    sigset_t all, old;
    int rc;

    w->running = 0;
    w->fd = fd;
    w->status = status;
    if ((w->wake = eventfd(0, EFD_CLOEXEC)) < 0)
        return errno;
    /* Signals (SIGTERM) are the serving thread's. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&w->thread, NULL, watchdog_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        close(w->wake);
    w->running = rc == 0;
    return rc;
}

void ds_watchdog_stop(struct ds_watchdog *w)
{
    if (!w->running)
        return;
    eventfd_write(w->wake, 1);
    pthread_join(w->thread, NULL);
    close(w->wake);
    w->running = 0;
}
