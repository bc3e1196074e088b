#define _GNU_SOURCE
#include "control_int.h"

#include "config.h"
#include "faults.h"
#include "handover.h"
#include "ds_log.h"
#include "quota.h"

#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

/* How long tenants get to finish after SIGTERM before they are killed. */
#define DS_STOP_GRACE_MS 5000

/* An `own` executor is pointed at an MPS pipe directory where no daemon listens, so
 * that its context is no MPS client; a group's, at its group's daemon. */
int ds__control_spawn(struct control *c, struct ds_spawned *out, uint32_t isolation,
                      unsigned group)
{
    int slot = ds_shm_slot_take(c->shm);
    const char *pipe = isolation == DS_ISO_GROUP ? ds__group_pipe(c, group)
                       : isolation == DS_ISO_OWN && c->cfg->own_mps_pipe[0] != '\0'
                           ? c->cfg->own_mps_pipe
                           : NULL;

    if (slot < 0) {
        errno = EBUSY;
        return -1;
    }
    atomic_store(&c->shm->slots[slot].isolation, isolation);
    atomic_store(&c->shm->slots[slot].group, isolation == DS_ISO_GROUP ? group : 0);
    if (ds_spawn_executor(c->shm_fd, slot, pipe, out) != 0) {
        int err = errno;

        ds_shm_slot_clear(c->shm, slot);
        errno = err;
        return -1;
    }
    c->shm->slots[slot].pid = out->pid;
    c->live++;
    return 0;
}

/* Faults seen in the shared domain so far: executors count one as soon as they find
 * their context failed (exec/fault.h), and again as they leave. */
static unsigned fault_gen(const struct control *c)
{
    return atomic_load(&c->shm->faults) + atomic_load(&c->shm->domains[0].faults) +
           atomic_load(&c->shm->domains[0].lost);
}

/* Log a failure to start a warm executor: a new reason at once, the same one at most
 * every 10 s, with how many went unlogged. */
static void warm_failed(struct control *c, int err)
{
    uint64_t now = uv_now(c->loop);

    if (err == c->warm_errno && now - c->warm_logged_ms < 10000) {
        c->warm_unlogged++;
        return;
    }
    if (c->warm_unlogged > 0)
        ds_warn("cannot start a warm executor: %s (and %u times more since the last line)",
                strerror(err), c->warm_unlogged);
    else
        ds_warn("cannot start a warm executor: %s", strerror(err));
    c->warm_errno = err;
    c->warm_logged_ms = now;
    c->warm_unlogged = 0;
}

/* Keep cfg->warm executors of the shared domain waiting with the device open. */
static void fill_pool(struct control *c)
{
    /* While the shared domain recovers from a fault, MPS admits no new client: the pool
     * is filled again once it has (recovery.c serves its waiting tenants, then here). */
    while (!c->stopping && !c->recovery[0].active && c->nwarm < c->cfg->warm) {
        if (ds__control_spawn(c, &c->warm[c->nwarm], DS_ISO_SHARED, 0) != 0) {
            warm_failed(c, errno);
            return;
        }
        c->warm_gen[c->nwarm] = fault_gen(c);
        c->warm_killed[c->nwarm] = 0;
        c->nwarm++;
    }
}

void ds__control_refill(struct control *c)
{
    fill_pool(c);
}

static void drop_warm(struct control *c, int i)
{
    size_t n = (size_t)(c->nwarm - i - 1);

    memmove(&c->warm[i], &c->warm[i + 1], n * sizeof(c->warm[0]));
    memmove(&c->warm_gen[i], &c->warm_gen[i + 1], n * sizeof(c->warm_gen[0]));
    memmove(&c->warm_killed[i], &c->warm_killed[i + 1], n * sizeof(c->warm_killed[0]));
    c->nwarm--;
}

/* The oldest warm executor started since the shared domain's last fault, or -1.  Under
 * MPS a fault ends the context of every client, those of warm executors too, which have
 * no tenant to find out: an older one is told to go (it is reaped as it leaves), and a
 * tenant that arrives meanwhile gets a new executor, which waits for MPS to admit it
 * (run 118 on an H200: the first tenant after a fault was handed a warm executor whose
 * context had failed). */
