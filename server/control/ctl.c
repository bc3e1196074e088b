/* detshare-ctl: the admin API's command-line client (server/admin.h, docs/admin.md). */
#include "admin_client.h"
#include "admin_fields.h"
#include "ctl_trace.h"
#include "ds_addr.h"
#include "ds_slo.h"
#include "quota.h"

#include <errno.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define REPLY_TIMEOUT_MS 5000

static int usage(FILE *f)
{
    fprintf(f,
            "usage: detshare-ctl [--admin unix:PATH] COMMAND\n"
            "Ask a running detshare-server over its admin socket (docs/admin.md).\n\n"
            "  status [--json]              the device, MPS, the policy and every tenant\n"
            "  policy [NAME]                the policy in force, or switch to NAME\n"
            "  quota                        the quotas in force\n"
            "  quota NAME|PREFIX* [memory=SIZE|none] [sm-share=PCT|none]\n"
            "        [kernel-time=PCT|none] [class=latency|best-effort|claimed]\n"
            "        [isolation=shared|own|group:NAME|default] [uid=UID|none]\n"
            "                               set, change (any limit alone) or lift the quota\n"
            "                               of the tenants called NAME (or of user UID),\n"
            "                               now and later\n"
            "  tenant NAME class latency|best-effort [slo MS]\n"
            "                               the class (and latency SLO, in ms to the us:\n"
            "                               4.05, 0.5) of tenants NAME\n"
            "  tenant NAME phase decode|prefill|auto\n"
            "                               a hint of what tenants NAME do, for tpot-first\n"
            "  trace NAME --seconds N       record what tenants NAME run on the device for N\n"
            "                               seconds (1-3600) and print it as a Chrome/Perfetto\n"
            "                               trace (JSON) on stdout\n"
            "  token add PREFIX [as NAME]   mint a token for tenant names beginning with\n"
            "                               PREFIX (\"\" for any) and print it; with\n"
            "                               --unix-token or TCP, tenants show it\n"
            "                               (DETSHARE_TOKEN); with as, they are named NAME\n"
            "  token revoke TOKEN           forget a token added so: tenants showing it are\n"
            "                               refused from now on\n"
            "  -h, --help                   this text\n\n"
            "The admin socket defaults to the tenant socket of DETSHARE_SERVER (its first\n"
            "server, or the server's default one) with .admin added; the service's is\n"
            "/run/detshare/gpuN/detshare.sock.admin.  Exit status: 0, 1 when the server\n"
            "cannot be reached or refuses, 2 for a bad command line.\n");
    return 2;
}

/* Of a list (a tenant's several servers), the first. */
static void default_admin(struct ds_addr *a)
{
    const char *env = getenv("DETSHARE_SERVER");
    char first[512];
    size_t n;

    snprintf(first, sizeof(first), "%.*s", env ? (int)strcspn(env, ",") : 0, env ? env : "");
    if (env == NULL || ds_addr_parse(first, a) != 0 || a->kind != DS_ADDR_UNIX)
        ds_addr_default(a);
    n = strlen(a->path);
    if (n + sizeof(".admin") <= sizeof(a->path))
        memcpy(a->path + n, ".admin", sizeof(".admin"));
}

static void pack_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

/* What the command line asks: {"cmd": cmd} plus whichever of name, class, slo_us and
 * the quota's limits it gave. */
struct request {
    const char *cmd, *name, *klass, *phase, *isolation;
    const char *token; /* token: the one to add or revoke */
    const char *as;    /* token add: the name its tenants get */
    int revoke;
    uint32_t slo_us;
    unsigned long seconds; /* trace: how long; 0 with stop */
    int stop;              /* trace: end it and fetch it */
    unsigned limits; /* DS_QUOTA_* bits: the quota's limits given */
    struct ds_shm_quota quota;
};

/* A limit: nil for none. */
static void pack_limit(msgpack_packer *pk, const char *key, uint64_t v)
{
    pack_str(pk, key);
    if (v != 0)
        msgpack_pack_uint64(pk, v);
    else
        msgpack_pack_nil(pk);
}

