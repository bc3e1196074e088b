#define _GNU_SOURCE
#include "intake.h"

#include "control_int.h"
#include "handover.h"
#include "ds_clock.h"
#include "ds_log.h"
#include "quota.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

/* A tenant's stream, once closed: its TLS session, if any, goes with it. */
static void free_handle(uv_handle_t *h)
{
    ds_auth_forget((uv_stream_t *)h);
    free(h);
}

static uv_stream_t *new_client(struct listener *l)
{
    uv_stream_t *s;

    if (l->addr.kind == DS_ADDR_UNIX) {
        uv_pipe_t *p = malloc(sizeof(*p));

        if (p == NULL || uv_pipe_init(l->ctl->loop, p, 0) != 0) {
            free(p);
            return NULL;
        }
        s = (uv_stream_t *)p;
    } else {
        uv_tcp_t *t = malloc(sizeof(*t));

        if (t == NULL || uv_tcp_init(l->ctl->loop, t) != 0) {
            free(t);
            return NULL;
        }
        uv_tcp_nodelay(t, 1);
        s = (uv_stream_t *)t;
    }
    /* Where auth.c keeps a TLS session once the preface is in (auth.h). */
    s->data = NULL;
    return s;
}

/* A Unix tenant's process, user and group, as the kernel vouches for them at connect. */
static int record_peer(struct ds_shm_slot *s, int fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    s->peer_pid = 0;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0)
        return -1;
    s->peer_pid = cred.pid;
    s->peer_uid = cred.uid;
    s->peer_gid = cred.gid;
    return 0;
}

/* The name of a TCP tenant's peer, for the log. */
static void peer_name(uv_stream_t *client, char *buf, size_t len)
{
    struct sockaddr_storage sa;
    int n = sizeof(sa);
    char host[64] = "?";

    if (uv_tcp_getpeername((uv_tcp_t *)client, (struct sockaddr *)&sa, &n) == 0)
        uv_ip_name((struct sockaddr *)&sa, host, sizeof(host));
    snprintf(buf, len, "%s", host);
}

/* Refusals logged per second at most: a flood of connections must not flood the log. */
#define REFUSED_LOG_PER_S 10

/* Whether this refusal gets its own log line; when a second with too many is over,
 * one line tells how many were not logged. */
static int log_refusal(struct control *c)
{
    uint64_t now = ds_now_ns();

    if (now - c->refused_window_ns >= 1000000000ull) {
        if (c->refused_quiet > 0)
            ds_warn("refused %u more connection(s) in that second without logging each",
                    c->refused_quiet);
        c->refused_window_ns = now;
        c->refused_logged = 0;
        c->refused_quiet = 0;
    }
    if (c->refused_logged < REFUSED_LOG_PER_S) {
        c->refused_logged++;
        return 1;
    }
    c->refused_quiet++;
    return 0;
}

/* A connection the server will not serve: a log line, the reason to the tenant (its
 * client prints it), a count for metrics, and nothing else spent on it. */
static void refuse(struct listener *l, uv_stream_t *client, enum ds_refusal reason,
                   const char *why)
{
    char where[300], peer[64] = "";

    l->ctl->refused[reason]++;
    if (log_refusal(l->ctl)) {
        ds_addr_format(&l->addr, where, sizeof(where));
        if (l->addr.kind != DS_ADDR_UNIX)
            peer_name(client, peer, sizeof(peer));
        ds_warn("refusing a tenant on %s%s%s: %s", where, peer[0] ? " from " : "", peer, why);
    }
    ds_auth_answer(client, why);
}

/* "its own", "the shared" or "group G's", for the log line of a connection. */
static const char *domain_words(struct control *c, const struct ds_shm_slot *s, char *buf,
                                size_t len)
{
    uint32_t iso = atomic_load(&s->isolation);

    if (iso == DS_ISO_GROUP)
        snprintf(buf, len, "group %s's", ds_shm_domain_of(c->shm, s)->group);
    else
        snprintf(buf, len, "%s", iso == DS_ISO_OWN ? "its own" : "the shared");
    return buf;
}

