#include "admin.h"

#include "admin_fields.h"
#include "detshare.h"
#include "ds_preface.h"
#include "ds_log.h"
#include "ds_slo.h"
#include "policy.h"
#include "quota.h"
#include "tracectl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A request is a small map; anything larger is not one. */
#define DS_ADMIN_MAX_REQUEST (64 * 1024)
/* detshare-ctl writes its request and reads the answer at once, so a connection still
 * open after this long (in all, however it trickles bytes) is stuck or hostile: it would
 * hold a descriptor the control process needs for tenants.  DETSHARE_ADMIN_DEADLINE_MS
 * overrides it (tests use a short one). */
#define DS_ADMIN_DEADLINE_MS 30000
#define DS_ADMIN_DEADLINE_ENV "DETSHARE_ADMIN_DEADLINE_MS"
/* Admin connections open at once, a bound on the descriptors they can take from tenants;
 * an operator's scripts need a few.  More are refused. */
#define DS_ADMIN_MAX_CONNS 16
/* At most one log line per this long about refused or expired connections, so that a
 * flood of them cannot flood the log too; the next line counts those not logged. */
#define DS_ADMIN_QUIET_MS 10000

struct conn {
    uv_pipe_t pipe; /* first: libuv hands back the handle */
    uv_timer_t deadline;
    struct ds_admin *a; /* NULL once the admin socket is closed */
    msgpack_unpacker u;
    size_t got;
    int answered;
    int handles; /* of pipe and deadline, not yet closed */
    struct conn *prev, *next;
};

/* A log line allowed now and then: when next_ms has come, with `missed` since the last. */
struct quiet {
    uint64_t next_ms;
    unsigned missed;
};

struct ds_admin {
    uv_pipe_t listener;
    struct ds_admin_hooks hooks;
    char path[108];
    struct conn conns; /* list head */
    int nconns;        /* open or closing: each holds a descriptor until closed */
    unsigned deadline_ms;
    struct quiet refused, expired;
};

struct reply {
    uv_write_t req;
    msgpack_sbuffer buf;
    struct conn *c;
};

static void free_conn(uv_handle_t *h)
{
    struct conn *c = h->data;

    if (--c->handles > 0)
        return;
    c->prev->next = c->next;
    c->next->prev = c->prev;
    if (c->a != NULL)
        c->a->nconns--;
    msgpack_unpacker_destroy(&c->u);
    free(c);
}

static void close_conn(struct conn *c)
{
    if (uv_is_closing((uv_handle_t *)&c->pipe))
        return;
    uv_close((uv_handle_t *)&c->pipe, free_conn);
    uv_close((uv_handle_t *)&c->deadline, free_conn);
}

/* 1 when a line may be logged now, with in `more` how many were not since the last
 * (text to end it with); else 0, and this one counted. */
static int may_log(uv_loop_t *loop, struct quiet *q, char *more, size_t len)
{
    uint64_t now = uv_now(loop);

    if (now < q->next_ms) {
        q->missed++;
        return 0;
    }
    more[0] = '\0';
    if (q->missed > 0)
        snprintf(more, len, "; %u more since the last such line", q->missed);
    q->missed = 0;
    q->next_ms = now + DS_ADMIN_QUIET_MS;
    return 1;
}

static void pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);

    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

/* The value of `key` in map m, or NULL. */
static const msgpack_object *lookup(const msgpack_object *m, const char *key)
{
    if (m->type != MSGPACK_OBJECT_MAP)
        return NULL;
    for (uint32_t i = 0; i < m->via.map.size; i++) {
        const msgpack_object *k = &m->via.map.ptr[i].key;

        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0)
            return &m->via.map.ptr[i].val;
    }
    return NULL;
}