static void pack_request(msgpack_packer *pk, const struct request *q)
{
    msgpack_pack_map(pk, 1 + !!q->name + !!q->klass + !!q->isolation + !!q->phase + !!q->slo_us +
                             !!q->seconds + !!q->stop + !!q->token + !!q->revoke + !!q->as +
                             !!(q->limits & DS_QUOTA_MEMORY) + !!(q->limits & DS_QUOTA_SM_SHARE) +
                             !!(q->limits & DS_QUOTA_KERNEL_TIME) + !!(q->limits & DS_QUOTA_UID));
    pack_str(pk, DS_ADMIN_KEY_CMD);
    pack_str(pk, q->cmd);
    if (q->name) {
        pack_str(pk, DS_ADMIN_KEY_NAME);
        pack_str(pk, q->name);
    }
    if (q->klass) {
        pack_str(pk, DS_ADMIN_KEY_CLASS);
        pack_str(pk, q->klass);
    }
    if (q->isolation) {
        pack_str(pk, DS_ADMIN_KEY_ISOLATION);
        pack_str(pk, q->isolation);
    }
    if (q->phase) {
        pack_str(pk, DS_ADMIN_KEY_PHASE);
        pack_str(pk, q->phase);
    }
    if (q->slo_us) {
        pack_str(pk, DS_ADMIN_KEY_SLO_US);
        msgpack_pack_uint32(pk, q->slo_us);
    }
    if (q->seconds) {
        pack_str(pk, DS_ADMIN_KEY_SECONDS);
        msgpack_pack_unsigned_long(pk, q->seconds);
    }
    if (q->stop) {
        pack_str(pk, DS_ADMIN_KEY_STOP);
        msgpack_pack_true(pk);
    }
    if (q->token) {
        pack_str(pk, DS_ADMIN_KEY_TOKEN);
        pack_str(pk, q->token);
    }
    if (q->revoke) {
        pack_str(pk, DS_ADMIN_KEY_REVOKE);
        msgpack_pack_true(pk);
    }
    if (q->as) {
        pack_str(pk, DS_ADMIN_KEY_AS);
        pack_str(pk, q->as);
    }
    if (q->limits & DS_QUOTA_MEMORY)
        pack_limit(pk, DS_ADMIN_KEY_MEMORY, q->quota.memory);
    if (q->limits & DS_QUOTA_SM_SHARE)
        pack_limit(pk, DS_ADMIN_KEY_SM_SHARE, q->quota.sm_share);
    if (q->limits & DS_QUOTA_KERNEL_TIME)
        pack_limit(pk, DS_ADMIN_KEY_KERNEL_TIME, q->quota.kernel_time);
    if (q->limits & DS_QUOTA_UID) {
        pack_str(pk, DS_ADMIN_KEY_UID);
        if (q->quota.has_uid)
            msgpack_pack_unsigned_int(pk, q->quota.uid);
        else
            msgpack_pack_nil(pk);
    }
}

/* Send one request, wait for one reply object.  Returns 0 or -1 after saying why. */
static int ask(const struct ds_addr *admin, const struct request *q, msgpack_unpacker *u,
               msgpack_unpacked *out)
{
    msgpack_sbuffer buf;
    msgpack_packer pk;
    char why[400];
    int rc;

    msgpack_sbuffer_init(&buf);
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    pack_request(&pk, q);
    rc = ds_admin_ask(admin, buf.data, buf.size, REPLY_TIMEOUT_MS, u, out, why, sizeof(why));
    if (rc != 0)
        fprintf(stderr, "detshare-ctl: %s\n", why);
    msgpack_sbuffer_destroy(&buf);
    return rc;
}

static const msgpack_object *get(const msgpack_object *m, const char *key)
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

static int is_true(const msgpack_object *m, const char *key)
{
    const msgpack_object *v = get(m, key);

    return v != NULL && v->type == MSGPACK_OBJECT_BOOLEAN && v->via.boolean;
}

static void json_str(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* msgpack as JSON: the admin API sends maps, arrays, strings, numbers, booleans, nil. */
static void json(const msgpack_object *o)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: printf("null"); break;
    case MSGPACK_OBJECT_BOOLEAN: printf(o->via.boolean ? "true" : "false"); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: printf("%llu", (unsigned long long)o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: printf("%lld", (long long)o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: printf("%.17g", o->via.f64); break;
    case MSGPACK_OBJECT_STR: json_str(o->via.str.ptr, o->via.str.size); break;
    case MSGPACK_OBJECT_ARRAY:
        putchar('[');
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            if (i)
                putchar(',');
            json(&o->via.array.ptr[i]);
        }
        putchar(']');
        break;
    case MSGPACK_OBJECT_MAP:
        putchar('{');
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            if (i)
                putchar(',');
            json(&o->via.map.ptr[i].key);
            putchar(':');
            json(&o->via.map.ptr[i].val);
        }
        putchar('}');
        break;
    default: printf("null"); break;
    }
}