void ds__intake_assign(struct listener *l, const struct ds_spawned *e, int warm, uv_os_fd_t fd,
                        const char *name, int vouched)
{
    struct ds_shm_slot *s = &l->ctl->shm->slots[e->slot];
    char where[300], who[64] = "", dom[DS_GROUP_MAX + 16];

    ds_addr_format(&l->addr, where, sizeof(where));
    s->id = ++l->ctl->next_id;
    if (record_peer(s, fd) == 0)
        snprintf(who, sizeof(who), ", from process %d of uid %u", (int)s->peer_pid,
                 (unsigned)s->peer_uid);
    snprintf(s->granted, sizeof(s->granted), "%s", name);
    s->named = vouched == DS_AUTH_NAMED;
    ds_info("tenant %llu (%s) connected on %s (executor pid %d, %s, %s domain)%s%s%s",
            (unsigned long long)s->id, name, where, (int)e->pid,
            warm ? "started ahead" : "started for it",
            domain_words(l->ctl, s, dom, sizeof(dom)), who,
            vouched ? ", token accepted for " : "", vouched ? name : "");
    ds__place_joined(l->ctl, e->slot);
}

/* The fault domain of tenant `name`, and its group (*group, for DS_ISO_GROUP): where
 * executors are MPS clients, its quarantine, its quota rule or the server's --isolation
 * decides (domain.h); where none is (the sim models MPS; --mps off), every tenant has its
 * own context anyway. */
static uint32_t domain_for(struct control *c, const char *name, unsigned *group)
{
    const struct ds_shm_quota *rule = ds_quota_match(c->rules, c->nrules, name);
    uint32_t d = ds__domain_of(&c->domains, rule, name, ds_now_ns());
    const char *g = d == DS_ISO_GROUP ? ds__domain_group(&c->domains, rule) : "";

    *group = 0;
    if (c->cfg->device != DS_SHM_SIM && atomic_load(&c->shm->mps_expected) == DS_SHM_MPS_NONE) {
        if (d == DS_ISO_GROUP)
            ds_info("tenant %s: group:%s runs as a domain of its own under --mps off (every "
                    "tenant's context is its own)", name, g);
        return DS_ISO_OWN;
    }
    if (c->cfg->device != DS_SHM_SIM && d != DS_ISO_SHARED && c->cfg->own_mps_pipe[0] == '\0') {
        ds_warn("tenant %s: a domain of its own or a group's needs --mps start (the daemon "
                "of --mps external serves every executor): it shares the MPS domain", name);
        return DS_ISO_SHARED;
    }
    if (d == DS_ISO_GROUP && (*group = ds__group_index(c, g)) == 0) {
        ds_warn("tenant %s: the server runs %d groups already, which last while it runs: "
                "group:%s runs as a domain of its own", name, DS_SHM_GROUPS, g);
        return DS_ISO_OWN;
    }
    return d;
}

