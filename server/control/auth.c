#include "auth.h"

#include "ds_error.h"
#include "ds_preface.h"
#include "ds_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ds_auth {
    struct ds_auth *next, **prev;
    struct ds_auth_list *list;
    uv_timer_t timer;
    uv_stream_t *client;
    ds_auth_done done;
    void *ctx;
    int check_tokens;
    char peer[DS_AUTH_PEER_MAX];
    unsigned char buf[DS_PREFACE_MAX];
    size_t have;
    int mode; /* enum mode */
    struct ds_tls *tls;
    int handshaken;
    size_t tls_bytes; /* read from a TLS connection so far */
    unsigned char in[4096]; /* bytes of a TLS connection, or the first byte of any */
};

/* Bytes a TLS connection may send before its preface is in: a tenant's handshake and
 * preface take a few KiB; more would only pile up in the session's buffers. */
#define TLS_BYTES_MAX (64u * 1024)

/* How a connection's bytes are read: a TCP tenant of a server with TLS shows by its
 * first byte whether it speaks TLS (a handshake record) or not (a preface's marker). */
enum mode { CLEAR, FIRST_BYTE, TLS };

#define TLS_HANDSHAKE_RECORD 0x16

static void free_auth(uv_handle_t *h)
{
    struct ds_auth *a = h->data;

    explicit_bzero(a->buf, sizeof(a->buf));
    free(a);
}

/* Stop waiting; a's memory goes with its timer. */
static void leave(struct ds_auth *a)
{
    uv_read_stop(a->client);
    /* A TLS session goes with the stream, for the answer and the keys. */
    if (a->tls != NULL && !a->handshaken) {
        ds_tls_free(a->tls);
        a->tls = NULL;
    }
    a->client->data = a->tls;
    *a->prev = a->next;
    if (a->next != NULL)
        a->next->prev = a->prev;
    a->list->n--;
    uv_close((uv_handle_t *)&a->timer, free_auth);
}

/* Stop waiting and hand the stream to the callback. */
static void finish(struct ds_auth *a, const char *name, int vouched, const char *why)
{
    leave(a);
    a->done(a->ctx, a->client, name, vouched, why);
}

/* An attach preface: its form is all that is checked here, the secret is the
 * executor's to check.  Over TLS, the stream's keys would have to go with it, which
 * executors do not take for data connections: the tenant copies over its first. */
static void attach(struct ds_auth *a, const struct ds_preface *p)
{
    unsigned char secret[DS_ATTACH_SECRET];
    unsigned long long id = p->tenant_id;

    if (a->list->attached == NULL || a->tls != NULL) {
        finish(a, NULL, 0, a->tls != NULL ? "data connections are not taken over TLS"
                                          : "this listener takes no data connections");
        return;
    }
    memcpy(secret, p->secret, sizeof(secret));
    leave(a);
    a->list->attached(a->ctx, a->client, id, secret);
    explicit_bzero(secret, sizeof(secret));
}

static void on_timeout(uv_timer_t *t)
{
    finish(t->data, NULL, 0, "no preface in time");
}

/* Room for exactly the bytes the preface still needs, never more. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct ds_auth *a = h->data;
    int missing = ds_preface_missing(a->buf, a->have);

    (void)suggested;
    if (a->mode == CLEAR)
        *buf = uv_buf_init((char *)a->buf + a->have, missing > 0 ? (unsigned)missing : 0);
    else
        *buf = uv_buf_init((char *)a->in, a->mode == TLS ? sizeof(a->in) : 1);
}

static void decided(struct ds_auth *a)
{
    const struct ds_auth_list *l = a->list;
    int any = l->tokens != NULL || ds_tokens_count(l->minted) > 0;
    int check = a->check_tokens == DS_AUTH_TOKEN_ALWAYS ||
                (a->check_tokens == DS_AUTH_TOKEN_IF_ANY && any);
    char name[DS_NAME_MAX + 1], as[DS_NAME_MAX + 1] = "";
    struct ds_preface p;
    const char *why = NULL;

    ds_preface_decode(a->buf, &p);
    if (p.attach) {
        attach(a, &p);
        return;
    }
    if (check)
        why = ds_tokens_check(l->tokens, l->minted, &p, as);
    ds_name_clean(name, p.name, p.name_len);
    if (why == NULL && as[0] != '\0')
        finish(a, as, DS_AUTH_NAMED, NULL);
    else
        finish(a, why == NULL ? name : NULL, check ? DS_AUTH_VOUCHED : DS_AUTH_UNCHECKED, why);
}

/* The preface's bytes so far are a->have: decide once they are all in. */
static void took(struct ds_auth *a)
{
    int missing = ds_preface_missing(a->buf, a->have);

    if (missing < 0)
        finish(a, NULL, 0, "not a preface (a client of another detshare version?)");
    else if (missing == 0)
        decided(a);
}

/* Send what the TLS session has for the peer.  A handshake's flight is a few KiB on a
 * connection that has sent nothing yet, so it goes without blocking.  Returns 0 or a
 * libuv error. */
static int tls_flush(uv_stream_t *client, struct ds_tls *t)
{
    char out[4096];
    size_t n;

    while ((n = ds_tls_outgoing(t, out, sizeof(out))) > 0) {
        uv_buf_t b = uv_buf_init(out, (unsigned)n);
        int w = uv_try_write(client, &b, 1);

        if (w != (int)n)
            return w < 0 ? w : UV_EAGAIN;
    }
    return 0;
}