static void text(const msgpack_object *o)
{
    if (o == NULL)
        printf("-");
    else if (o->type == MSGPACK_OBJECT_STR)
        printf("%.*s", (int)o->via.str.size, o->via.str.ptr);
    else
        json(o);
}

static void field(const char *label, const msgpack_object *m, const char *key)
{
    printf("%s", label);
    text(get(m, key));
}

/* Who the tenant is: its process as the kernel named it at connect, or that it came over
 * TCP, where nothing vouches for it. */
static void print_peer(const msgpack_object *t)
{
    const msgpack_object *p = get(t, DS_ADMIN_KEY_PEER);

    if (p == NULL || p->type != MSGPACK_OBJECT_MAP) {
        printf(", over TCP");
        return;
    }
    field(", process ", p, DS_ADMIN_KEY_PID);
    field(" of uid ", p, DS_ADMIN_KEY_UID);
}

/* The predictor's view of its running work and the policy's decision, on a line. */
static void print_running(const msgpack_object *t)
{
    const msgpack_object *k = get(t, DS_ADMIN_KEY_KERNEL_US),
                         *r = get(t, DS_ADMIN_KEY_COMPLETION_RATE);

    field("      ", t, DS_ADMIN_KEY_IN_FLIGHT);
    if (k != NULL && (k->type == MSGPACK_OBJECT_FLOAT64 || k->type == MSGPACK_OBJECT_FLOAT32))
        printf(" in flight, %.1f us a kernel", k->via.f64);
    else
        printf(" in flight, kernel time not known yet");
    if (r != NULL && (r->type == MSGPACK_OBJECT_FLOAT64 || r->type == MSGPACK_OBJECT_FLOAT32))
        printf(", %.0f completed/s", r->via.f64);
    field("; phase ", t, DS_ADMIN_KEY_PHASE);
    field("; decided: groups ", t, DS_ADMIN_KEY_DECIDED_SM_GROUPS);
    field(", gated ", t, DS_ADMIN_KEY_GATED);
    field(" (", t, DS_ADMIN_KEY_GATED_MS);
    field(" ms in all): ", t, DS_ADMIN_KEY_DECISION);
    putchar('\n');
}

/* A tenant's SLO in ms, to the us; a server older than "slo_us" says whole ms. */
static void print_slo(const msgpack_object *t)
{
    const msgpack_object *us = get(t, DS_ADMIN_KEY_SLO_US), *ms = get(t, DS_ADMIN_KEY_SLO_MS);
    char text[16];

    if (us != NULL && us->type == MSGPACK_OBJECT_POSITIVE_INTEGER && us->via.u64 <= UINT32_MAX) {
        ds_slo_format((uint32_t)us->via.u64, text, sizeof(text));
        printf(", SLO %s ms", text);
    } else if (us == NULL && ms != NULL && ms->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        printf(", SLO %llu ms", (unsigned long long)ms->via.u64);
    }
}