/* The string value of `key` in map m, or NULL (also when it is not a string). */
static const char *get_str(const msgpack_object *m, const char *key, char *buf, size_t len)
{
    const msgpack_object *v = lookup(m, key);

    if (v == NULL || v->type != MSGPACK_OBJECT_STR || v->via.str.size >= len)
        return NULL;
    memcpy(buf, v->via.str.ptr, v->via.str.size);
    buf[v->via.str.size] = '\0';
    return buf;
}

/* The unsigned value of `key` in map m: 1 when present and an unsigned integer, 0 when
 * absent, -1 when of another type. */
static int get_uint(const msgpack_object *m, const char *key, uint64_t *out)
{
    const msgpack_object *v = lookup(m, key);

    if (v == NULL)
        return 0;
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return -1;
    *out = v->via.u64;
    return 1;
}

static void pack_error(msgpack_packer *pk, const char *why)
{
    msgpack_pack_map(pk, 2);
    pack_str(pk, DS_ADMIN_KEY_OK);
    msgpack_pack_false(pk);
    pack_str(pk, DS_ADMIN_KEY_ERROR);
    pack_str(pk, why);
}

static void pack_policy(struct ds_admin *a, msgpack_packer *pk, const char *name)
{
    char why[PATH_MAX + 256];
    const char *now;

    /* A file is checked and loaded here, where the reason for a refusal can be answered;
     * the switch then finds it by its path. */
    if (name != NULL && strchr(name, '/') != NULL &&
        ds_policy_admit(name, why, sizeof(why)) == NULL) {
        pack_error(pk, why);
        return;
    }
    now = a->hooks.policy(a->hooks.ctx, name);
    if (now == NULL) {
        pack_error(pk, "no such policy");
        return;
    }
    msgpack_pack_map(pk, 2);
    pack_str(pk, DS_ADMIN_KEY_OK);
    msgpack_pack_true(pk);
    pack_str(pk, DS_ADMIN_KEY_POLICY);
    pack_str(pk, now);
}

/* The answer to a change of n tenants, by name: none is an error. */
static void pack_changed(msgpack_packer *pk, int n)
{
    if (n == 0) {
        pack_error(pk, "no such tenant");
        return;
    }
    msgpack_pack_map(pk, 2);
    pack_str(pk, DS_ADMIN_KEY_OK);
    msgpack_pack_true(pk);
    pack_str(pk, DS_ADMIN_KEY_TENANTS);
    msgpack_pack_int(pk, n);
}

/* A tenant request's SLO in us into *us (0: none): "slo_us", or "slo_ms" from clients
 * older than microseconds.  NULL, or why the request is refused. */
static const char *get_slo(const msgpack_object *req, uint64_t *us)
{
    uint64_t ms = 0;
    int has_us = get_uint(req, DS_ADMIN_KEY_SLO_US, us);
    int has_ms = get_uint(req, DS_ADMIN_KEY_SLO_MS, &ms);

    if (has_us != 0 && has_ms != 0)
        return "give the SLO once: \"slo_us\" or \"slo_ms\", not both";
    if (has_us < 0 || *us > DS_SLO_MAX_US)
        return "\"slo_us\" is a number of microseconds up to an hour";
    if (has_ms < 0 || ms > DS_SLO_MAX_US / 1000)
        return "\"slo_ms\" is a number of milliseconds up to an hour";
    if (has_ms > 0)
        *us = ms * 1000;
    return NULL;
}

/* A tenant's class and SLO, by name. */
static void pack_tenant_class(struct ds_admin *a, const msgpack_object *req, msgpack_packer *pk,
                              const char *name)
{
    char klass[16];
    uint64_t slo = 0;
    const char *bad = get_slo(req, &slo);

    if (name == NULL || get_str(req, DS_ADMIN_KEY_CLASS, klass, sizeof(klass)) == NULL ||
        (strcmp(klass, "latency") != 0 && strcmp(klass, "best-effort") != 0)) {
        pack_error(pk, "a tenant request needs a \"name\" and a \"class\": latency or best-effort");
        return;
    }
    if (bad != NULL) {
        pack_error(pk, bad);
        return;
    }
    pack_changed(pk, a->hooks.tenant_class(a->hooks.ctx, name,
                                           strcmp(klass, "latency") == 0 ? DS_CLASS_LATENCY
                                                                         : DS_CLASS_BEST_EFFORT,
                                           (unsigned)slo));
}

