/*
 * A tenant's preface (ds_preface.h), read by the control process before the tenant
 * costs an executor or a slot: without blocking the loop, exactly the preface's bytes
 * (whatever follows is the executor's), for at most DS_AUTH_TIMEOUT_MS from the
 * connection (bytes trickled in do not extend it), with at most DS_AUTH_MAX connections
 * waiting at once and DS_AUTH_PER_PEER of them from one peer (a Unix uid, a TCP
 * address), so that one peer holding connections open cannot lock the others out.
 */
#ifndef DS_AUTH_H
#define DS_AUTH_H

#include "tokens.h"

#include <uv.h>

#define DS_AUTH_TIMEOUT_MS 3000
#define DS_AUTH_MAX 64
#define DS_AUTH_PER_PEER 8
#define DS_AUTH_PEER_MAX 64

struct ds_auth;
struct ds_tls_ctx;
struct ds_tls_keys;

/* Called instead of ds_auth_done for an attach preface of the right form (ds_preface.h):
 * the data connection claims to be tenant id's and shows secret (DS_ATTACH_SECRET
 * bytes, valid during the call).  The stream is the callee's, as with ds_auth_done. */
typedef void (*ds_auth_attached)(void *ctx, uv_stream_t *client, unsigned long long id,
                                 const unsigned char *secret);

/* Connections whose preface is awaited; zero-initialised by its owner, who sets tokens
 * and may replace them at any time (SIGHUP), and minted, the tokens the admin API adds
 * and revokes: each preface is checked against the sets in force when it has arrived. */
struct ds_auth_list {
    struct ds_auth *head;
    int n;
    const struct ds_tokens *tokens;
    const struct ds_tokens *minted;
    /* TLS for TCP tenants (NULL: none), and whether they must use it. */
    struct ds_tls_ctx *tls;
    int tls_only;
    /* Where attach prefaces go; NULL refuses them. */
    ds_auth_attached attached;
};

/* What ds_auth_start checks of a preface's token. */
enum ds_auth_tokens {
    DS_AUTH_NO_TOKEN,      /* nothing (a Unix tenant, whose uid the kernel vouches for) */
    DS_AUTH_TOKEN_IF_ANY,  /* a known token, when the server has any (TCP; none: --insecure) */
    DS_AUTH_TOKEN_ALWAYS,  /* a known token, always (--unix-token) */
};

/* What ds_auth_done's `vouched` says of the name. */
enum ds_auth_vouched {
    DS_AUTH_UNCHECKED, /* no token was checked */
    DS_AUTH_VOUCHED,   /* a token was checked for that name */
    DS_AUTH_NAMED,     /* the token named the tenant (ds_tokens_add's `as`): that name */
};

/* Called once per connection given to ds_auth_start.  `why` is NULL when the preface was
 * accepted, `name` then being the tenant's name (the one its preface gave, in
 * ds_name_clean's form, or the one its token gives it) and `vouched` saying which (enum
 * ds_auth_vouched); else `why` is the reason, for the log and the tenant.  The stream is
 * the callee's from then on (not reading), to answer (ds_auth_answer) and close. */
typedef void (*ds_auth_done)(void *ctx, uv_stream_t *client, const char *name, int vouched,
                             const char *why);

/* Read client's preface and check its token as check_tokens (enum ds_auth_tokens) says.  `peer` names
 * who connected (for the per-peer bound).  A TCP tenant (tcp) of a list with TLS shakes
 * hands first when its first byte starts a TLS handshake; without one it is refused
 * under tls_only.  Over TLS, the whole preface is read whatever its records' sizes
 * (the tenant sends nothing after it until the answer), and ds_auth_done's stream keeps
 * the session: ds_auth_answer answers through it, ds_auth_keys gives the keys of the
 * rest of the stream, ds_auth_forget frees it.  client->data is auth.c's: NULL when the
 * stream comes, NULL or that session after.  Returns 0, or a libuv error (the stream is
 * then still the caller's): UV_EBUSY when DS_AUTH_MAX are waiting already, UV_EAGAIN
 * when DS_AUTH_PER_PEER of them are peer's. */
int ds_auth_start(struct ds_auth_list *l, uv_stream_t *client, const char *peer,
                  int check_tokens, int tcp, ds_auth_done done, void *ctx);

/* End every wait in l, each with `why` (the server stops). */
void ds_auth_cancel_all(struct ds_auth_list *l, const char *why);

/* Answer the preface: accepted when why is NULL, else refused for that reason (through
 * the stream's TLS session, when it has one).  A few bytes on a connection that has sent
 * nothing else, so they go without blocking.  Returns 0 or a libuv error. */
int ds_auth_answer(uv_stream_t *client, const char *why);

/* A TLS tenant's stream keys into *k (ds_tls.h): returns 1, 0 for a tenant without TLS,
 * -1 when they cannot be had. */
int ds_auth_keys(uv_stream_t *client, struct ds_tls_keys *k);

/* Free the stream's TLS session, if any; before the stream's memory goes. */
void ds_auth_forget(uv_stream_t *client);

#endif
