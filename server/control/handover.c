#define _GNU_SOURCE
#include "handover.h"

#include "ds_log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Executors a tenant is offered when those taken for it turn out to be leaving, or do
 * not take it. */
#define HANDOVER_TRIES 3
/* How long an executor has to say it took the connection handed to it; the thread that
 * takes it does nothing else (exec_spawn.h), so a live executor says so within
 * milliseconds, even while its device opens.  One that does not is stopped (SIGSTOP, a
 * debugger, a frozen cgroup) or starved of CPU, and its tenant's cuInit would wait for
 * it for ever: the watchdog that ends stuck executors lives in the same process.  2 s
 * leaves room for a loaded host.  The last executor offered a tenant gets all the time
 * it needs: a slow host is no reason to refuse a tenant. */
#define HANDOVER_DEADLINE_MS 2000

static void offer(struct listener *l, struct ds_spawned *e, int fd, const char *name,
                  int vouched, int tries, const struct ds_tls_keys *keys);

/* A tenant's connection handed to an executor that has not yet said it took it. */
struct handover {
    uv_poll_t word;   /* the executor's end of the pair: its word, or its exit */
    uv_timer_t timer; /* HANDOVER_DEADLINE_MS */
    int handles;      /* of word and timer, not yet closed */
    struct listener *l;
    struct ds_spawned e;
    /* The tenant's id and fault domain: once the executor has died its slot may be
     * cleared, or another tenant's. */
    unsigned long long id;
    uint32_t isolation;
    unsigned group;
    int fd;    /* the control process's own descriptor of the connection, kept till then */
    int tries; /* executors offered the tenant so far, this one included */
    int vouched;
    char name[DS_NAME_MAX + 1];
    int tls; /* keys holds the TLS stream's keys, for each executor offered it */
    struct ds_tls_keys keys;
    struct handover *next, **prev;
};

static void free_handover(uv_handle_t *hd)
{
    struct handover *h = hd->data;

    if (--h->handles == 0) {
        explicit_bzero(&h->keys, sizeof(h->keys));
        free(h);
    }
}

/* Forget handover h: its executor's pair is closed, and the connection unless taken
 * from h->fd. */
static void end_handover(struct handover *h)
{
    *h->prev = h->next;
    if (h->next != NULL)
        h->next->prev = h->prev;
    uv_poll_stop(&h->word);
    ds_spawn_close(&h->e);
    if (h->fd >= 0)
        close(h->fd);
    uv_close((uv_handle_t *)&h->word, free_handover);
    uv_close((uv_handle_t *)&h->timer, free_handover);
}

/* Handover h's executor did not take the tenant: another does, a new one (`fresh`) or
 * any, unless HANDOVER_TRIES were offered it or the server stops. */
static void pass_on(struct handover *h, int fresh)
{
    struct control *c = h->l->ctl;
    unsigned long long id = h->id;
    uint32_t isolation = h->isolation;
    unsigned group = h->group;
    struct listener *l = h->l;
    char name[DS_NAME_MAX + 1];
    struct ds_tls_keys keys = h->keys;
    int fd = h->fd, vouched = h->vouched, tries = h->tries, warm = 0, tls = h->tls;
    struct ds_spawned next;
    const char *why = c->stopping            ? "the server is shutting down"
                      : tries >= HANDOVER_TRIES ? "it was offered as many as it may be"
                                                : NULL;

    memcpy(name, h->name, sizeof(name));
    h->fd = -1;
    end_handover(h);
    if (why == NULL &&
        (fresh ? ds__control_spawn(c, &next, isolation, group)
               : ds__control_take(c, isolation, group, &next, &warm)) != 0)
        why = strerror(errno);
    if (why != NULL) {
        ds_error("tenant %llu (%s): no other executor takes it (%s): closing its connection",
                 id, name, why);
        close(fd);
        explicit_bzero(&keys, sizeof(keys));
        return;
    }
    ds__intake_assign(l, &next, warm, fd, name, vouched);
    ds_info("tenant %llu (%s) is now tenant %llu, on executor pid %d", id, name,
            (unsigned long long)c->shm->slots[next.slot].id, (int)next.pid);
    offer(l, &next, fd, name, vouched, tries + 1, tls ? &keys : NULL);
    explicit_bzero(&keys, sizeof(keys));
}

/* The executor said it took the tenant, or left without it. */
static void on_word(uv_poll_t *p, int status, int events)
{
    struct handover *h = p->data;
    int taken = status < 0 ? -1 : ds_spawn_taken(&h->e);

    (void)events;
    if (taken == 0)
        return;
    if (taken > 0) {
        ds__handover_forget_slot(h->l->ctl, h->e.slot);
        h->l->ctl->attach_ctl[h->e.slot] = h->e.ctl;
        h->e.ctl = -1;
        end_handover(h);
        return;
    }
    ds_warn("tenant %llu (%s): executor pid %d left before taking its connection", h->id,
            h->name, (int)h->e.pid);
    pass_on(h, 0);
}

