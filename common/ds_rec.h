/*
 * An XDR record stream over a connected socket: ONC RPC record marking (RFC 5531,
 * section 11), read and written as TI-RPC's xdrrec does, with one difference that
 * matters for copies over TCP: bulk bytes do not pass through the stream's buffer.
 * An opaque of DS_REC_DIRECT bytes or more is written from where the encoder found it,
 * as a fragment of its own beside the buffered bytes (one writev), and read straight
 * into where the decoder puts it once the buffer holds none of it.  xdrrec copies every
 * byte through a small buffer on both sides, a quarter of the time of a large copy.
 *
 * The functions mirror xdrrec's (xdrrec_create, _endofrecord, _skiprecord, _eof) and
 * mean the same; fragments of any size from any sender are accepted.  One XDR may be
 * used in both directions (set x_op), not from two threads at once.
 */
#ifndef DS_REC_H
#define DS_REC_H

#include <rpc/rpc.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Opaques at least this long go to and from the socket in place. */
#define DS_REC_DIRECT (64u * 1024)

/* Read at most len bytes into buf: returns how many (> 0), or -1 at end of stream or on
 * error. */
typedef ssize_t (*ds_rec_read_fn)(void *h, void *buf, size_t len);
/* Write all of iov[0..n): returns 0, or -1 on error. */
typedef int (*ds_rec_writev_fn)(void *h, const struct iovec *iov, int n);

/* Bytes that crossed the stream, by the way they went. */
struct ds_rec_stats {
    unsigned long long in_direct, in_buffered;   /* read into place / through the buffer */
    unsigned long long out_direct, out_buffered; /* written from place / from the buffer */
};

/* Set x up as a record stream with buffers of sendsz and recvsz bytes (at least 64
 * each) over handle h.  Returns 0, or DS_ENOMEM (x is then unusable and needs no
 * XDR_DESTROY).  XDR_DESTROY frees it. */
int ds_rec_create(XDR *x, size_t sendsz, size_t recvsz, void *h, ds_rec_read_fn rd,
                  ds_rec_writev_fn wr);

/* End the record being encoded; write everything buffered now, or only once the
 * buffer is full when !now.  FALSE when a write failed. */
bool_t ds_rec_endofrecord(XDR *x, bool_t now);

/* Skip the rest of the record being decoded, so that the next read starts a record.
 * FALSE when a read failed. */
bool_t ds_rec_skiprecord(XDR *x);

/* Skip the rest of the record being decoded; TRUE when no byte of another is buffered
 * (or a read failed). */
bool_t ds_rec_eof(XDR *x);

/* Have bytes buffered: 1 when some already are or the reader gave some, 0 when it gave
 * none (at end of stream, on error, or when it does not wait and none had come). */
int ds_rec_fill(XDR *x);

/* The counts so far. */
void ds_rec_stats(XDR *x, struct ds_rec_stats *out);

/* Asked before a record being decoded takes n more bytes past its budget: returns 0 to
 * let them in, anything else to refuse them. */
typedef int (*ds_rec_grant_fn)(void *h, size_t n);

/*
 * Bound what a record may make its decoder hold: each record may take free_bytes, then
 * grant(h, n) is asked for more (n at least a MiB, to ask seldom) before they are read.
 * A refusal fails the read, which fails the decoder; ds_rec_refused then says why, and the
 * record's unread rest is dropped unread into memory when the next one starts.  What
 * was granted is the caller's to give back: ds_rec_granted says how much.  Bytes read
 * in place from the stream's own buffer (x_inline) take nothing.
 */
void ds_rec_budget(XDR *x, size_t free_bytes, ds_rec_grant_fn grant, void *h);

/* Bytes of the record being decoded taken so far. */
size_t ds_rec_taken(XDR *x);

/* Bytes granted to the record being decoded so far. */
size_t ds_rec_granted(XDR *x);

/* 1 when a grant was refused in the record being decoded. */
int ds_rec_refused(XDR *x);

#endif
