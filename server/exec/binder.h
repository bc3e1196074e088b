/*
 * The executor's binder thread.  Moving a tenant to SM groups it has not run on needs a
 * green context made for them, which takes milliseconds; the move itself happens on the
 * serving thread at the tenant's next kernel boundary.  The binder sleeps on the control
 * block's binding generation (a futex the control process wakes when it decides) and
 * makes that context at once (backend prepare), so the move finds it ready.
 */
#ifndef DS_BINDER_H
#define DS_BINDER_H

#include <pthread.h>
#include <stdatomic.h>

struct ds_tenant;

struct ds_binder {
    pthread_t thread;
    atomic_int stop;
    int running;
    struct ds_tenant *t;
};

/* Start the thread for tenant t, whose device is open.  Returns 0 or an errno value. */
int ds_binder_start(struct ds_binder *bd, struct ds_tenant *t);

/* Stop and join it (nothing when it never started); before the device closes. */
void ds_binder_stop(struct ds_binder *bd);

#endif
