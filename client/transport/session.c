#define _GNU_SOURCE
#include "session.h"

#include "arena.h"
#include "ds_arena.h"
#include "ds_devout.h"
#include "ds_error.h"
#include "ds_log.h"
#include "ds_tls.h"
#include "route.h"
#include "tls.h"
#include "token.h"
#include "vaspace.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long a reply is awaited without sleeping when the context's flags ask for
 * CU_CTX_SCHED_AUTO (DETSHARE_SPIN_US overrides). */
#define DS_SPIN_US 200u

/* The user besides root and the tenant's own whose server it accepts:
 * DETSHARE_SERVER_UID, a number or a user name.  Returns 0 with *uid set, 1 when the
 * variable is not set, -1 (logged) when it names nobody. */
static int extra_server_uid(uid_t *uid)
{
    const char *v = getenv("DETSHARE_SERVER_UID");
    struct passwd pw, *found = NULL;
    char buf[1024], *end;
    unsigned long n;

    if (v == NULL || v[0] == '\0')
        return 1;
    n = strtoul(v, &end, 10);
    if (v[0] >= '0' && v[0] <= '9' && *end == '\0' && n < UINT32_MAX) {
        *uid = (uid_t)n;
        return 0;
    }
    if (getpwnam_r(v, &pw, buf, sizeof(buf), &found) == 0 && found != NULL) {
        *uid = found->pw_uid;
        return 0;
    }
    ds_error("DETSHARE_SERVER_UID=%s is neither a uid nor a user name", v);
    return -1;
}

/* Whether the server listening at a Unix socket is one the tenant means: run by root, by
 * the tenant's own user or by DETSHARE_SERVER_UID.  Checked before anything is sent,
 * since a local tenant hands its server its memory, stdout and stderr: another user
 * who bound the socket's name first must get nothing. */
static int server_trusted(struct ds_session *s, int fd)
{
    uid_t peer, extra = 0, me = getuid();
    int has_extra;

    if (ds_addr_peer_uid(fd, &peer) != 0) {
        ds_error("cannot tell who runs detshare-server at %s: %s; not connecting", s->where,
                 strerror(errno));
        return 0;
    }
    has_extra = extra_server_uid(&extra);
    if (has_extra < 0)
        return 0;
    if (peer == 0 || peer == me || (has_extra == 0 && peer == extra))
        return 1;
    ds_error("detshare-server at %s runs as uid %u, neither root nor you (uid %u): not "
             "connecting (DETSHARE_SERVER_UID=%u trusts that user)",
             s->where, (unsigned)peer, (unsigned)me, (unsigned)peer);
    return 0;
}

static void tenant_identity(char *name, size_t len, ds_class *klass)
{
    const char *n = getenv("DETSHARE_TENANT");
    const char *k = getenv("DETSHARE_CLASS");

    if (n != NULL && n[0] != '\0')
        snprintf(name, len, "%s", n);
    else
        snprintf(name, len, "%s.%d", program_invocation_short_name, (int)getpid());
    *klass = (k != NULL && strcmp(k, "latency") == 0) ? DS_CLASS_LATENCY : DS_CLASS_BEST_EFFORT;
}

/* DETSHARE_RING=0 keeps a local tenant's calls on the socket (to compare the two). */
static int ring_wanted(void)
{
    const char *v = getenv("DETSHARE_RING");

    return v == NULL || strcmp(v, "0") != 0;
}

static unsigned spin_from_env(void)
{
    const char *v = getenv("DETSHARE_SPIN_US");
    char *end;
    unsigned long us;

    if (v == NULL || v[0] == '\0')
        return DS_SPIN_US;
    us = strtoul(v, &end, 10);
    if (*end != '\0' || us > 10u * 1000 * 1000) {
        ds_warn("DETSHARE_SPIN_US=%s is not a number of microseconds up to 10 s; using %u",
                v, DS_SPIN_US);
        return DS_SPIN_US;
    }
    return (unsigned)us;
}

struct hello_wait {
    struct ds_session *s;
    uint32_t xid;
};

/* Where the handshake's reply goes: it is the only call awaiting one. */
static void *hello_reply(void *want, uint32_t xid, xdrproc_t *xres, void **res)
{
    struct hello_wait *w = want;

    if (xid != w->xid)
        return NULL;
    *xres = (xdrproc_t)xdr_ds_hello_res;
    *res = &w->s->hello;
    return &w->s->hello;
}