/* A limit of a quota request: 1 when `key` is given (nil: no limit, as 0), 0 when it
 * is not, -1 when it is neither nil nor an unsigned integer up to max. */
static int get_limit(const msgpack_object *req, const char *key, uint64_t max, uint64_t *out)
{
    const msgpack_object *v = lookup(req, key);

    *out = 0;
    if (v == NULL)
        return 0;
    if (v->type == MSGPACK_OBJECT_NIL)
        return 1;
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 == 0 || v->via.u64 > max)
        return -1;
    *out = v->via.u64;
    return 1;
}

static void pack_quotas(struct ds_admin *a, msgpack_packer *pk, int tenants)
{
    msgpack_pack_map(pk, tenants >= 0 ? 3 : 2);
    pack_str(pk, DS_ADMIN_KEY_OK);
    msgpack_pack_true(pk);
    pack_str(pk, DS_ADMIN_KEY_QUOTAS);
    a->hooks.pack_quotas(a->hooks.ctx, pk);
    if (tenants >= 0) {
        pack_str(pk, DS_ADMIN_KEY_TENANTS);
        msgpack_pack_int(pk, tenants);
    }
}

/* The quota request's word-valued setting `key` ("class": latency, best-effort,
 * claimed; "isolation": shared, own, group:NAME, default): 1 and q's field set when it
 * names one, 0 when absent, -1 when it is anything else. */
static int get_word(const msgpack_object *req, const char *key, struct ds_shm_quota *q)
{
    char v[DS_GROUP_MAX + 16], kv[sizeof(v) + 16];
    unsigned which;

    if (lookup(req, key) == NULL)
        return 0;
    if (get_str(req, key, v, sizeof(v)) == NULL)
        return -1;
    snprintf(kv, sizeof(kv), "%s=%s", key, v);
    return ds_quota_setting(kv, q, &which) == NULL ? 1 : -1;
}

/* The quota request's "uid": 1 and q's uid set when it gives one (nil: none), 0 when
 * absent, -1 when it is anything else.  Uid 0 is root's, a user like any other. */
static int get_uid(const msgpack_object *req, struct ds_shm_quota *q)
{
    const msgpack_object *v = lookup(req, DS_ADMIN_KEY_UID);

    if (v == NULL)
        return 0;
    if (v->type == MSGPACK_OBJECT_NIL) {
        q->has_uid = 0;
        return 1;
    }
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 >= UINT32_MAX)
        return -1;
    q->uid = (uint32_t)v->via.u64;
    q->has_uid = 1;
    return 1;
}