void ds__intake_serve(struct listener *l, uv_stream_t *client, const char *name, int vouched,
                      uint32_t isolation, unsigned group)
{
    struct control *c = l->ctl;
    struct ds_spawned e;
    uv_os_fd_t fd;
    int warm, kept;

    if (c->stopping) {
        refuse(l, client, DS_REFUSED_SHUTDOWN, "the server is shutting down");
        uv_close((uv_handle_t *)client, free_handle);
        return;
    }
    if (uv_fileno((uv_handle_t *)client, &fd) != 0) {
        uv_close((uv_handle_t *)client, free_handle);
        return;
    }
    /* Kept until the executor says it took the connection (handover.h). */
    if ((kept = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        refuse(l, client, DS_REFUSED_CAPACITY, "the server has no descriptor left for it");
        uv_close((uv_handle_t *)client, free_handle);
        return;
    }
    if (ds__control_take(c, isolation, group, &e, &warm) != 0) {
        refuse(l, client, DS_REFUSED_CAPACITY,
               errno == EBUSY ? "all tenant slots are in use" : strerror(errno));
        close(kept);
        ds__control_refill(c);
        uv_close((uv_handle_t *)client, free_handle);
        return;
    }
    ds__intake_assign(l, &e, warm, fd, name, vouched);
    /* Before the handover: the tenant sends nothing more until it has this answer. */
    if (ds_auth_answer(client, NULL) != 0)
        ds_debug("tenant %llu left before its preface was answered",
                 (unsigned long long)c->shm->slots[e.slot].id);
    c->served++;
    ds__handover_start(l, &e, client, kept, name, vouched);
    ds__control_refill(c);
    uv_close((uv_handle_t *)client, free_handle);
}

/* Hand an accepted connection to an executor of its domain; `name` is the tenant name
 * its preface gave, `vouched` whether a token was checked for it.  A tenant of a group
 * whose MPS daemon is not up yet waits for it (group.h).  Closes client. */
static void serve(struct listener *l, uv_stream_t *client, const char *name, int vouched)
{
    unsigned group;
    uint32_t isolation = domain_for(l->ctl, name, &group);

    if (isolation == DS_ISO_GROUP && ds__group_wait(l->ctl, group, l, client, name, vouched))
        return;
    if (isolation != DS_ISO_OWN &&
        ds__recovery_wait(l->ctl, isolation == DS_ISO_GROUP ? group : 0, l, client, name,
                          vouched, isolation))
        return;
    ds__intake_serve(l, client, name, vouched, isolation, group);
}

/* ds_auth_done: a tenant's preface was read, or it never came. */
static void authed(void *ctx, uv_stream_t *client, const char *name, int vouched,
                   const char *why)
{
    struct listener *l = ctx;

    if (why == NULL && l->ctl->stopping)
        why = "the server is shutting down";
    if (why != NULL) {
        refuse(l, client,
               l->ctl->stopping           ? DS_REFUSED_SHUTDOWN
               : l->addr.kind == DS_ADDR_UNIX ? DS_REFUSED_PREFACE
                                              : DS_REFUSED_TOKEN,
               why);
        uv_close((uv_handle_t *)client, free_handle);
        return;
    }
    serve(l, client, name, vouched);
}

/* ds_auth_attached: a data connection for tenant id, handed to its executor, which
 * checks the secret; the preface is answered first, since the tenant sends nothing
 * more until then. */
static void attached(void *ctx, uv_stream_t *client, unsigned long long id,
                     const unsigned char *secret)
{
    struct listener *l = ctx;
    const char *why = NULL;
    int ctl = ds__handover_attach_ctl(l->ctl, id);
    uv_os_fd_t fd;

    if (l->addr.kind == DS_ADDR_UNIX)
        why = "a Unix socket's tenant has no data connections";
    else if (l->ctl->stopping)
        why = "the server is shutting down";
    else if (ctl < 0)
        why = "no such tenant takes data connections";
    else if (uv_fileno((uv_handle_t *)client, &fd) != 0)
        why = "the connection is gone";
    /* The executor's word on the secret comes after this answer. */
    if (why == NULL && ds_auth_answer(client, NULL) == 0 && ds_spawn_attach(ctl, fd, secret) != 0)
        ds_debug("tenant %llu's executor is leaving: its data connection is closed", id);
    if (why != NULL) {
        refuse(l, client, DS_REFUSED_TOKEN, why);
        ds_debug("a data connection for tenant %llu refused: %s", id, why);
    }
    uv_close((uv_handle_t *)client, free_handle);
}

/* Who connected, for the per-peer bound on prefaces awaited: a Unix peer's uid (the
 * kernel vouches for it), a TCP peer's address. */
static void peer_key(struct listener *l, uv_stream_t *client, char *buf, size_t len)
{
    struct ucred cred;
    socklen_t n = sizeof(cred);
    uv_os_fd_t fd;
    char host[48];

    if (l->addr.kind != DS_ADDR_UNIX) {
        peer_name(client, host, sizeof(host));
        snprintf(buf, len, "tcp:%s", host);
    } else if (uv_fileno((uv_handle_t *)client, &fd) == 0 &&
               getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) == 0) {
        snprintf(buf, len, "uid:%u", (unsigned)cred.uid);
    } else {
        snprintf(buf, len, "unix:?");
    }
}