static int fresh_warm(struct control *c)
{
    unsigned gen = fault_gen(c);

    for (int i = 0; i < c->nwarm; i++) {
        if (c->warm_gen[i] == gen)
            return i;
        if (!c->warm_killed[i]) {
            ds_info("a warm executor (pid %d) was started before the last fault in the "
                    "shared domain: replacing it", (int)c->warm[i].pid);
            kill(c->warm[i].pid, SIGTERM);
            c->warm_killed[i] = 1;
        }
    }
    return -1;
}

/* The oldest warm executor is the likeliest to be ready. */
int ds__control_take(struct control *c, uint32_t isolation, unsigned group,
                     struct ds_spawned *out, int *warm)
{
    int i = isolation == DS_ISO_SHARED ? fresh_warm(c) : -1;

    *warm = i >= 0;
    if (!*warm)
        return ds__control_spawn(c, out, isolation, group);
    *out = c->warm[i];
    drop_warm(c, i);
    c->no_mps = 0;
    return 0;
}

static int is_warm(const struct control *c, pid_t pid)
{
    for (int i = 0; i < c->nwarm; i++)
        if (c->warm[i].pid == pid)
            return i;
    return -1;
}

/* Returns 0, or -1 when the operator asked for an admin socket that cannot be made. */
static int open_admin(struct control *c)
{
    struct ds_admin_hooks hooks;

    ds__place_admin_hooks(c, &hooks);

    if (c->cfg->admin[0] == '\0')
        return 0;
    return ds_admin_open(c->loop, c->cfg->admin, c->cfg->admin_gid, &hooks, &c->admin) == 0
               ? 0
               : -1;
}

static char *render_metrics(void *ctx, size_t *len)
{
    struct control *c = ctx;
    struct ds_exposition_state st = { .cfg = c->cfg, .shm = c->shm, .policy = c->policy->name,
                                      .tenants = c->tenants, .ntenants = c->ntenants,
                                      .nwarm = c->nwarm, .mps_daemon_up = c->mps_up,
                                      .tenants_served = c->served,
                                      .domains = &c->domains };

    memcpy(st.refused, c->refused, sizeof(st.refused));
    return ds_exposition_render(&st, len);
}

static int open_metrics(struct control *c)
{
    if (!c->cfg->has_metrics)
        return 0;
    return ds_metrics_open(c->loop, &c->cfg->metrics, render_metrics, c, &c->metrics) == 0 ? 0
                                                                                          : -1;
}

static const char *exit_reason(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status)) {
        snprintf(buf, len, "executor killed by signal %d", WTERMSIG(status));
        return buf;
    }
    switch (WEXITSTATUS(status)) {
    case DS_EXEC_DISCONNECTED:
        return "disconnected";
    case DS_EXEC_PROTOCOL:
        return "protocol error, connection closed";
    case DS_EXEC_STOPPED:
        return "server shutting down";
    case DS_EXEC_DEVICE_LOST:
        return "its device context failed (a kernel's fault, its own or, under MPS, a "
               "neighbour's)";
    case DS_EXEC_STUCK:
        return "its executor was stuck in the driver after the tenant left, and was ended";
    case DS_EXEC_NO_MPS:
        return "its context was no MPS client, though the server runs MPS";
    case DS_EXEC_NO_HELLO:
        return "it sent no hello in time, connection closed";
    default:
        snprintf(buf, len, "executor failed (status %d)", WEXITSTATUS(status));
        return buf;
    }
}

static void close_all(struct control *c)
{
    uv_close((uv_handle_t *)&c->sig_chld, NULL);
    uv_close((uv_handle_t *)&c->sig_term, NULL);
    uv_close((uv_handle_t *)&c->sig_int, NULL);
    uv_close((uv_handle_t *)&c->sig_hup, NULL);
    uv_close((uv_handle_t *)&c->grace, NULL);
    uv_close((uv_handle_t *)&c->tick, NULL);
    uv_close((uv_handle_t *)&c->watch, NULL);
    uv_close((uv_handle_t *)&c->refill, NULL);
    ds__tracectl_close(c);
    uv_close((uv_handle_t *)&c->group_poll, NULL);
    uv_close((uv_handle_t *)&c->recovery_timer, NULL);
}

static void on_refill(uv_timer_t *t)
{
    fill_pool(t->data);
}