/* List the quota rules, or change one by name. */
static void pack_quota(struct ds_admin *a, const msgpack_object *req, msgpack_packer *pk,
                       const char *name)
{
    struct ds_shm_quota q = { 0 };
    uint64_t memory, share, ktime;
    int has_memory = get_limit(req, DS_ADMIN_KEY_MEMORY, UINT64_MAX, &memory);
    int has_share = get_limit(req, DS_ADMIN_KEY_SM_SHARE, 100, &share), tenants = 0;
    int has_ktime = get_limit(req, DS_ADMIN_KEY_KERNEL_TIME, 100, &ktime);
    int has_class = get_word(req, DS_ADMIN_KEY_CLASS, &q), has_uid = get_uid(req, &q);
    int has_isolation = get_word(req, DS_ADMIN_KEY_ISOLATION, &q);
    const char *why;

    if (name == NULL) {
        pack_quotas(a, pk, -1);
        return;
    }
    if (!ds_quota_name_ok(name) || has_memory < 0 || has_share < 0 || has_ktime < 0 ||
        has_class < 0 || has_isolation < 0 || has_uid < 0 ||
        has_memory + has_share + has_ktime + has_class + has_isolation + has_uid == 0) {
        pack_error(pk, "a quota request needs a \"name\" (a tenant name, or a prefix ending "
                       "in '*'), and \"memory\" (bytes), \"sm_share\" or \"kernel_time\" "
                       "(1-100), nil for no limit, \"class\" (latency, best-effort, "
                       "claimed), \"isolation\" (shared, own, group:NAME with NAME 1 to 31 "
                       "letters, digits, '-' or '_', default) or \"uid\" (a Unix "
                       "user id, nil for none)");
        return;
    }
    snprintf(q.name, sizeof(q.name), "%s", name);
    q.memory = memory;
    q.sm_share = (uint32_t)share;
    q.kernel_time = (uint32_t)ktime;
    why = a->hooks.set_quota(a->hooks.ctx, &q,
                             (has_memory ? DS_QUOTA_MEMORY : 0u) |
                                 (has_share ? DS_QUOTA_SM_SHARE : 0u) |
                                 (has_ktime ? DS_QUOTA_KERNEL_TIME : 0u) |
                                 (has_class ? DS_QUOTA_CLASS : 0u) |
                                 (has_isolation ? DS_QUOTA_ISOLATION : 0u) |
                                 (has_uid ? DS_QUOTA_UID : 0u),
                             &tenants);
    if (why != NULL)
        pack_error(pk, why);
    else
        pack_quotas(a, pk, tenants);
}

/* A tenant's phase hint, by name. */
static void pack_tenant_phase(struct ds_admin *a, const msgpack_object *req, msgpack_packer *pk,
                              const char *name)
{
    /* In the order of enum ds_sched_phase. */
    static const char *const phases[] = { "auto", "decode", "prefill" };
    char buf[16];
    const char *phase = get_str(req, DS_ADMIN_KEY_PHASE, buf, sizeof(buf));
    int p = 0;

    while (phase != NULL && p < 3 && strcmp(phase, phases[p]) != 0)
        p++;
    if (name == NULL || phase == NULL || p == 3) {
        pack_error(pk, "a tenant's phase is decode, prefill or auto");
        return;
    }
    pack_changed(pk, a->hooks.tenant_phase(a->hooks.ctx, name, p));
}

/* Start a trace of tenants `name`, or stop and fetch it ("stop": true). */
static void pack_trace(struct ds_admin *a, const msgpack_object *req, msgpack_packer *pk,
                       const char *name)
{
    const msgpack_object *stop = lookup(req, DS_ADMIN_KEY_STOP);
    uint64_t seconds = 0;
    int has_seconds = get_uint(req, DS_ADMIN_KEY_SECONDS, &seconds);
    int stopping = stop != NULL && stop->type == MSGPACK_OBJECT_BOOLEAN && stop->via.boolean;

    if (name == NULL || (stop != NULL && stop->type != MSGPACK_OBJECT_BOOLEAN) ||
        (!stopping && (has_seconds != 1 || seconds == 0 || seconds > DS_TRACE_MAX_SECONDS))) {
        pack_error(pk, "a trace request needs a tenant's \"name\", and \"seconds\" (1 to 3600) "
                       "to start or \"stop\": true to end it and fetch it");
        return;
    }
    a->hooks.trace(a->hooks.ctx, name, stopping, (unsigned)seconds, pk);
}