static void print_status(const msgpack_object *st)
{
    const msgpack_object *dev = get(st, DS_ADMIN_KEY_DEVICE), *ts = get(st, DS_ADMIN_KEY_TENANTS);

    field("device: ", dev, DS_ADMIN_KEY_BACKEND);
    field(", ", dev, DS_ADMIN_KEY_SMS);
    field(" SMs in ", dev, DS_ADMIN_KEY_SM_GROUPS);
    field(" groups of ", dev, DS_ADMIN_KEY_SM_GROUP_SIZE);
    field("\nmps: ", st, DS_ADMIN_KEY_MPS);
    field("\npolicy: ", st, DS_ADMIN_KEY_POLICY);
    field("\nisolation by default: ", st, DS_ADMIN_KEY_ISOLATION);
    printf("\ntenants: %u\n", ts && ts->type == MSGPACK_OBJECT_ARRAY ? ts->via.array.size : 0);
    for (uint32_t i = 0; ts && ts->type == MSGPACK_OBJECT_ARRAY && i < ts->via.array.size; i++) {
        const msgpack_object *t = &ts->via.array.ptr[i];

        field("  tenant ", t, DS_ADMIN_KEY_ID);
        field(" ", t, DS_ADMIN_KEY_NAME);
        field(" (", t, DS_ADMIN_KEY_CLASS);
        field(", ", t, DS_ADMIN_KEY_ISOLATION);
        printf(" domain");
        if (is_true(t, DS_ADMIN_KEY_QUARANTINED))
            printf(", quarantined");
        if (is_true(t, DS_ADMIN_KEY_PROBATION))
            printf(", on probation");
        print_slo(t);
        field(", executor pid ", t, DS_ADMIN_KEY_PID);
        print_peer(t);
        field("): ", t, DS_ADMIN_KEY_SMS);
        field(" SMs, groups ", t, DS_ADMIN_KEY_SM_GROUPS);
        field(", ", t, DS_ADMIN_KEY_MEMORY_USED);
        printf(" bytes");
        if (get(t, DS_ADMIN_KEY_MEMORY_QUOTA) != NULL &&
            get(t, DS_ADMIN_KEY_MEMORY_QUOTA)->type != MSGPACK_OBJECT_NIL)
            field(" of ", t, DS_ADMIN_KEY_MEMORY_QUOTA);
        field(", ", t, DS_ADMIN_KEY_LAUNCHES);
        field(" launches, ", t, DS_ADMIN_KEY_MIGRATIONS);
        printf(" migrations\n");
        print_running(t);
    }
}

