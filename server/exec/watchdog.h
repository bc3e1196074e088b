/*
 * The executor's watchdog thread.  A serving thread stuck inside the driver (a driver
 * bug, a device that stopped answering) would keep its executor, and with it the
 * tenant's device memory and its MPS client, for ever after the tenant has gone: nothing
 * of what the tenant held would be freed.  The watchdog watches the tenant's socket; once
 * the tenant has hung up and the executor has not ended DS_WATCHDOG_GRACE_MS later, it
 * ends the process, whose exit makes the driver free everything it held.
 */
#ifndef DS_WATCHDOG_H
#define DS_WATCHDOG_H

#include <pthread.h>

#define DS_WATCHDOG_GRACE_MS 5000

struct ds_watchdog {
    pthread_t thread;
    int running;
    int wake;   /* eventfd: stop */
    int fd;     /* the tenant's socket, only polled */
    int status; /* the process's exit status when it ends it */
};

/* Watch socket fd; the process exits with `status` if it is stuck.  Returns 0 or an errno
 * value. */
int ds_watchdog_start(struct ds_watchdog *w, int fd, int status);

/* Stop and join it (nothing when it never started), before the socket closes. */
void ds_watchdog_stop(struct ds_watchdog *w);

#endif
