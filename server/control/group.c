#include "group.h"

#include "control_int.h"
#include "waiters.h"

#include "ds_clock.h"
#include "ds_log.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* How often a starting daemon is looked at, and how long it gets to take clients (as
 * the server's own daemon, mps.c). */
#define POLL_MS 20
#define READY_NS 10000000000ull

enum { GROUP_DOWN, GROUP_STARTING, GROUP_UP };

unsigned ds__group_index(struct control *c, const char *name)
{
    for (unsigned g = 1; g <= DS_SHM_GROUPS; g++)
        if (strcmp(c->groups[g].name, name) == 0)
            return g;
    for (unsigned g = 1; g <= DS_SHM_GROUPS; g++)
        if (c->groups[g].name[0] == '\0') {
            snprintf(c->groups[g].name, sizeof(c->groups[g].name), "%s", name);
            memcpy(c->shm->domains[g].group, c->groups[g].name, sizeof(c->groups[g].name));
            ds_info("fault domain group:%s made (its tenants share %s)", name,
                    c->cfg->mps_dir[0] != '\0' ? "an MPS daemon of their own"
                                               : "faults with each other only, on the sim");
            return g;
        }
    return 0;
}

/* Group g's daemon took clients (ok) or failed to: its waiting tenants are served in the
 * group, or in domains of their own. */
static void release(struct control *c, unsigned g, int ok)
{
    ds__waiters_serve(&c->groups[g].waiting, !ok);
}

static void failed(struct control *c, unsigned g, const char *why)
{
    struct ds_group *gr = &c->groups[g];

    ds_error("MPS: the control daemon of group %s %s: its waiting tenants run in domains "
             "of their own; the group's next tenant starts it again", gr->name, why);
    gr->state = GROUP_DOWN;
    release(c, g, 0);
}

static void on_poll(uv_timer_t *t)
{
    struct control *c = t->data;
    uint64_t now = ds_now_ns();
    int starting = 0;

    for (unsigned g = 1; g <= DS_SHM_GROUPS; g++) {
        struct ds_group *gr = &c->groups[g];

        if (gr->state != GROUP_STARTING)
            continue;
        if (ds_mps_group_ready(&gr->mps)) {
            gr->state = GROUP_UP;
            ds_info("MPS: the control daemon of group %s takes clients (%.0f ms after it "
                    "was started)", gr->name, (double)(now - gr->since_ns) / 1e6);
            release(c, g, 1);
        } else if (now - gr->since_ns > READY_NS) {
            kill(gr->mps.daemon, SIGKILL);
            failed(c, g, "took no client in 10 s (killed)");
        } else {
            starting = 1;
        }
    }
    if (!starting)
        uv_timer_stop(t);
}

static int start(struct control *c, unsigned g)
{
    struct ds_group *gr = &c->groups[g];

    if (ds_mps_group_start(&gr->mps, c->cfg->mps_dir, gr->name) != 0)
        return -1;
    gr->state = GROUP_STARTING;
    gr->since_ns = ds_now_ns();
    if (!uv_is_active((uv_handle_t *)&c->group_poll))
        uv_timer_start(&c->group_poll, on_poll, POLL_MS, POLL_MS);
    return 0;
}

int ds__group_wait(struct control *c, unsigned g, struct listener *l, uv_stream_t *client,
                   const char *name, int vouched)
{
    struct ds_group *gr = &c->groups[g];

    if (c->cfg->mps_dir[0] == '\0' || gr->state == GROUP_UP ||
        ds__waiters_add(&gr->waiting, l, client, name, vouched, DS_ISO_GROUP, g) != 0)
        return 0;
    /* A daemon that cannot be started serves its waiters, this one too, apart. */
    if (gr->state == GROUP_DOWN && start(c, g) != 0) {
        failed(c, g, "could not be started");
        return 1;
    }
    ds_info("tenant %s waits for the MPS daemon of its group %s to take clients", name,
            gr->name);
    return 1;
}

const char *ds__group_pipe(const struct control *c, unsigned g)
{
    if (g == 0 || g > DS_SHM_GROUPS || c->groups[g].state != GROUP_UP)
        return NULL;
    return c->groups[g].mps.pipe;
}

int ds__group_reaped(struct control *c, pid_t pid, int status)
{
    char why[64];

    for (unsigned g = 1; g <= DS_SHM_GROUPS; g++) {
        struct ds_group *gr = &c->groups[g];

        if (gr->mps.daemon != pid || pid <= 0)
            continue;
        gr->mps.daemon = 0;
        snprintf(why, sizeof(why), "exited (%s %d)", WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        if (gr->state == GROUP_STARTING)
            failed(c, g, why);
        else if (!c->stopping)
            ds_error("MPS: the control daemon of group %s %s: the group's next tenant "
                     "starts it again", gr->name, why);
        gr->state = GROUP_DOWN;
        return 1;
    }
    return 0;
}

void ds__group_cancel(struct control *c)
{
    for (unsigned g = 1; g <= DS_SHM_GROUPS; g++)
        release(c, g, 0);
}

void ds__group_stop_all(struct control *c)
{
    for (unsigned g = 1; g <= DS_SHM_GROUPS; g++)
        if (c->groups[g].mps.daemon > 0) {
            ds_mps_group_stop(&c->groups[g].mps);
            ds_info("MPS: the control daemon of group %s stopped", c->groups[g].name);
        }
}
