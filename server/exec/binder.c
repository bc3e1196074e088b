#include "binder.h"

#include "shm.h"
#include "tenant.h"

#include "ds_error.h"
#include "ds_groups.h"
#include "ds_log.h"

#include <signal.h>

/* How often the thread looks at `stop` while no decision comes. */
#define BINDER_WAIT_MS 200

/* Make the pCtx for the groups decided now.  The serving thread moves only once it is
 * made, so a failure here is said here: otherwise the tenant would stay where it runs
 * without a word. */
static void prepare(struct ds_tenant *t, struct ds_shm_slot *slot)
{
    uint64_t groups = atomic_load(&slot->groups);
    int rc = t->ops->prepare(t->be, groups);
    char what[200];

    ds_groups_format(groups, t->shm->sm_group_size, what, sizeof(what));
    if (rc < 0)
        ds_warn("cannot make a context for %s: %s; the tenant stays where it runs", what,
                ds_strerror(rc));
    else
        ds_debug("context for %s ready", what);
}

/* While no tenant is there yet, make the contexts of the SM groups tenants were bound to
 * lately: a tenant's first move to groups of a context not yet made waits for it when it
 * gives SMs up (170 ms measured on an H100), and policies keep choosing the same few
 * sets.  Stops at a decision or a tenant, which come first; a context being made when
 * the tenant arrives delays at most its first move, by the making of one. */
static void make_ahead(struct ds_binder *bd, struct ds_shm_slot *slot, unsigned seen)
{
    struct ds_tenant *t = bd->t;

    for (int i = 0; i < DS_SHM_HOT; i++) {
        uint64_t groups = atomic_load(&t->shm->hot_groups[i]);
        char what[200];

        if (!atomic_load(&bd->ahead) || atomic_load(&bd->stop) ||
            atomic_load(&slot->bind_gen) != seen)
            return;
        if (groups == 0 || t->ops->prepare(t->be, groups) != 1)
            continue;
        ds_groups_format(groups, t->shm->sm_group_size, what, sizeof(what));
        ds_debug("context for %s made ahead of the tenant", what);
    }
}

static void *binder_main(void *arg)
{
    struct ds_binder *bd = arg;
    struct ds_tenant *t = bd->t;
    struct ds_shm_slot *slot = &t->shm->slots[t->slot];
    unsigned seen = atomic_load(&slot->bind_gen);

    /* The tenant's first binding was decided before it connected. */
    prepare(t, slot);
    while (!atomic_load(&bd->stop)) {
        unsigned gen;

        make_ahead(bd, slot, seen);
        gen = ds_shm_bind_wait(t->shm, t->slot, seen, BINDER_WAIT_MS);
        if (gen == seen)
            continue;
        seen = gen;
        prepare(t, slot);
    }
    return NULL;
}

int ds_binder_start(struct ds_binder *bd, struct ds_tenant *t)
{
    sigset_t all, old;
    int rc;

    bd->t = t;
    atomic_store(&bd->stop, 0);
    /* Signals (SIGTERM) are the serving thread's. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&bd->thread, NULL, binder_main, bd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    bd->running = rc == 0;
    return rc;
}

void ds_binder_ahead(struct ds_binder *bd, int on)
{
    atomic_store(&bd->ahead, on);
}

void ds_binder_stop(struct ds_binder *bd)
{
    if (!bd->running)
        return;
    atomic_store(&bd->stop, 1);
    ds_shm_bind_wake(bd->t->shm, bd->t->slot);
    pthread_join(bd->thread, NULL);
    bd->running = 0;
}
