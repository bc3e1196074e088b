#define _GNU_SOURCE
#include "ds_tlsrec.h"

#include "ds_error.h"
#include "ds_sock.h"

#include <errno.h>
#include <linux/tls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#ifndef SOL_TLS
#define SOL_TLS 282
#endif

#define HEADER 5
#define TAG 16
#define APPLICATION_DATA 23
/* A record's bytes (TLS 1.3: at most 2^14 of data) and, on the wire, at most 256 more. */
#define MAX_PLAIN 16384u
#define MAX_CIPHER (MAX_PLAIN + 256u)
/* Records made before they are sent at once, and room for records read at once. */
#define TX_RECORDS 16u
#define TX_BUF (TX_RECORDS * (HEADER + MAX_PLAIN + 1 + TAG))
#define RX_BUF (4u * (HEADER + MAX_CIPHER))

/* Hand direction `opt` (TLS_TX, TLS_RX) to the kernel.  Returns 1 when it took it. */
static int kernel_dir(int fd, int opt, const unsigned char *key, const unsigned char *iv)
{
    struct tls12_crypto_info_aes_gcm_128 ci;
    int ok;

    memset(&ci, 0, sizeof(ci));
    ci.info.version = TLS_1_3_VERSION;
    ci.info.cipher_type = TLS_CIPHER_AES_GCM_128;
    memcpy(ci.key, key, sizeof(ci.key));
    memcpy(ci.salt, iv, sizeof(ci.salt));
    memcpy(ci.iv, iv + sizeof(ci.salt), sizeof(ci.iv));
    ok = setsockopt(fd, SOL_TLS, opt, &ci, sizeof(ci)) == 0;
    explicit_bzero(&ci, sizeof(ci));
    return ok;
}

/* Kernel TLS for the directions it takes; none when DETSHARE_KTLS=0 or the kernel has
 * no `tls` module.  Returns the bits of ds_tlsrec_kernel. */