/* Add a token for a tenant-name prefix, or revoke one added so. */
static void pack_token(struct ds_admin *a, const msgpack_object *req, msgpack_packer *pk)
{
    char token[DS_TOKEN_MAX + 1], prefix[DS_NAME_MAX + 1], as[DS_NAME_MAX + 1] = "";
    const msgpack_object *revoke = lookup(req, DS_ADMIN_KEY_REVOKE);
    int revoking = revoke != NULL && revoke->type == MSGPACK_OBJECT_BOOLEAN && revoke->via.boolean;
    int has_prefix = get_str(req, DS_ADMIN_KEY_NAME, prefix, sizeof(prefix)) != NULL;
    const char *why;
    size_t count = 0;

    if (get_str(req, DS_ADMIN_KEY_TOKEN, token, sizeof(token)) == NULL ||
        (revoke != NULL && revoke->type != MSGPACK_OBJECT_BOOLEAN) || revoking == has_prefix ||
        (lookup(req, DS_ADMIN_KEY_AS) != NULL &&
         (revoking || get_str(req, DS_ADMIN_KEY_AS, as, sizeof(as)) == NULL))) {
        pack_error(pk, "a token request needs a \"token\" (a string of at most 255 bytes) "
                       "and either a tenant-name prefix \"name\" (\"\" for any), and "
                       "optionally the name \"as\" its tenants get, to add it, or "
                       "\"revoke\": true");
        return;
    }
    why = a->hooks.token(a->hooks.ctx, token, revoking ? NULL : prefix, as, &count);
    explicit_bzero(token, sizeof(token));
    if (why != NULL) {
        pack_error(pk, why);
        return;
    }
    msgpack_pack_map(pk, 2);
    pack_str(pk, DS_ADMIN_KEY_OK);
    msgpack_pack_true(pk);
    pack_str(pk, DS_ADMIN_KEY_TOKENS);
    msgpack_pack_uint64(pk, count);
}

static void answer(struct ds_admin *a, const msgpack_object *req, msgpack_packer *pk)
{
    /* A policy's name may be a file's path; a tenant's is at most DS_NAME_MAX. */
    char cmd[32], name[PATH_MAX];
    int has_name = get_str(req, DS_ADMIN_KEY_NAME, name, sizeof(name)) != NULL;
    const char *tenant = has_name && strlen(name) <= DS_NAME_MAX ? name : NULL;

    if (get_str(req, DS_ADMIN_KEY_CMD, cmd, sizeof(cmd)) == NULL) {
        pack_error(pk, "a request is a map with a \"cmd\" string");
    } else if (strcmp(cmd, "status") == 0) {
        msgpack_pack_map(pk, 2);
        pack_str(pk, DS_ADMIN_KEY_OK);
        msgpack_pack_true(pk);
        pack_str(pk, DS_ADMIN_KEY_STATUS);
        a->hooks.pack_status(a->hooks.ctx, pk);
    } else if (strcmp(cmd, "policy") == 0 && lookup(req, DS_ADMIN_KEY_NAME) != NULL && !has_name) {
        pack_error(pk, "a policy's \"name\" is a string: a policy's name or a file's path");
    } else if (strcmp(cmd, "policy") == 0) {
        pack_policy(a, pk, has_name ? name : NULL);
    } else if (strcmp(cmd, "tenant") == 0 && lookup(req, DS_ADMIN_KEY_PHASE) != NULL) {
        pack_tenant_phase(a, req, pk, tenant);
    } else if (strcmp(cmd, "tenant") == 0) {
        pack_tenant_class(a, req, pk, tenant);
    } else if (strcmp(cmd, "quota") == 0) {
        pack_quota(a, req, pk, tenant);
    } else if (strcmp(cmd, "trace") == 0) {
        pack_trace(a, req, pk, tenant);
    } else if (strcmp(cmd, "token") == 0) {
        pack_token(a, req, pk);
    } else {
        pack_error(pk, "unknown command");
    }
}

static void on_written(uv_write_t *req, int status)
{
    struct reply *r = (struct reply *)req;

    (void)status;
    msgpack_sbuffer_destroy(&r->buf);
    close_conn(r->c);
    free(r);
}