static void on_connection(uv_stream_t *server, int status)
{
    struct listener *l = server->data;
    struct control *c = l->ctl;
    char where[300], peer[DS_AUTH_PEER_MAX];
    uv_stream_t *client;
    int rc;

    ds_addr_format(&l->addr, where, sizeof(where));
    if (status < 0 || (client = new_client(l)) == NULL) {
        ds_warn("accept on %s failed: %s", where, status < 0 ? uv_strerror(status) : "no memory");
        return;
    }
    if (uv_accept(server, client) != 0) {
        uv_close((uv_handle_t *)client, free_handle);
        return;
    }
    /* Every tenant shows a preface first (its name, and over TCP its token): its fault
     * domain is chosen from the name, and a connection that never sends one costs no
     * executor. */
    peer_key(l, client, peer, sizeof(peer));
    rc = ds_auth_start(&c->authing, client, peer,
                       l->addr.kind != DS_ADDR_UNIX ? DS_AUTH_TOKEN_IF_ANY
                       : c->cfg->unix_token         ? DS_AUTH_TOKEN_ALWAYS
                                                    : DS_AUTH_NO_TOKEN,
                       l->addr.kind != DS_ADDR_UNIX, authed, l);
    if (rc != 0) {
        refuse(l, client, DS_REFUSED_CAPACITY,
               rc == UV_EBUSY    ? "too many connections are presenting prefaces"
               : rc == UV_EAGAIN ? "too many connections from this peer are presenting prefaces"
                                 : uv_strerror(rc));
        uv_close((uv_handle_t *)client, free_handle);
    }
}

/* A socket file left by a server that died is removed; one still answering is not. */
static int clear_stale_socket(const struct ds_addr *a)
{
    struct stat st;
    int fd;

    if (stat(a->path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        ds_error("%s exists and is not a socket", a->path);
        return -1;
    }
    fd = ds_addr_connect(a);
    if (fd >= 0) {
        close(fd);
        ds_error("another server is already listening on unix:%s", a->path);
        return -1;
    }
    unlink(a->path);
    return 0;
}

/* A failure already logged: positive, where libuv's errors are negative (UV_EPERM is
 * -1, which a -1 here hid). */
#define LOGGED 1

static int bind_unix(struct control *c, struct listener *l)
{
    int rc;

    if (clear_stale_socket(&l->addr) != 0)
        return LOGGED;
    rc = uv_pipe_init(c->loop, &l->h.pipe, 0);
    if (rc == 0)
        rc = uv_pipe_bind(&l->h.pipe, l->addr.path);
    return rc;
}

static int bind_tcp(struct control *c, struct listener *l)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
    int rc;

    if (getaddrinfo(l->addr.host, l->addr.port, &hints, &res) != 0)
        return UV_EADDRNOTAVAIL;
    rc = uv_tcp_init(c->loop, &l->h.tcp);
    if (rc == 0)
        rc = uv_tcp_bind(&l->h.tcp, res->ai_addr, 0);
    freeaddrinfo(res);
    return rc;
}

static int open_listener(struct control *c, const struct ds_addr *a)
{
    struct listener *l = &c->ls[c->nls];
    char where[300];
    int rc, bound;

    memset(l, 0, sizeof(*l));
    l->addr = *a;
    l->ctl = c;
    ds_addr_format(a, where, sizeof(where));
    rc = a->kind == DS_ADDR_UNIX ? bind_unix(c, l) : bind_tcp(c, l);
    bound = rc == 0;
    if (rc == 0) {
        l->h.handle.data = l;
        rc = uv_listen(&l->h.stream, 128, on_connection);
    }
    if (rc != 0) {
        if (rc != LOGGED)
            ds_error("cannot listen on %s: %s", where, uv_strerror(rc));
        if (l->h.handle.loop != NULL)
            uv_close(&l->h.handle, NULL);
        /* Bound but not listening: the socket file would look like a server's. */
        if (bound && a->kind == DS_ADDR_UNIX)
            unlink(a->path);
        return -1;
    }
    c->nls++;
    ds_info("listening on %s", where);
    return 0;
}

int ds__intake_open(struct control *c)
{
    c->authing.attached = attached;
    for (int i = 0; i < c->cfg->nlisten; i++)
        if (open_listener(c, &c->cfg->listen[i]) != 0)
            return -1;
    return 0;
}

void ds__intake_close(struct control *c)
{
    for (int i = 0; i < c->nls; i++) {
        uv_close(&c->ls[i].h.handle, NULL);
        if (c->ls[i].addr.kind == DS_ADDR_UNIX)
            unlink(c->ls[i].addr.path);
    }
    c->nls = 0;
}