static void on_handover_late(uv_timer_t *t)
{
    struct handover *h = t->data;

    ds_warn("tenant %llu (%s): executor pid %d did not take its connection within %d s "
            "(stopped, or starved of CPU): killing it; a new executor takes the tenant",
            h->id, h->name, (int)h->e.pid, HANDOVER_DEADLINE_MS / 1000);
    kill(h->e.pid, SIGKILL);
    pass_on(h, 1);
}

/* Watch for executor e's word that it took the connection on fd, handed to it: the
 * tries-th executor offered the tenant.  Takes fd and e's end of the pair; NULL when
 * no watch can be set up (out of memory). */
static struct handover *watch(struct listener *l, struct ds_spawned *e, int fd,
                              const char *name, int vouched, int tries,
                              const struct ds_tls_keys *keys)
{
    struct control *c = l->ctl;
    struct handover *h = calloc(1, sizeof(*h));

    if (h == NULL || uv_poll_init(c->loop, &h->word, e->ctl) != 0) {
        free(h);
        return NULL;
    }
    uv_timer_init(c->loop, &h->timer);
    h->word.data = h->timer.data = h;
    h->handles = 2;
    h->l = l;
    h->e = *e;
    h->id = (unsigned long long)c->shm->slots[e->slot].id;
    h->isolation = atomic_load(&c->shm->slots[e->slot].isolation);
    h->group = atomic_load(&c->shm->slots[e->slot].group);
    h->fd = fd;
    h->tries = tries;
    h->vouched = vouched;
    snprintf(h->name, sizeof(h->name), "%s", name);
    h->tls = keys != NULL;
    if (keys != NULL)
        h->keys = *keys;
    h->next = c->handovers;
    if (h->next != NULL)
        h->next->prev = &h->next;
    h->prev = &c->handovers;
    c->handovers = h;
    uv_poll_start(&h->word, UV_READABLE | UV_DISCONNECT, on_word);
    if (tries < HANDOVER_TRIES)
        uv_timer_start(&h->timer, on_handover_late, HANDOVER_DEADLINE_MS, 0);
    return h;
}

/* Hand the tenant on fd to executor e, the tries-th offered it, with its TLS stream's
 * keys when not NULL (copied: the caller wipes its own), and watch for e's word. */
static void offer(struct listener *l, struct ds_spawned *e, int fd, const char *name,
                  int vouched, int tries, const struct ds_tls_keys *keys)
{
    struct control *c = l->ctl;
    unsigned long long id = (unsigned long long)c->shm->slots[e->slot].id;
    struct ds_spawned next;
    int warm;

    while (ds_spawn_handover(e, fd, keys) != 0) {
        int err = errno;
        uint32_t isolation = atomic_load(&c->shm->slots[e->slot].isolation);
        unsigned group = atomic_load(&c->shm->slots[e->slot].group);

        ds_spawn_close(e);
        if (err == EPIPE && tries < HANDOVER_TRIES &&
            ds__control_take(c, isolation, group, &next, &warm) == 0) {
            ds_info("tenant %llu: its executor was leaving; executor pid %d takes it", id,
                    (int)next.pid);
            *e = next;
            ds__intake_assign(l, e, warm, fd, name, vouched);
            id = (unsigned long long)c->shm->slots[e->slot].id;
            tries++;
            continue;
        }
        ds_error("cannot hand tenant %llu to its executor: %s", id, strerror(err));
        kill(e->pid, SIGKILL);
        close(fd);
        return;
    }
    if (watch(l, e, fd, name, vouched, tries, keys) == NULL) {
        ds_warn("tenant %llu: no memory to watch its executor take it", id);
        ds_spawn_close(e);
        close(fd);
    }
}

void ds__handover_start(struct listener *l, struct ds_spawned *e, uv_stream_t *client, int fd,
                        const char *name, int vouched)
{
    struct ds_tls_keys keys;
    int tls = ds_auth_keys(client, &keys);

    if (tls < 0)
        ds_warn("tenant %llu: no keys for its TLS stream: its executor will not understand it",
                (unsigned long long)l->ctl->shm->slots[e->slot].id);
    offer(l, e, fd, name, vouched, 1, tls > 0 ? &keys : NULL);
    explicit_bzero(&keys, sizeof(keys));
}

void ds__handover_forget_all(struct control *c)
{
    while (c->handovers != NULL)
        end_handover(c->handovers);
}

void ds__handover_forget_slot(struct control *c, int slot)
{
    if (c->attach_ctl[slot] >= 0)
        close(c->attach_ctl[slot]);
    c->attach_ctl[slot] = -1;
}

int ds__handover_attach_ctl(struct control *c, unsigned long long id)
{
    /* The hello gives the tenant the id's low 32 bits. */
    for (int i = 0; i < DS_SHM_SLOTS; i++)
        if ((uint32_t)c->shm->slots[i].id == (uint32_t)id && c->attach_ctl[i] >= 0)
            return c->attach_ctl[i];
    return -1;
}
