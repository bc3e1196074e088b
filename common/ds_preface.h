/*
 * The preface a TCP tenant sends right after connecting, before any RPC: its token and
 * the tenant name the token is to be used for.  The control process reads it and
 * answers before an executor is started or handed the connection (docs/protocol.md,
 * "Connection start"; docs/security.md).  Unix-socket tenants send none: the kernel's
 * peer credentials identify them.
 *
 *   preface: 'T', token length (1 byte), token, name length (1 byte), name
 *   answer:  'Y' (accepted), or 'N', reason length (1 byte), reason (printable text)
 *
 * A TCP tenant's extra data connections (docs/protocol.md, "Data") send an attach
 * preface instead, checked for its form only: the executor of tenant id checks the
 * secret, which only the tenant's first connection was told (ds_hello_ok.attach_secret).
 *
 *   attach:  'A', tenant id (8 bytes, big-endian), secret (DS_ATTACH_SECRET bytes)
 *
 * An RPC record starts with a record mark whose top bit is set, never with 'T' or 'A'.  The
 * tenant sends nothing more until the answer is in, so the control process can read
 * exactly the preface and leave the socket's later bytes to the executor.
 */
#ifndef DS_PREFACE_H
#define DS_PREFACE_H

#include "detshare.h"

#include <stddef.h>

#define DS_PREFACE_MARKER 'T'
#define DS_PREFACE_ATTACH 'A'
#define DS_PREFACE_ATTACH_LEN (1 + 8 + DS_ATTACH_SECRET)
#define DS_PREFACE_ACCEPTED 'Y'
#define DS_PREFACE_REFUSED 'N'
#define DS_TOKEN_MAX 255  /* bytes of a token */
#define DS_PREFACE_MAX (3 + DS_TOKEN_MAX + DS_NAME_MAX)
#define DS_PREFACE_REASON_MAX 255

/* What a complete preface says; pointers into the buffer given to ds_preface_decode.
 * Neither string is terminated. */
struct ds_preface {
    int attach; /* an attach preface: only tenant_id and secret are set */
    unsigned long long tenant_id;
    const unsigned char *secret;
    const unsigned char *token;
    size_t token_len;
    const char *name;
    size_t name_len;
};

/* Tenant side: send the preface for `token` (token_len bytes, 0 for none) and tenant
 * `name` (truncated to DS_NAME_MAX).  Returns 0, DS_EINVAL when the token is
 * longer than DS_TOKEN_MAX, or DS_EIO. */
int ds_preface_send(int sock, const void *token, size_t token_len, const char *name);

/* The same preface into buf (DS_PREFACE_MAX bytes), for a stream that is not a plain
 * socket (TLS): returns its length, or 0 when the token is longer than DS_TOKEN_MAX. */
size_t ds_preface_encode(unsigned char *buf, const void *token, size_t token_len,
                         const char *name);

/* An attach preface for tenant id into buf (DS_PREFACE_ATTACH_LEN bytes). */
void ds_preface_encode_attach(unsigned char *buf, unsigned long long id,
                              const unsigned char *secret);

/* Tenant side: wait for the answer.  Returns 0 when accepted; 1 when refused, with the
 * reason in why (terminated, unprintable bytes replaced); DS_EIO when the connection
 * ended first; DS_EPROTO when the answer is malformed. */
int ds_preface_await(int sock, char *why, size_t len);

/* Read exactly len bytes into buf: 0, or DS_EIO. */
typedef int (*ds_preface_read_fn)(void *h, void *buf, size_t len);

/* ds_preface_await reading through rd(h, ...). */
int ds_preface_await_with(ds_preface_read_fn rd, void *h, char *why, size_t len);

/* Server side: how many more bytes the first `have` bytes of a preface need to be
 * complete: 0 when complete, DS_EPROTO when they cannot start one.  Reading exactly
 * that many at a time never reads past the preface. */
int ds_preface_missing(const unsigned char *buf, size_t have);

/* Server side: decode a complete preface (ds_preface_missing returned 0). */
void ds_preface_decode(const unsigned char *buf, struct ds_preface *p);

/* Server side: the answer to send, in out (at least 2 + DS_PREFACE_REASON_MAX bytes):
 * accepted when why is NULL, else refused for that reason (cut to fit).  Returns its
 * length. */
size_t ds_preface_answer(const char *why, unsigned char *out);

/* Tenant names as the server keeps them: src's first len bytes (up to a NUL, at most
 * DS_NAME_MAX) with every byte that is not printable ASCII or is a space replaced by
 * '_', so that a hostile name cannot forge log lines; "anonymous" when empty.  dst
 * holds DS_NAME_MAX + 1 bytes. */
void ds_name_clean(char *dst, const char *src, size_t len);

#endif