static CUresult handshake(struct ds_session *s)
{
    char name[DS_NAME_MAX + 1];
    ds_hello_args a = { .proto_version = DS_PROTO_VERSION, .tenant = name };
    struct hello_wait w = { .s = s };
    void *owner;
    int err;

    tenant_identity(name, sizeof(name), &a.klass);
    a.arena_base = ds__arena_base();
    memset(&s->hello, 0, sizeof(s->hello));
    w.xid = ds__wire_xid(s->wire);
    err = ds__wire_post(s->wire, w.xid, DS_HELLO, (xdrproc_t)xdr_ds_hello_args, &a);
    /* The primary context's handle is decoded with this device's tag. */
    ds__route_decoding(s->dev);
    if (err == 0)
        err = ds__wire_read_reply(s->wire, hello_reply, &w, &owner);
    if (err != 0) {
        ds_error("no answer from detshare-server at %s: %s", s->where,
                 err == DS_EIO ? strerror(errno ? errno : EPIPE) : ds_strerror(err));
        return CUDA_ERROR_NO_DEVICE;
    }
    if (s->hello.err != CUDA_SUCCESS) {
        ds_error("detshare-server at %s refused the handshake (error %d): is it the same "
                 "version as this library (protocol %d)?",
                 s->where, s->hello.err, DS_PROTO_VERSION);
        return CUDA_ERROR_NO_DEVICE;
    }
    ds_debug("connected to %s as %s (%s device %s)", s->where, name,
             s->hello.ds_hello_res_u.ok.backend, s->hello.ds_hello_res_u.ok.dev.name);
    ds__vaspace_reserve(s->hello.ds_hello_res_u.ok.reserved.reserved_val,
                        s->hello.ds_hello_res_u.ok.reserved.reserved_len);
    return CUDA_SUCCESS;
}

/* Show the preface, through TLS when the tenant asks for it over TCP: then the token
 * crosses the network only encrypted, and *keys (and *tls set) protect the rest of the
 * stream.  Returns CUDA_SUCCESS or CUDA_ERROR_NO_DEVICE (said why). */
static CUresult introduce(struct ds_session *s, int fd, const struct ds_addr *a,
                          struct ds_tls_keys *keys, int *tls)
{
    char name[DS_NAME_MAX + 1];
    struct ds_tls *session = NULL;
    struct ds_tls_pipe guard;
    ds_class klass;
    CUresult rc;

    tenant_identity(name, sizeof(name), &klass);
    *tls = a->kind == DS_ADDR_TCP && ds__tls_wanted();
    if (!*tls)
        return ds__token_present(fd, NULL, s->where, name);
    ds__tls_pipe_begin(&guard);
    rc = ds__tls_start(fd, a, s->where, &session);
    if (rc == CUDA_SUCCESS)
        rc = ds__token_present(fd, session, s->where, name);
    if (rc == CUDA_SUCCESS && ds_tls_keys(session, keys) != 0) {
        ds_error("cannot derive the TLS stream's keys for %s", s->where);
        rc = CUDA_ERROR_NO_DEVICE;
    }
    ds_tls_free(session);
    ds__tls_pipe_end(&guard);
    return rc;
}

/* The local tenant's descriptors: its host arena, stdout and stderr.  Every server of
 * the tenant maps the one arena, made for the first, so that page-locked memory is
 * every device's. */
static void hand_over_local(int fd)
{
    int arena = ds__arena_fd() >= 0 ? fcntl(ds__arena_fd(), F_DUPFD_CLOEXEC, 0)
                                    : ds__arena_create();

    if (arena >= 0) {
        if (ds_arena_send(fd, arena) != 0)
            ds_debug("could not hand the host arena over: mapped memory unavailable");
        close(arena);
    }
    if (ds_devout_send(fd) != 0)
        ds_debug("could not hand stdout and stderr over: device output goes to the server");
}

/* Close a session that has no flusher yet. */
static void disconnect(struct ds_session *s)
{
    xdr_free((xdrproc_t)xdr_ds_hello_res, (char *)&s->hello);
    ds__wire_close(s->wire);
    s->wire = NULL;
}