/* "8 GiB" when exact in a binary unit, else bytes. */
static void print_size(uint64_t v)
{
    static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;

    while (u < 4 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    printf("%llu %s", (unsigned long long)v, units[u]);
}

static void print_limit(const char *label, const msgpack_object *v, int size)
{
    printf("%s", label);
    if (v == NULL || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        printf("no limit");
    else if (size)
        print_size(v->via.u64);
    else
        printf("%llu%%", (unsigned long long)v->via.u64);
}

/* A rule bound to a user says so; the others say nothing. */
static void print_uid(const msgpack_object *v)
{
    if (v != NULL && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        printf(", uid %llu", (unsigned long long)v->via.u64);
}

static void print_quotas(const msgpack_object *reply)
{
    const msgpack_object *qs = get(reply, DS_ADMIN_KEY_QUOTAS);
    uint32_t n = qs && qs->type == MSGPACK_OBJECT_ARRAY ? qs->via.array.size : 0;

    printf("quotas: %u", n);
    for (uint32_t i = 0; i < n; i++) {
        field("\n  ", &qs->via.array.ptr[i], DS_ADMIN_KEY_NAME);
        print_limit(": memory ", get(&qs->via.array.ptr[i], DS_ADMIN_KEY_MEMORY), 1);
        print_limit(", sm-share ", get(&qs->via.array.ptr[i], DS_ADMIN_KEY_SM_SHARE), 0);
        print_limit(", kernel-time ", get(&qs->via.array.ptr[i], DS_ADMIN_KEY_KERNEL_TIME), 0);
        field(", class ", &qs->via.array.ptr[i], DS_ADMIN_KEY_CLASS);
        field(", isolation ", &qs->via.array.ptr[i], DS_ADMIN_KEY_ISOLATION);
        print_uid(get(&qs->via.array.ptr[i], DS_ADMIN_KEY_UID));
    }
    if (get(reply, DS_ADMIN_KEY_TENANTS) != NULL)
        field("\ntenants under it now: ", reply, DS_ADMIN_KEY_TENANTS);
}

static int show(const msgpack_object *reply, const char *cmd, int as_json)
{
    const msgpack_object *ok = get(reply, DS_ADMIN_KEY_OK);

    if (ok == NULL || ok->type != MSGPACK_OBJECT_BOOLEAN || !ok->via.boolean) {
        const msgpack_object *why = get(reply, DS_ADMIN_KEY_ERROR);

        if (why != NULL && why->type == MSGPACK_OBJECT_STR)
            fprintf(stderr, "detshare-ctl: %.*s\n", (int)why->via.str.size, why->via.str.ptr);
        else
            fprintf(stderr, "detshare-ctl: the server refused the request\n");
        return 1;
    }
    if (strcmp(cmd, "trace") == 0) {
        const msgpack_object *n = get(reply, DS_ADMIN_KEY_TENANTS), *s = get(reply, DS_ADMIN_KEY_SECONDS);

        /* stdout is the trace's. */
        if (n != NULL && s != NULL && n->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
            s->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            fprintf(stderr, "detshare-ctl: tracing %llu tenant(s) for %llu s\n",
                    (unsigned long long)n->via.u64, (unsigned long long)s->via.u64);
        return 0;
    }
    if (strcmp(cmd, "tenant") == 0)
        field("tenants changed: ", reply, DS_ADMIN_KEY_TENANTS);
    else if (strcmp(cmd, "token") == 0)
        field("tokens added in force: ", reply, DS_ADMIN_KEY_TOKENS);
    else if (strcmp(cmd, "quota") == 0)
        print_quotas(reply);
    else if (strcmp(cmd, "status") != 0)
        field("policy: ", reply, DS_ADMIN_KEY_POLICY);
    else if (as_json)
        json(get(reply, DS_ADMIN_KEY_STATUS));
    else
        print_status(get(reply, DS_ADMIN_KEY_STATUS));
    putchar('\n');
    return 0;
}

/* trace NAME --seconds N, from argv[*i] on. */
static int parse_trace(int argc, char **argv, int *i, struct request *q)
{
    char *end;

    if (*i + 3 > argc || strcmp(argv[*i + 1], "--seconds") != 0)
        return -1;
    q->name = argv[*i];
    q->seconds = strtoul(argv[*i + 2], &end, 10);
    *i += 3;
    return *end != '\0' || argv[*i - 1][0] == '-' || q->seconds == 0 || q->seconds > 3600 ? -1
                                                                                        : 0;
}

/* Sleep ms milliseconds, whatever signals interrupt. */
static void pause_ms(unsigned long ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Start the trace, wait its seconds and the server's settling (tracectl.h), fetch it and
 * write it on stdout as JSON. */
static int trace(const struct ds_addr *admin, struct request *q)
{
    msgpack_unpacker u;
    msgpack_unpacked r;
    int rc = 1;

    if (!msgpack_unpacker_init(&u, 4096))
        return 1;
    msgpack_unpacked_init(&r);
    if (ask(admin, q, &u, &r) == 0 && show(&r.data, q->cmd, 0) == 0) {
        pause_ms(q->seconds * 1000 + 400);
        q->seconds = 0;
        q->stop = 1;
        msgpack_unpacked_destroy(&r);
        msgpack_unpacker_destroy(&u);
        if (!msgpack_unpacker_init(&u, 4096))
            return 1;
        msgpack_unpacked_init(&r);
        if (ask(admin, q, &u, &r) == 0 && show(&r.data, q->cmd, 0) == 0)
            rc = ds_ctl_trace_write(get(&r.data, "trace"), stdout) == 0 ? 0 : 1;
        if (rc != 0)
            fprintf(stderr, "detshare-ctl: the server's trace could not be read\n");
    }
    msgpack_unpacked_destroy(&r);
    msgpack_unpacker_destroy(&u);
    return rc;
}

/* tenant NAME class latency|best-effort [slo MS], or tenant NAME phase P, from argv[*i]
 * on. */
static int parse_tenant(int argc, char **argv, int *i, struct request *q)
{
    if (*i + 3 <= argc && strcmp(argv[*i + 1], "phase") == 0) {
        q->name = argv[*i];
        q->phase = argv[*i + 2];
        *i += 3;
        return 0;
    }
    if (*i + 3 > argc || strcmp(argv[*i + 1], "class") != 0)
        return -1;
    q->name = argv[*i];
    q->klass = argv[*i + 2];
    *i += 3;
    if (*i + 2 <= argc && strcmp(argv[*i], "slo") == 0) {
        if (ds_slo_parse(argv[*i + 1], &q->slo_us) != 0) {
            fprintf(stderr, "detshare-ctl: slo %s: milliseconds, more than 0 and up to an "
                            "hour, with at most three decimals (4.05, 0.5)\n", argv[*i + 1]);
            return -1;
        }
        *i += 2;
    }
    return 0;
}

/* token add PREFIX [as NAME] (a new token into minted, printed once accepted) or token
 * revoke TOKEN, from argv[*i] on. */
static int parse_token(int argc, char **argv, int *i, struct request *q, char *minted,
                       size_t len)
{
    unsigned char raw[24];

    if (*i + 2 > argc)
        return -1;
    if (strcmp(argv[*i], "revoke") == 0) {
        q->token = argv[*i + 1];
        q->revoke = 1;
    } else if (strcmp(argv[*i], "add") == 0) {
        /* 192 random bits, as hex: no guessing, and safe in any file or environment. */
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) || len < 2 * sizeof(raw) + 1)
            return -1;
        for (size_t k = 0; k < sizeof(raw); k++)
            snprintf(minted + 2 * k, 3, "%02x", raw[k]);
        explicit_bzero(raw, sizeof(raw));
        q->token = minted;
        q->name = argv[*i + 1];
        if (*i + 4 <= argc && strcmp(argv[*i + 2], "as") == 0) {
            q->as = argv[*i + 3];
            *i += 2;
        }
    } else {
        return -1;
    }
    *i += 2;
    return 0;
}

/* quota [NAME k=v...], from argv[*i] on. */
static int parse_quota(int argc, char **argv, int *i, struct request *q)
{
    const char *why;
    unsigned which;

    if (*i == argc)
        return 0;
    q->name = argv[(*i)++];
    if (!ds_quota_name_ok(q->name)) {
        fprintf(stderr, "detshare-ctl: %s: a quota is for a tenant name, or a prefix ending in "
                        "'*'\n", q->name);
        return -1;
    }
    for (; *i < argc; (*i)++) {
        if ((why = ds_quota_setting(argv[*i], &q->quota, &which)) != NULL) {
            fprintf(stderr, "detshare-ctl: %s: %s\n", argv[*i], why);
            return -1;
        }
        q->limits |= which;
        if (which == DS_QUOTA_CLASS)
            q->klass = argv[*i] + strlen("class=");
        if (which == DS_QUOTA_ISOLATION)
            q->isolation = argv[*i] + strlen("isolation=");
    }
    return q->limits != 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct ds_addr admin;
    msgpack_unpacker u;
    msgpack_unpacked r;
    struct request q = { 0 };
    char minted[64] = "";
    int i = 1, as_json = 0, rc;

    default_admin(&admin);
    if (argc > 2 && strcmp(argv[1], "--admin") == 0) {
        if (ds_addr_parse(argv[2], &admin) != 0 || admin.kind != DS_ADDR_UNIX)
            return usage(stderr);
        i = 3;
    }
    if (i >= argc)
        return usage(stderr);
    q.cmd = argv[i++];
    if (strcmp(q.cmd, "-h") == 0 || strcmp(q.cmd, "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(q.cmd, "status") == 0 && i < argc && strcmp(argv[i], "--json") == 0)
        as_json = i++ > 0;
    else if (strcmp(q.cmd, "policy") == 0 && i < argc)
        q.name = argv[i++];
    else if (strcmp(q.cmd, "tenant") == 0 && parse_tenant(argc, argv, &i, &q) != 0)
        return usage(stderr);
    else if (strcmp(q.cmd, "quota") == 0 && parse_quota(argc, argv, &i, &q) != 0)
        return usage(stderr);
    else if (strcmp(q.cmd, "trace") == 0 && parse_trace(argc, argv, &i, &q) != 0)
        return usage(stderr);
    else if (strcmp(q.cmd, "token") == 0 &&
             parse_token(argc, argv, &i, &q, minted, sizeof(minted)) != 0)
        return usage(stderr);
    else if (strcmp(q.cmd, "status") != 0 && strcmp(q.cmd, "policy") != 0 &&
             strcmp(q.cmd, "tenant") != 0 && strcmp(q.cmd, "quota") != 0 &&
             strcmp(q.cmd, "trace") != 0 && strcmp(q.cmd, "token") != 0)
        return usage(stderr);
    if (i != argc)
        return usage(stderr);
    if (strcmp(q.cmd, "trace") == 0)
        return trace(&admin, &q);
    if (!msgpack_unpacker_init(&u, 4096))
        return 1;
    msgpack_unpacked_init(&r);
    rc = ask(&admin, &q, &u, &r) == 0 ? show(&r.data, q.cmd, as_json) : 1;
    /* The new token, alone on the last line, for scripts to take. */
    if (rc == 0 && minted[0] != '\0')
        printf("%s\n", minted);
    explicit_bzero(minted, sizeof(minted));
    msgpack_unpacked_destroy(&r);
    msgpack_unpacker_destroy(&u);
    return rc;
}