/* n bytes of a TLS connection came: go on with the handshake, then read the preface. */
static void tls_took(struct ds_auth *a, size_t n)
{
    char why[300], msg[340];
    int rc;

    a->tls_bytes += n;
    if (a->tls_bytes > TLS_BYTES_MAX) {
        finish(a, NULL, 0, "it sent more than a TLS handshake and a preface unanswered");
        return;
    }
    if (ds_tls_feed(a->tls, a->in, n) != 0) {
        finish(a, NULL, 0, "the server has no memory for the TLS handshake");
        return;
    }
    if (!a->handshaken) {
        rc = ds_tls_handshake(a->tls, why, sizeof(why));
        if (tls_flush(a->client, a->tls) != 0 && rc >= 0) {
            snprintf(why, sizeof(why), "cannot send the handshake");
            rc = DS_EIO;
        }
        if (rc < 0) {
            snprintf(msg, sizeof(msg), "TLS: %s", why);
            finish(a, NULL, 0, msg);
            return;
        }
        a->handshaken = rc == 1;
    }
    while (a->handshaken) {
        int missing = ds_preface_missing(a->buf, a->have), got;

        if (missing <= 0) {
            took(a);
            return;
        }
        got = ds_tls_read(a->tls, a->buf + a->have, (size_t)missing);
        if (got == 0)
            return;
        if (got < 0) {
            finish(a, NULL, 0, "the TLS connection failed before its preface");
            return;
        }
        a->have += (size_t)got;
    }
}

/* The first byte of a TCP tenant of a server with TLS. */
static void first_byte(struct ds_auth *a)
{
    if (a->in[0] == TLS_HANDSHAKE_RECORD) {
        if ((a->tls = ds_tls_accept(a->list->tls)) == NULL) {
            finish(a, NULL, 0, "the server has no memory for a TLS session");
            return;
        }
        a->mode = TLS;
        tls_took(a, 1);
        return;
    }
    if (a->list->tls_only) {
        finish(a, NULL, 0, "this server takes TCP tenants only over TLS (the tenant sets "
                           "DETSHARE_TLS=1, or DETSHARE_TLS_CA to the CA of its certificate)");
        return;
    }
    a->mode = CLEAR;
    a->buf[0] = a->in[0];
    a->have = 1;
    took(a);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct ds_auth *a = s->data;

    (void)buf;
    if (n == 0)
        return;
    if (n < 0) {
        finish(a, NULL, 0, n == UV_EOF ? "the connection closed before its preface"
                                       : "the connection failed before its preface");
        return;
    }
    if (a->mode == FIRST_BYTE) {
        first_byte(a);
    } else if (a->mode == TLS) {
        tls_took(a, (size_t)n);
    } else {
        a->have += (size_t)n;
        took(a);
    }
}

static int waiting_from(const struct ds_auth_list *l, const char *peer)
{
    int n = 0;

    for (const struct ds_auth *a = l->head; a != NULL; a = a->next)
        n += strcmp(a->peer, peer) == 0;
    return n;
}

int ds_auth_start(struct ds_auth_list *l, uv_stream_t *client, const char *peer,
                  int check_tokens, int tcp, ds_auth_done done, void *ctx)
{
    struct ds_auth *a;
    int rc;

    if (l->n >= DS_AUTH_MAX)
        return UV_EBUSY;
    if (waiting_from(l, peer) >= DS_AUTH_PER_PEER)
        return UV_EAGAIN;
    if ((a = calloc(1, sizeof(*a))) == NULL)
        return UV_ENOMEM;
    *a = (struct ds_auth){ .list = l, .client = client, .done = done, .ctx = ctx,
                           .check_tokens = check_tokens,
                           .mode = tcp && l->tls != NULL ? FIRST_BYTE : CLEAR };
    snprintf(a->peer, sizeof(a->peer), "%s", peer);
    client->data = a;
    rc = uv_read_start(client, on_alloc, on_read);
    if (rc != 0) {
        client->data = NULL;
        free(a);
        return rc;
    }
    uv_timer_init(client->loop, &a->timer);
    a->timer.data = a;
    uv_timer_start(&a->timer, on_timeout, DS_AUTH_TIMEOUT_MS, 0);
    a->next = l->head;
    a->prev = &l->head;
    if (l->head != NULL)
        l->head->prev = &a->next;
    l->head = a;
    l->n++;
    return 0;
}

void ds_auth_cancel_all(struct ds_auth_list *l, const char *why)
{
    while (l->head != NULL)
        finish(l->head, NULL, 0, why);
}

int ds_auth_answer(uv_stream_t *client, const char *why)
{
    unsigned char out[2 + DS_PREFACE_REASON_MAX];
    uv_buf_t b = uv_buf_init((char *)out, (unsigned)ds_preface_answer(why, out));
    struct ds_tls *t = client->data;
    int n;

    if (t != NULL)
        return ds_tls_write(t, out, b.len) == 0 ? tls_flush(client, t) : UV_EIO;
    n = uv_try_write(client, &b, 1);
    return n == (int)b.len ? 0 : (n < 0 ? n : UV_EAGAIN);
}

int ds_auth_keys(uv_stream_t *client, struct ds_tls_keys *k)
{
    if (client->data == NULL)
        return 0;
    return ds_tls_keys(client->data, k) == 0 ? 1 : -1;
}

void ds_auth_forget(uv_stream_t *client)
{
    ds_tls_free(client->data);
    client->data = NULL;
}
