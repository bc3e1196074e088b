/*
 * The executor's binder thread.  Moving a tenant to SM groups it has not run on needs a
 * green context made for them, which takes milliseconds; the move itself happens on the
 * serving thread at the tenant's next kernel boundary.  The binder sleeps on the control
 * block's binding generation (a futex the control process wakes when it decides) and
 * makes that context at once (backend prepare), so the move finds it ready.  In a warm
 * executor, until its tenant arrives, it also makes the contexts of the SM groups the
 * control process has bound tenants to lately (the control block's hot_groups).
 */
#ifndef DS_BINDER_H
#define DS_BINDER_H

#include <pthread.h>
#include <stdatomic.h>

struct ds_tenant;

struct ds_binder {
    pthread_t thread;
    atomic_int stop;
    atomic_int ahead; /* 1 while no tenant is there: make hot groups' contexts */
    int running;
    struct ds_tenant *t;
};

/* Start the thread for tenant t, whose device is open.  Returns 0 or an errno value. */
int ds_binder_start(struct ds_binder *bd, struct ds_tenant *t);

/* Whether to make contexts ahead of the tenant (set before start: the executor is warm;
 * cleared once its tenant is there). */
void ds_binder_ahead(struct ds_binder *bd, int on);

/* Stop and join it (nothing when it never started); before the device closes. */
void ds_binder_stop(struct ds_binder *bd);

#endif
