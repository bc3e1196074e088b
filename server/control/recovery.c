#include "recovery.h"

#include "control_int.h"
#include "waiters.h"

#include "ds_clock.h"
#include "ds_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* As long as an executor gets to see its own context fail and leave (a second's grace,
 * exec/executor.c) and more: past it, tenants are served whatever the daemon says. */
#define RECOVERY_WAIT_MS 10000

static unsigned domain_of(const struct ds_shm_slot *s)
{
    uint32_t iso = atomic_load(&s->isolation);

    if (iso == DS_ISO_SHARED)
        return 0;
    return iso == DS_ISO_GROUP ? atomic_load(&s->group) : DS_SHM_GROUPS + 1;
}

static void note(struct ds_recovery *r, pid_t pid)
{
    if (pid > 0 && r->npids < (int)(sizeof(r->pids) / sizeof(r->pids[0])))
        r->pids[r->npids++] = pid;
}

static void release(struct control *c, unsigned dom, const char *how)
{
    struct ds_recovery *r = &c->recovery[dom];
    int n;

    r->active = 0;
    r->npids = 0;
    n = ds__waiters_serve(&r->waiting, 0);
    ds_info("fault domain %s recovered (%s, %.0f ms after the fault): %d waiting tenant(s) "
            "served", dom == 0 ? "shared" : c->groups[dom].name, how,
            (double)(ds_now_ns() - r->since_ns) / 1e6, n);
    if (dom == 0)
        ds__control_refill(c);
}

void ds__recovery_begin(struct control *c, unsigned dom)
{
    struct ds_recovery *r = &c->recovery[dom];

    if (dom > DS_SHM_GROUPS || r->active)
        return;
    r->npids = 0;
    for (int i = 0; i < DS_SHM_SLOTS; i++)
        if (c->shm->slots[i].pid > 0 && domain_of(&c->shm->slots[i]) == dom)
            note(r, c->shm->slots[i].pid);
    for (int i = 0; dom == 0 && i < c->nwarm; i++)
        note(r, c->warm[i].pid);
    if (dom == 0)
        ds__control_kill_warm(c);
    if (r->npids == 0)
        return;
    r->active = 1;
    r->since_ns = ds_now_ns();
    if (!uv_is_active((uv_handle_t *)&c->recovery_timer))
        uv_timer_start(&c->recovery_timer, ds__recovery_on_timer, RECOVERY_WAIT_MS, 0);
}

void ds__recovery_watch(struct control *c)
{
    for (unsigned dom = 0; dom <= DS_SHM_GROUPS; dom++) {
        unsigned lost = atomic_load_explicit(&c->shm->domains[dom].lost, memory_order_relaxed);

        if (lost != c->recovery[dom].lost_seen) {
            c->recovery[dom].lost_seen = lost;
            ds__recovery_begin(c, dom);
        }
    }
}

int ds__recovery_wait(struct control *c, unsigned dom, struct listener *l,
                      uv_stream_t *client, const char *name, int vouched, uint32_t isolation)
{
    struct ds_recovery *r = &c->recovery[dom];

    if (dom > DS_SHM_GROUPS || !r->active ||
        ds__waiters_add(&r->waiting, l, client, name, vouched, isolation, dom) != 0)
        return 0;
    ds_info("tenant %s waits for its fault domain to recover: %d executor(s) that lost "
            "their contexts are still leaving", name, r->npids);
    return 1;
}

void ds__recovery_reaped(struct control *c, pid_t pid)
{
    for (unsigned dom = 0; dom <= DS_SHM_GROUPS; dom++) {
        struct ds_recovery *r = &c->recovery[dom];

        for (int i = 0; r->active && i < r->npids; i++)
            if (r->pids[i] == pid)
                r->pids[i--] = r->pids[--r->npids];
        if (r->active && r->npids == 0)
            release(c, dom, "every executor of the fault left");
    }
}

void ds__recovery_on_timer(uv_timer_t *t)
{
    struct control *c = t->data;
    uint64_t now = ds_now_ns(), next = 0;

    for (unsigned dom = 0; dom <= DS_SHM_GROUPS; dom++) {
        struct ds_recovery *r = &c->recovery[dom];
        uint64_t end = r->since_ns + RECOVERY_WAIT_MS * 1000000ull;

        if (!r->active)
            continue;
        if (now < end) {
            next = next == 0 || end < next ? end : next;
            continue;
        }
        ds_warn("fault domain %s: %d executor(s) that lost their contexts still run after "
                "%d s; serving its waiting tenants anyway",
                dom == 0 ? "shared" : c->groups[dom].name, r->npids, RECOVERY_WAIT_MS / 1000);
        release(c, dom, "deadline");
    }
    if (next != 0)
        uv_timer_start(t, ds__recovery_on_timer, (next - now) / 1000000u + 1, 0);
}

void ds__recovery_cancel(struct control *c)
{
    for (unsigned dom = 0; dom <= DS_SHM_GROUPS; dom++)
        if (c->recovery[dom].active)
            release(c, dom, "the server stops");
}