/* A warm executor came up without MPS (DS_EXEC_NO_MPS).  On an H100 that happened to the
 * executors a server started in its first second after another MPS daemon on the GPU
 * had quit, while those it started later were MPS clients (lab/gpu-runs.md, runs
 * 99-101): another is started a second later, up to NO_MPS_TRIES in a row; then
 * executors keep the context they get, and say so. */
#define NO_MPS_TRIES 10
#define NO_MPS_RETRY_MS 1000

static void warm_without_mps(struct control *c)
{
    if (++c->no_mps >= NO_MPS_TRIES) {
        atomic_store(&c->shm->mps_expected, DS_SHM_MPS_WARN);
        ds_error("MPS: %d warm executors in a row were no MPS clients; executors now keep "
                 "such a context, and their tenants take turns on the GPU", c->no_mps);
    } else {
        ds_warn("MPS: a warm executor came up as no MPS client; starting another in %d ms",
                NO_MPS_RETRY_MS);
    }
    uv_timer_start(&c->refill, on_refill, NO_MPS_RETRY_MS, 0);
}

/* A warm executor that exits had no tenant: nothing to report unless it failed. */
static int reap_warm(struct control *c, pid_t pid, int status)
{
    int i = is_warm(c, pid);
    char buf[64];

    if (i < 0)
        return 0;
    if (!c->stopping && WIFEXITED(status) && WEXITSTATUS(status) == DS_EXEC_NO_MPS)
        warm_without_mps(c);
    else if (!c->stopping && !(WIFEXITED(status) && WEXITSTATUS(status) == DS_EXEC_STOPPED))
        ds_warn("a warm executor (pid %d) exited before any tenant came: %s", (int)pid,
                exit_reason(status, buf, sizeof(buf)));
    close(c->warm[i].ctl);
    ds_shm_slot_clear(c->shm, c->warm[i].slot);
    drop_warm(c, i);
    c->live--;
    return 1;
}

void ds__control_kill_warm(struct control *c)
{
    int n = 0;

    for (int i = 0; i < c->nwarm; i++)
        if (!c->warm_killed[i]) {
            kill(c->warm[i].pid, SIGTERM);
            c->warm_killed[i] = 1;
            n++;
        }
    if (n > 0)
        ds_info("replacing %d warm executor(s): under MPS their contexts ended with the "
                "fault", n);
}

static void mps_daemon_exited(struct control *c, int status)
{
    char how[32];

    c->mps_up = 0;
    if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "killed by signal %d", WTERMSIG(status));
    else
        snprintf(how, sizeof(how), "status %d", WEXITSTATUS(status));
    ds_error("MPS: the control daemon exited (%s): executors started from now on "
             "time-slice the GPU", how);
}

static void on_sigchld(uv_signal_t *h, int signum)
{
    struct control *c = h->data;
    char buf[64];
    int status;
    pid_t pid;

    (void)signum;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == c->cfg->mps_daemon)
            mps_daemon_exited(c, status);
        if (ds__group_reaped(c, pid, status))
            continue;
        if (reap_warm(c, pid, status)) {
            ds__recovery_reaped(c, pid);
            continue;
        }
        for (int i = 0; i < DS_SHM_SLOTS; i++) {
            struct ds_shm_slot *s = &c->shm->slots[i];

            if (s->pid != pid)
                continue;
            /* A clean exit has freed everything; a killed executor's count is what the
             * tenant held when it died (the process's exit returned it to the driver). */
            const char *name = s->tenant[0] ? s->tenant : "before handshake";
            int lost = WIFEXITED(status) && WEXITSTATUS(status) == DS_EXEC_DEVICE_LOST;
            uint32_t iso = atomic_load(&s->isolation);
            unsigned dom = iso == DS_ISO_GROUP ? atomic_load(&s->group) : 0;

            ds_info("tenant %llu (%s) left: %s; it still held %llu bytes of device memory",
                    (unsigned long long)s->id, name, exit_reason(status, buf, sizeof(buf)),
                    (unsigned long long)atomic_load(&s->mem_used));
            ds__faults_tell(c, s, name, status);
            ds__tracectl_left(c, i);
            ds__handover_forget_slot(c, i);
            ds_shm_slot_clear(c->shm, i);
            c->live--;
            if (lost)
                ds__faults_lost(c, iso, dom);
            ds__recovery_reaped(c, pid);
            if (!c->stopping)
                ds__place_left(c, i);
        }
    }
    if (c->stopping && c->live == 0)
        close_all(c);
}