static CUresult connect_once(struct ds_session *s, const struct ds_addr *a, unsigned spin_us)
{
    struct ds_tls_keys keys;
    int fd, tls, err = 0;
    CUresult rc;

    ds_addr_format(a, s->where, sizeof(s->where));
    fd = ds_addr_connect(a);
    if (fd < 0) {
        ds_error("cannot reach detshare-server at %s: %s", s->where, strerror(errno));
        return CUDA_ERROR_NO_DEVICE;
    }
    if (a->kind == DS_ADDR_UNIX && !server_trusted(s, fd)) {
        close(fd);
        return CUDA_ERROR_NO_DEVICE;
    }
    if (introduce(s, fd, a, &keys, &tls) != CUDA_SUCCESS) {
        close(fd);
        return CUDA_ERROR_NO_DEVICE;
    }
    if (a->kind == DS_ADDR_UNIX)
        hand_over_local(fd);
    atomic_store(&s->wait_spin_us, spin_us);
    s->wire = ds__wire_open(fd, spin_us);
    if (s->wire == NULL || (tls && (err = ds__wire_tls(s->wire, &keys)) != 0)) {
        explicit_bzero(&keys, sizeof(keys));
        if (s->wire == NULL)
            close(fd);
        ds__wire_close(s->wire);
        s->wire = NULL;
        /* The TLS step fails for other reasons than memory (its record layer's set-up). */
        ds_error("cannot set up RPC to %s: %s", s->where,
                 err != 0 ? ds_strerror(err) : "out of memory");
        return CUDA_ERROR_NO_DEVICE;
    }
    explicit_bzero(&keys, sizeof(keys));
    if (tls)
        ds_debug("TLS to %s: the kernel protects %s", s->where,
                 (const char *[]){ "neither direction", "what is received", "what is sent",
                                   "both directions" }[ds__wire_tls_kernel(s->wire)]);
    if (a->kind == DS_ADDR_UNIX && ring_wanted() && ds__wire_offer_ring(s->wire) != 0)
        ds_debug("could not hand a call ring over: calls go over the socket");
    s->addr = *a;
    s->tls = tls;
    rc = handshake(s);
    if (rc != CUDA_SUCCESS)
        disconnect(s);
    return rc;
}

/* Two executors' device addresses may coincide, and a device address names no server:
 * the client tells them apart by its record of which device allocated what, which a
 * range both servers reserve makes ambiguous once both hand out the same address.
 * Said once, at debug level for one server. */
static void warn_overlap(const struct ds_session *sess, int a, int b)
{
    const ds_hello_ok *x = &sess[a].hello.ds_hello_res_u.ok, *y = &sess[b].hello.ds_hello_res_u.ok;

    for (u_int i = 0; i < x->reserved.reserved_len; i++) {
        const ds_va_range *r = &x->reserved.reserved_val[i];

        for (u_int j = 0; j < y->reserved.reserved_len; j++) {
            const ds_va_range *q = &y->reserved.reserved_val[j];

            if (r->base < q->base + q->size && q->base < r->base + r->size) {
                ds_debug("devices %d (%s) and %d (%s) reserve overlapping device address "
                         "space; their allocations are told apart by which device made them",
                         a, sess[a].where, b, sess[b].where);
                return;
            }
        }
    }
}

CUresult ds__session_open_all(struct ds_session sess[DS_ROUTE_MAX], int *n, unsigned *spin_us)
{
    struct ds_addr addrs[DS_ROUTE_MAX];

    if (ds__route_servers(addrs, n) != 0)
        return CUDA_ERROR_NO_DEVICE;
    *spin_us = spin_from_env();
    if (*n == 0) {
        ds_error("CUDA_VISIBLE_DEVICES=%s leaves no device", getenv("CUDA_VISIBLE_DEVICES"));
        return CUDA_ERROR_NO_DEVICE;
    }
    for (int i = 0; i < *n; i++) {
        if (connect_once(&sess[i], &addrs[i], *spin_us) != CUDA_SUCCESS) {
            while (i-- > 0)
                disconnect(&sess[i]);
            return CUDA_ERROR_NO_DEVICE;
        }
        for (int j = 0; j < i; j++)
            warn_overlap(sess, j, i);
    }
    return CUDA_SUCCESS;
}