static int try_kernel(int fd, const struct ds_tls_keys *k, int server)
{
    const char *v = getenv("DETSHARE_KTLS");
    int in = server ? 0 : 1, out = 1 - in, bits = 0;

    if ((v != NULL && strcmp(v, "0") == 0) ||
        setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls")) != 0)
        return 0;
    if (kernel_dir(fd, TLS_RX, k->key[in], k->iv[in]))
        bits |= 1;
    if (kernel_dir(fd, TLS_TX, k->key[out], k->iv[out]))
        bits |= 2;
    return bits;
}

static int init_dir(struct ds_tlsrec_dir *d, const unsigned char *key, const unsigned char *iv,
                    size_t bufsz)
{
    memcpy(d->iv, iv, sizeof(d->iv));
    d->aead = ds_tls_aead_new(key);
    d->buf = malloc(bufsz);
    return d->aead != NULL && d->buf != NULL ? 0 : DS_ENOMEM;
}

static void free_dir(struct ds_tlsrec_dir *d)
{
    ds_tls_aead_free(d->aead);
    free(d->buf);
    explicit_bzero(d, sizeof(*d));
}

int ds_tlsrec_init(struct ds_tlsrec *r, int fd, const struct ds_tls_keys *k, int server)
{
    int in = server ? 0 : 1, out = 1 - in, bits, rc = 0;

    memset(r, 0, sizeof(*r));
    r->fd = fd;
    bits = try_kernel(fd, k, server);
    if (!(bits & 1)) {
        rc = init_dir(&r->rx, k->key[in], k->iv[in], RX_BUF);
        if (rc == 0 && (r->plain = malloc(MAX_CIPHER)) == NULL)
            rc = DS_ENOMEM;
    }
    if (rc == 0 && !(bits & 2))
        rc = init_dir(&r->tx, k->key[out], k->iv[out], TX_BUF);
    if (rc != 0)
        ds_tlsrec_free(r);
    return rc;
}

void ds_tlsrec_free(struct ds_tlsrec *r)
{
    if (r->rx.buf != NULL || r->rx.aead != NULL)
        free_dir(&r->rx);
    if (r->tx.buf != NULL || r->tx.aead != NULL)
        free_dir(&r->tx);
    if (r->plain != NULL)
        explicit_bzero(r->plain, MAX_CIPHER);
    free(r->plain);
    r->plain = NULL;
}

int ds_tlsrec_open(int fd, const struct ds_tls_keys *k, int server, struct ds_tlsrec **out)
{
    struct ds_tlsrec *r = calloc(1, sizeof(*r));
    int rc = r != NULL ? ds_tlsrec_init(r, fd, k, server) : DS_ENOMEM;

    if (rc != 0) {
        free(r);
        r = NULL;
    }
    *out = r;
    return rc;
}

void ds_tlsrec_close(struct ds_tlsrec *r)
{
    if (r == NULL)
        return;
    ds_tlsrec_free(r);
    free(r);
}

int ds_tlsrec_kernel(const struct ds_tlsrec *r)
{
    return (r->rx.aead == NULL ? 1 : 0) | (r->tx.aead == NULL ? 2 : 0);
}

/* The nonce of direction d's next record: its IV with the record number in its last
 * eight bytes XORed in (RFC 8446, 5.3). */
static void nonce(const struct ds_tlsrec_dir *d, unsigned char out[DS_TLS_IV])
{
    memcpy(out, d->iv, DS_TLS_IV);
    for (int i = 0; i < 8; i++)
        out[DS_TLS_IV - 1 - i] ^= (unsigned char)(d->seq >> (8 * i));
}

/* Seal the next m bytes of iov (from *at, *off) as one record at out; returns its
 * length on the wire. */
static size_t seal_one(struct ds_tlsrec_dir *d, const struct iovec *iov, int n, int *at,
                       size_t *off, size_t m, unsigned char *out)
{
    static const unsigned char type = APPLICATION_DATA;
    struct ds_tls_part parts[DS_SENDV_MAX + 2];
    unsigned char nc[DS_TLS_IV];
    size_t len = m + 1 + TAG;
    int np = 0;

    while (m > 0 && *at < n) {
        size_t take = iov[*at].iov_len - *off;

        if (take > m)
            take = m;
        if (take > 0)
            parts[np++] = (struct ds_tls_part){ (const char *)iov[*at].iov_base + *off, take };
        m -= take;
        *off += take;
        if (*off == iov[*at].iov_len) {
            (*at)++;
            *off = 0;
        }
    }
    parts[np++] = (struct ds_tls_part){ &type, 1 };
    out[0] = APPLICATION_DATA;
    out[1] = 3;
    out[2] = 3;
    out[3] = (unsigned char)(len >> 8);
    out[4] = (unsigned char)len;
    nonce(d, nc);
    d->seq++;
    if (ds_tls_seal(d->aead, nc, out, HEADER, parts, np, out + HEADER) != 0)
        return 0;
    return HEADER + len;
}

int ds_tlsrec_sendv(struct ds_tlsrec *r, const struct iovec *iov, int n)
{
    size_t left = 0, off = 0;
    int at = 0;

    if (r->tx.aead == NULL)
        return ds_sendv_all(r->fd, iov, n);
    /* A record gathers at most all the pieces and its type byte (seal_one's parts). */
    if (n < 0 || n > DS_SENDV_MAX) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < n; i++)
        left += iov[i].iov_len;
    while (left > 0) {
        size_t have = 0;

        while (left > 0 && have + HEADER + MAX_PLAIN + 1 + TAG <= TX_BUF) {
            size_t m = left < MAX_PLAIN ? left : MAX_PLAIN;
            size_t len = seal_one(&r->tx, iov, n, &at, &off, m, r->tx.buf + have);

            if (len == 0) {
                errno = EIO;
                return -1;
            }
            have += len;
            left -= m;
        }
        if (ds_send_all(r->fd, r->tx.buf, have) != 0)
            return -1;
    }
    return 0;
}

/* Open the record of clen bytes after the header at p into out (room for clen - TAG
 * bytes).  Returns the data's length, or -1 (errno EBADMSG) when it does not open or is
 * not application data. */