static void on_grace_over(uv_timer_t *t)
{
    struct control *c = t->data;

    for (int i = 0; i < DS_SHM_SLOTS; i++)
        if (c->shm->slots[i].pid > 0) {
            ds_warn("tenant %llu did not stop in time: killing it",
                    (unsigned long long)c->shm->slots[i].id);
            kill(c->shm->slots[i].pid, SIGKILL);
        }
}

static void close_listeners(struct control *c)
{
    if (c->admin != NULL)
        ds_admin_close(c->admin);
    c->admin = NULL;
    if (c->metrics != NULL)
        ds_metrics_close(c->metrics);
    c->metrics = NULL;
    ds__intake_close(c);
}

/* SIGHUP: the config file's quotas replace those in force (detshare-ctl's changes
 * included) unless the file has errors. */
static void reload_config(struct control *c)
{
    struct ds_shm_quota v[DS_SHM_QUOTAS];
    unsigned n;
    const char *why;

    if (c->cfg->config == NULL)
        return;
    if (ds_config_load(c->cfg->config, v, &n) != 0) {
        ds_error("SIGHUP: %s has errors: the %u quota(s) in force stay", c->cfg->config,
                 c->nrules);
        return;
    }
    if ((why = ds_quota_groups_check(v, n, c->domains.fallback_group)) != NULL) {
        ds_error("SIGHUP: %s: %s: the %u quota(s) in force stay", c->cfg->config, why,
                 c->nrules);
        return;
    }
    ds__place_set_rules(c, v, n);
    ds_info("SIGHUP: %u quota(s) from %s", n, c->cfg->config);
}

/* SIGHUP: the token file read again, for prefaces checked from now on. */
static void reload_tokens(struct control *c)
{
    struct ds_tokens *t;

    if (c->cfg->token_file == NULL)
        return;
    if ((t = ds_tokens_load(c->cfg->token_file)) == NULL) {
        ds_error("SIGHUP: the tokens in force stay");
        return;
    }
    ds_tokens_free(c->reloaded);
    c->reloaded = t;
    c->authing.tokens = t;
}

static void on_hangup(uv_signal_t *h, int signum)
{
    struct control *c = h->data;

    (void)signum;
    reload_config(c);
    reload_tokens(c);
    ds_info("SIGHUP handled: %u quota(s) in force", c->nrules);
}

static void on_stop_signal(uv_signal_t *h, int signum)
{
    struct control *c = h->data;

    if (c->stopping)
        return;
    c->stopping = 1;
    ds_info("signal %d: no new tenants; stopping %d tenant(s)", signum, c->live - c->nwarm);
    close_listeners(c);
    ds_auth_cancel_all(&c->authing, "the server is shutting down");
    ds__handover_forget_all(c);
    ds__group_cancel(c);
    ds__recovery_cancel(c);
    /* Held tenants must be able to finish. */
    uv_timer_stop(&c->tick);
    for (int i = 0; i < c->ntenants; i++)
        ds_shm_gate(c->shm, c->tenants[i].id, 0);
    for (int i = 0; i < DS_SHM_SLOTS; i++)
        if (c->shm->slots[i].pid > 0)
            kill(c->shm->slots[i].pid, SIGTERM);
    if (c->live == 0)
        close_all(c);
    else
        uv_timer_start(&c->grace, on_grace_over, DS_STOP_GRACE_MS, 0);
}

