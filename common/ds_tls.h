/*
 * TLS 1.3 for TCP tenants, through the system's OpenSSL (libssl.so.3), which is opened
 * with dlopen the first time TLS is asked for: the client library lives inside someone
 * else's process, and a tenant that does not ask for TLS gets no OpenSSL in it.
 *
 * OpenSSL does the handshake (the server's certificate, checked by the tenant) and
 * carries the preface (ds_preface.h) and its answer.  The connection then goes on to an
 * executor, a process other than the one that shook hands, and OpenSSL's session cannot
 * follow it there; so both ends derive the keys of the rest of the stream from the
 * session (RFC 8446's exporter, ds_tls_keys) and protect it with TLS 1.3's record
 * format (ds_tlsrec.h), in the kernel where it offers kernel TLS.
 *
 * Sessions are used by one thread at a time.
 */
#ifndef DS_TLS_H
#define DS_TLS_H

#include <stddef.h>

#define DS_TLS_KEY 16 /* AES-128-GCM */
#define DS_TLS_IV 12

/* The keys of the stream after the preface: [0] protects what the tenant sends, [1]
 * what the server sends.  Each direction's records are numbered from 0. */
struct ds_tls_keys {
    unsigned char key[2][DS_TLS_KEY];
    unsigned char iv[2][DS_TLS_IV];
};

struct ds_tls_ctx;
struct ds_tls;
struct ds_tls_aead;

/* Open libssl once.  Returns 0, or DS_ENOTSUP with why (terminated) saying what is
 * missing. */
int ds_tls_load(char *why, size_t len);

/* A tenant's context: the server's certificate must chain to the CAs in ca_file, or
 * to the system's when ca_file is NULL.  A server's: its certificate chain and key
 * (PEM files).  NULL with why on failure.  ds_tls_ctx_free takes NULL. */
struct ds_tls_ctx *ds_tls_client_ctx(const char *ca_file, char *why, size_t len);
struct ds_tls_ctx *ds_tls_server_ctx(const char *cert, const char *key, char *why, size_t len);
void ds_tls_ctx_free(struct ds_tls_ctx *c);

/* Tenant side: shake hands over connected socket fd (blocking), checking that the
 * certificate names host (a DNS name or an IP address).  NULL with why on failure. */
struct ds_tls *ds_tls_connect(struct ds_tls_ctx *c, int fd, const char *host, char *why,
                              size_t len);

/* Server side: a session whose bytes the caller carries: ds_tls_feed gives it what the
 * peer sent, ds_tls_outgoing takes what is to be sent to the peer.  NULL when out of
 * memory. */
struct ds_tls *ds_tls_accept(struct ds_tls_ctx *c);
int ds_tls_feed(struct ds_tls *t, const void *in, size_t n);
size_t ds_tls_outgoing(struct ds_tls *t, void *buf, size_t len);

/* Server side: go on with the handshake.  Returns 1 once done, 0 while it needs more
 * bytes, DS_EPROTO (why says why) when it failed. */
int ds_tls_handshake(struct ds_tls *t, char *why, size_t len);

/* Application bytes: ds_tls_read returns how many were read (> 0), 0 when none has
 * come yet (a server session), or DS_EIO; ds_tls_write returns 0 or DS_EIO. */
int ds_tls_read(struct ds_tls *t, void *buf, size_t len);
int ds_tls_write(struct ds_tls *t, const void *buf, size_t len);

/* The keys of the stream after the preface, the same on both ends.  Returns 0 or
 * DS_EIO. */
int ds_tls_keys(struct ds_tls *t, struct ds_tls_keys *k);

/* Forget the session without a word to the peer (the stream goes on). */
void ds_tls_free(struct ds_tls *t);

/* AES-128-GCM for the record layer: seal n bytes gathered from parts into out (n bytes
 * and the 16-byte tag after them), open in (n bytes, the tag after them) into out.  Both
 * return 0, or DS_EIO (a forged or damaged record, for open).  ds_tls_aead_new opens
 * libssl when it is not yet (NULL when it cannot, or out of memory). */
struct ds_tls_aead *ds_tls_aead_new(const unsigned char key[DS_TLS_KEY]);
void ds_tls_aead_free(struct ds_tls_aead *a);
struct ds_tls_part {
    const void *p;
    size_t n;
};
int ds_tls_seal(struct ds_tls_aead *a, const unsigned char nonce[DS_TLS_IV],
                const unsigned char *aad, size_t aad_len, const struct ds_tls_part *parts,
                int nparts, unsigned char *out);
int ds_tls_open(struct ds_tls_aead *a, const unsigned char nonce[DS_TLS_IV],
                const unsigned char *aad, size_t aad_len, const unsigned char *in, size_t n,
                unsigned char *out);

#endif