static ssize_t open_one(struct ds_tlsrec *r, const unsigned char *p, size_t clen,
                        unsigned char *out)
{
    unsigned char nc[DS_TLS_IV];
    size_t m = clen - TAG;

    nonce(&r->rx, nc);
    r->rx.seq++;
    if (ds_tls_open(r->rx.aead, nc, p, HEADER, p + HEADER, clen, out) != 0) {
        errno = EBADMSG;
        return -1;
    }
    while (m > 0 && out[m - 1] == 0)
        m--;
    if (m == 0 || out[m - 1] != APPLICATION_DATA) {
        errno = EBADMSG;
        return -1;
    }
    return (ssize_t)(m - 1);
}

/* The length of the record starting at buf[start], when its header has come: 0 when
 * not yet, -1 (errno EBADMSG) when it is no record of ours. */
static ssize_t record_len(const struct ds_tlsrec_dir *d, size_t start)
{
    const unsigned char *h = d->buf + start;
    size_t clen;

    if (d->have - start < HEADER)
        return 0;
    clen = (size_t)h[3] << 8 | h[4];
    if (h[0] != APPLICATION_DATA || h[1] != 3 || h[2] != 3 || clen <= TAG || clen > MAX_CIPHER) {
        errno = EBADMSG;
        return -1;
    }
    return (ssize_t)clen;
}

size_t ds_tlsrec_pending(const struct ds_tlsrec *r)
{
    ssize_t clen;

    if (r->plain_len > r->plain_off)
        return r->plain_len - r->plain_off;
    if (r->rx.aead == NULL)
        return 0;
    /* A whole record read and not yet opened counts as one byte: its length is not
     * known until it is opened. */
    clen = record_len(&r->rx, r->rx.start);
    return clen != 0 && r->rx.have - r->rx.start >= HEADER + (size_t)(clen < 0 ? 0 : clen);
}

/* Read more of the stream into rx.buf.  Returns as recv. */
static ssize_t fill(struct ds_tlsrec *r, size_t *start, int flags)
{
    struct ds_tlsrec_dir *d = &r->rx;
    ssize_t n;

    /* Whole records are taken from the front: move what is left of one there before it
     * could run past the end. */
    if (*start > 0 && RX_BUF - *start < HEADER + MAX_CIPHER) {
        memmove(d->buf, d->buf + *start, d->have - *start);
        d->have -= *start;
        *start = 0;
    }
    do
        n = recv(r->fd, d->buf + d->have, RX_BUF - d->have, flags);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        d->have += (size_t)n;
    return n;
}

ssize_t ds_tlsrec_recv(struct ds_tlsrec *r, void *buf, size_t len, int flags)
{
    if (r->rx.aead == NULL) {
        ssize_t n;

        do
            n = recv(r->fd, buf, len, flags);
        while (n < 0 && errno == EINTR);
        return n;
    }
    for (;;) {
        size_t held = r->plain_len - r->plain_off, start = r->rx.start;
        ssize_t clen, n;

        if (held > 0) {
            n = (ssize_t)(held < len ? held : len);
            memcpy(buf, r->plain + r->plain_off, (size_t)n);
            r->plain_off += (size_t)n;
            return n;
        }
        clen = record_len(&r->rx, start);
        if (clen < 0)
            return -1;
        if (clen == 0 || r->rx.have - start < HEADER + (size_t)clen) {
            n = fill(r, &start, flags);
            r->rx.start = start;
            if (n <= 0)
                return n;
            continue;
        }
        /* A record whose bytes all fit where the reader wants them opens there. */
        if (len >= (size_t)clen - TAG) {
            n = open_one(r, r->rx.buf + start, (size_t)clen, buf);
            r->plain_off = r->plain_len = 0;
        } else {
            n = open_one(r, r->rx.buf + start, (size_t)clen, r->plain);
            r->plain_off = 0;
            r->plain_len = n > 0 ? (size_t)n : 0;
        }
        start += HEADER + (size_t)clen;
        if (start == r->rx.have)
            start = r->rx.have = 0;
        r->rx.start = start;
        if (n < 0 || (n > 0 && len >= (size_t)clen - TAG))
            return n;
    }
}
