/*
 * The protected stream of a TLS tenant after its preface: TLS 1.3 records
 * (application data, AES-128-GCM) keyed by ds_tls_keys, so that the executor, which
 * did not shake hands, can carry on the connection.  Where the kernel offers kernel
 * TLS (the `tls` module), it seals and opens the records and the socket reads and
 * writes plain bytes: copies then cost what they cost over cleartext TCP, less the
 * cipher.  Otherwise the records are made here, with libcrypto.  DETSHARE_KTLS=0 keeps
 * them here (to compare the two).
 *
 * Used by one reader and one writer thread at a time (each direction has its own
 * state).
 */
#ifndef DS_TLSREC_H
#define DS_TLSREC_H

#include "ds_tls.h"

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct ds_tlsrec_dir {
    struct ds_tls_aead *aead; /* NULL where the kernel does it */
    unsigned char iv[DS_TLS_IV];
    uint64_t seq;
    unsigned char *buf; /* records being read, or made */
    size_t have;        /* read: bytes of records in buf */
    size_t start;       /* read: where in buf the next record begins */
};

struct ds_tlsrec {
    int fd;
    struct ds_tlsrec_dir rx, tx;
    unsigned char *plain; /* read: a record's bytes not yet taken */
    size_t plain_off, plain_len;
};

/* Protect fd's stream with keys k, as the tenant when server is 0, else as the server.
 * Returns 0, or DS_ENOMEM / DS_EIO (r then needs no ds_tlsrec_free). */
int ds_tlsrec_init(struct ds_tlsrec *r, int fd, const struct ds_tls_keys *k, int server);

void ds_tlsrec_free(struct ds_tlsrec *r);

/* ds_tlsrec_init on a stream of its own, for a connection that holds it by pointer (the
 * tenant's wire, the executor's connection): *out is NULL on failure.  Returns as
 * ds_tlsrec_init.  ds_tlsrec_close frees it whole; NULL is nothing to close. */
int ds_tlsrec_open(int fd, const struct ds_tls_keys *k, int server, struct ds_tlsrec **out);
void ds_tlsrec_close(struct ds_tlsrec *r);

/* As recv(2) with flags 0 or MSG_DONTWAIT: bytes read (> 0), 0 at end of stream, or -1
 * with errno (EAGAIN: nothing yet; EBADMSG: a record that does not open, forged or
 * damaged, after which the stream is unusable). */
ssize_t ds_tlsrec_recv(struct ds_tlsrec *r, void *buf, size_t len, int flags);

/* Send all of iov[0..n), n at most DS_SENDV_MAX (ds_sock.h).  Returns 0, or -1 with
 * errno. */
int ds_tlsrec_sendv(struct ds_tlsrec *r, const struct iovec *iov, int n);

/* Bytes opened and not yet taken, or 1 for a whole record read and not yet opened (or
 * one that will not open): a reader must take them before it sleeps on fd. */
size_t ds_tlsrec_pending(const struct ds_tlsrec *r);

/* Which directions the kernel protects: bit 0 receiving, bit 1 sending. */
int ds_tlsrec_kernel(const struct ds_tlsrec *r);

#endif