static int start_signals(struct control *c)
{
    uv_signal_init(c->loop, &c->sig_chld);
    uv_signal_init(c->loop, &c->sig_term);
    uv_signal_init(c->loop, &c->sig_int);
    uv_signal_init(c->loop, &c->sig_hup);
    uv_timer_init(c->loop, &c->grace);
    uv_timer_init(c->loop, &c->tick);
    uv_timer_init(c->loop, &c->watch);
    uv_timer_init(c->loop, &c->refill);
    uv_timer_init(c->loop, &c->group_poll);
    uv_timer_init(c->loop, &c->recovery_timer);
    c->refill.data = c->group_poll.data = c->recovery_timer.data = c;
    c->sig_chld.data = c->sig_term.data = c->sig_int.data = c->sig_hup.data = c;
    c->grace.data = c->tick.data = c->watch.data = c;
    signal(SIGPIPE, SIG_IGN);
    if (uv_signal_start(&c->sig_chld, on_sigchld, SIGCHLD) != 0 ||
        uv_signal_start(&c->sig_term, on_stop_signal, SIGTERM) != 0 ||
        uv_signal_start(&c->sig_int, on_stop_signal, SIGINT) != 0 ||
        uv_signal_start(&c->sig_hup, on_hangup, SIGHUP) != 0)
        return -1;
    return 0;
}

/* Executors should be MPS clients when the server runs a daemon or uses one, and on the
 * sim, which models MPS (a test can make its contexts say otherwise). */
static int expects_mps(const struct ds_server_config *cfg)
{
    if (cfg->device == DS_SHM_SIM)
        return 1;
    return cfg->mps_mode != NULL &&
           (strcmp(cfg->mps_mode, "started") == 0 || strcmp(cfg->mps_mode, "external") == 0);
}

int ds_control_run(const struct ds_server_config *cfg)
{
    char iso[DS_GROUP_MAX + 8];
    struct control c;
    int failed;

    memset(&c, 0, sizeof(c));
    for (int i = 0; i < DS_SHM_SLOTS; i++)
        c.attach_ctl[i] = -1;
    c.cfg = cfg;
    c.loop = uv_default_loop();
    c.policy = cfg->policy;
    c.mps_up = cfg->mps_daemon > 0;
    c.shm = ds_shm_create(cfg->sim_memory, &c.shm_fd);
    if (c.shm == NULL) {
        ds_error("cannot create the shared control block: %s", strerror(errno));
        return 1;
    }
    c.shm->device = cfg->device;
    c.shm->gpu = cfg->gpu;
    c.shm->sim_sms = cfg->sim_sms;
    c.shm->spin_us = cfg->spin_us;
    c.shm->sync_spin_us = cfg->sync_spin_us;
    c.shm->sm_group_size = cfg->sm.size;
    c.shm->sm_groups = cfg->sm.count;
    c.shm->mps_expected = expects_mps(cfg) ? DS_SHM_MPS_RETRY : DS_SHM_MPS_NONE;
    c.authing.tokens = cfg->tokens;
    c.authing.tls = cfg->tls;
    c.authing.tls_only = cfg->tls_only;
    /* Tokens the admin API adds; without memory for an empty set, it adds none. */
    c.authing.minted = c.minted = ds_tokens_new();
    c.domains.fallback = cfg->isolation;
    memcpy(c.domains.fallback_group, cfg->isolation_group, sizeof(c.domains.fallback_group));
    c.domains.quarantine_ns = cfg->quarantine_ns;
    failed = start_signals(&c) != 0;
    /* The rules need the timers start_signals made; the admin socket and metrics come
     * before the listeners: once tenants can connect, they can be seen. */
    if (!failed) {
        ds__place_set_rules(&c, cfg->quotas, cfg->nquotas);
        failed = open_admin(&c) != 0 || open_metrics(&c) != 0 || ds__intake_open(&c) != 0;
    }
    if (failed) {
        close_listeners(&c);
        close_all(&c);
    } else {
        ds_info("ready: device %s, %u SMs in %u groups of %u; policy %s; tenants' fault "
                "domain %s unless their rule says otherwise, quarantine %llu s",
                cfg->backend->name, cfg->sm.sms, cfg->sm.count, cfg->sm.size, c.policy->name,
                ds_quota_isolation_format(cfg->isolation, cfg->isolation_group, iso,
                                          sizeof(iso)),
                (unsigned long long)(cfg->quarantine_ns / 1000000000ull));
        fill_pool(&c);
        ds__place_start(&c);
    }
    uv_run(c.loop, UV_RUN_DEFAULT);
    uv_loop_close(c.loop);
    ds__group_stop_all(&c);
    ds_shm_unmap(c.shm);
    close(c.shm_fd);
    ds_tokens_free(c.reloaded);
    ds_tokens_free(c.minted);
    if (!failed)
        ds_info("stopped");
    return failed;
}