/* One request per connection: answer it, then close. */
static void reply(struct conn *c, const msgpack_object *req)
{
    struct reply *r = calloc(1, sizeof(*r));
    msgpack_packer pk;
    uv_buf_t b;

    c->answered = 1;
    uv_read_stop((uv_stream_t *)&c->pipe);
    if (r == NULL) {
        close_conn(c);
        return;
    }
    r->c = c;
    msgpack_sbuffer_init(&r->buf);
    msgpack_packer_init(&pk, &r->buf, msgpack_sbuffer_write);
    if (req != NULL)
        answer(c->a, req, &pk);
    else
        pack_error(&pk, "not a msgpack request");
    b = uv_buf_init(r->buf.data, (unsigned)r->buf.size);
    if (uv_write(&r->req, (uv_stream_t *)&c->pipe, &b, 1, on_written) != 0)
        on_written(&r->req, -1);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = (struct conn *)h;

    if (!msgpack_unpacker_reserve_buffer(&c->u, suggested)) {
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    *buf = uv_buf_init(msgpack_unpacker_buffer(&c->u),
                       (unsigned)msgpack_unpacker_buffer_capacity(&c->u));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct conn *c = (struct conn *)s;
    msgpack_unpacked r;
    msgpack_unpack_return rc;

    (void)buf;
    if (n < 0) {
        close_conn(c);
        return;
    }
    if (n == 0 || c->answered)
        return;
    msgpack_unpacker_buffer_consumed(&c->u, (size_t)n);
    c->got += (size_t)n;
    msgpack_unpacked_init(&r);
    rc = msgpack_unpacker_next(&c->u, &r);
    if (rc == MSGPACK_UNPACK_SUCCESS)
        reply(c, &r.data);
    else if (rc == MSGPACK_UNPACK_PARSE_ERROR || c->got > DS_ADMIN_MAX_REQUEST)
        reply(c, NULL);
    msgpack_unpacked_destroy(&r);
}

static void free_handle(uv_handle_t *h)
{
    free(h);
}

/* Accept a connection only to close it (libuv stops listening until one is accepted),
 * telling detshare-ctl why when its socket takes the answer at once. */
static void refuse(struct ds_admin *a, uv_stream_t *server)
{
    uv_pipe_t *p = malloc(sizeof(*p));
    msgpack_sbuffer buf;
    msgpack_packer pk;
    char more[64];
    uv_buf_t b;

    if (may_log(server->loop, &a->refused, more, sizeof(more)))
        ds_warn("refusing an admin connection: %d open already%s", a->nconns, more);
    if (p == NULL)
        return;
    uv_pipe_init(server->loop, p, 0);
    if (uv_accept(server, (uv_stream_t *)p) == 0) {
        msgpack_sbuffer_init(&buf);
        msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
        pack_error(&pk, "too many admin connections open at once; try again");
        b = uv_buf_init(buf.data, (unsigned)buf.size);
        uv_try_write((uv_stream_t *)p, &b, 1);
        msgpack_sbuffer_destroy(&buf);
    }
    uv_close((uv_handle_t *)p, free_handle);
}

static void on_deadline(uv_timer_t *t)
{
    struct conn *c = t->data;
    char more[64];

    if (may_log(t->loop, &c->a->expired, more, sizeof(more)))
        ds_warn("closing an admin connection: not done after %u ms%s", c->a->deadline_ms, more);
    close_conn(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct ds_admin *a = server->data;
    struct conn *c;

    if (status < 0)
        return;
    if (a->nconns >= DS_ADMIN_MAX_CONNS || (c = calloc(1, sizeof(*c))) == NULL) {
        refuse(a, server);
        return;
    }
    if (!msgpack_unpacker_init(&c->u, 4096)) {
        free(c);
        refuse(a, server);
        return;
    }
    c->a = a;
    c->next = a->conns.next;
    c->prev = &a->conns;
    a->conns.next->prev = c;
    a->conns.next = c;
    a->nconns++;
    c->handles = 2;
    uv_pipe_init(server->loop, &c->pipe, 0);
    uv_timer_init(server->loop, &c->deadline);
    c->pipe.data = c->deadline.data = c;
    uv_timer_start(&c->deadline, on_deadline, a->deadline_ms, 0);
    if (uv_accept(server, (uv_stream_t *)&c->pipe) != 0 ||
        uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) != 0)
        close_conn(c);
}

static void free_admin(uv_handle_t *h)
{
    free(h->data);
}

/* Widen the socket to `group`: the group first, so that no moment leaves it open to
 * the group it had.  Returns 0 or a libuv error after logging. */
static int give_to_group(const char *path, gid_t group)
{
    if (chown(path, (uid_t)-1, group) != 0) {
        ds_error("cannot give the admin socket %s to group %u: %s (the server's user must "
                 "be root or a member of that group)", path, (unsigned)group, strerror(errno));
        return uv_translate_sys_error(errno);
    }
    if (chmod(path, 0660) != 0) {
        ds_error("cannot open the admin socket %s to its group: %s", path, strerror(errno));
        return uv_translate_sys_error(errno);
    }
    return 0;
}

/* DS_ADMIN_DEADLINE_MS, or what DETSHARE_ADMIN_DEADLINE_MS says (1 ms to an hour). */
static unsigned deadline_ms(void)
{
    const char *env = getenv(DS_ADMIN_DEADLINE_ENV);
    char *end;
    unsigned long ms;

    if (env == NULL || env[0] == '\0')
        return DS_ADMIN_DEADLINE_MS;
    errno = 0;
    ms = strtoul(env, &end, 10);
    if (errno != 0 || *end != '\0' || env[0] == '-' || ms == 0 || ms > 3600ul * 1000) {
        ds_warn("%s=%s: not a number of milliseconds up to an hour; admin connections get "
                "%d ms", DS_ADMIN_DEADLINE_ENV, env, DS_ADMIN_DEADLINE_MS);
        return DS_ADMIN_DEADLINE_MS;
    }
    return (unsigned)ms;
}

int ds_admin_open(uv_loop_t *loop, const char *path, gid_t group,
                  const struct ds_admin_hooks *hooks, struct ds_admin **out)
{
    struct ds_admin *a = calloc(1, sizeof(*a));
    mode_t old;
    int rc;

    if (a == NULL)
        return UV_ENOMEM;
    a->hooks = *hooks;
    a->conns.next = a->conns.prev = &a->conns;
    a->deadline_ms = deadline_ms();
    snprintf(a->path, sizeof(a->path), "%s", path);
    uv_pipe_init(loop, &a->listener, 0);
    a->listener.data = a;
    unlink(path);
    /* Owner only from the moment it exists: the admin API switches policies. */
    old = umask(0077);
    rc = uv_pipe_bind(&a->listener, path);
    umask(old);
    if (rc == 0 && chmod(path, 0600) != 0)
        rc = UV_EACCES;
    if (rc == 0 && group != (gid_t)-1 && (rc = give_to_group(path, group)) != 0) {
        unlink(path);
        uv_close((uv_handle_t *)&a->listener, free_admin);
        return rc;
    }
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&a->listener, 16, on_connection);
    if (rc != 0) {
        ds_error("cannot open the admin socket %s: %s", path, uv_strerror(rc));
        uv_close((uv_handle_t *)&a->listener, free_admin);
        return rc;
    }
    ds_info("admin socket: unix:%s%s (detshare-ctl --admin unix:%s status); at most %d "
            "connections at once, %u ms each", path,
            group != (gid_t)-1 ? ", open to its group" : "", path, DS_ADMIN_MAX_CONNS,
            a->deadline_ms);
    *out = a;
    return 0;
}

void ds_admin_close(struct ds_admin *a)
{
    while (a->conns.next != &a->conns) {
        struct conn *c = a->conns.next;

        /* free_conn unlinks it later; move it out of the way now. */
        c->prev->next = c->next;
        c->next->prev = c->prev;
        c->next = c->prev = c;
        c->a = NULL;
        close_conn(c);
    }
    unlink(a->path);
    uv_close((uv_handle_t *)&a->listener, free_admin);
}
