/*
 * The tenant's connection, as its executor sees it: ONC RPC call records arrive on the
 * socket (record marking) or, from a local tenant, on the call ring in shared memory
 * (common/ds_ring.h); replies always leave on the socket.
 *
 * TI-RPC's service side (svc_fd_create, svc_getreq) could only read the socket, polled
 * it before every read and kept its transports in process-wide tables; this is the
 * little of it an executor needs: decode a call header, hand the caller a stream to
 * decode the arguments from, encode a reply.  The socket's stream is ds_rec's, so
 * that copy chunks go between the socket and their buffers in place.
 *
 * The client keeps the two paths in order: it puts a call on the socket only once the
 * ring is drained, and goes back to the ring only after a reply on the socket.
 */
#ifndef DS_CONN_H
#define DS_CONN_H

#include "ds_rec.h"
#include "ds_ring.h"

#include <rpc/rpc.h>
#include <signal.h>
#include <stdint.h>

struct ds_conn {
    int fd;
    int eof; /* the peer closed the socket */
    XDR sock;
    XDR mem; /* over the ring record being served */
    struct ds_ring ring; /* ring.hdr is NULL without a ring; set up with ds_ring_attach */
    const volatile sig_atomic_t *stop;
    unsigned long long from_ring, from_socket; /* calls taken from each, for the log */
    unsigned long long replies; /* round trips the tenant made, for the log */
    unsigned turns; /* looks at the ring, to look at the socket first now and then */
    int nowait;     /* the socket is being looked at: a read does not wait */
    struct ds_tlsrec *tls; /* a TLS tenant's stream protection, or NULL */
};

struct ds_call {
    unsigned long proc;
    uint32_t xid;
    XDR *args; /* decode the arguments from here */
    int from_ring;
    size_t ring_len; /* from the ring: the record's bytes */
};

/* Serve connected socket fd (taken over); a wait ends early once *stop is set.
 * Returns 0, or DS_ENOMEM (then only ds_conn_close may follow, which closes fd). */
int ds_conn_init(struct ds_conn *c, int fd, const volatile sig_atomic_t *stop);

/* Protect the stream with a TLS tenant's keys (ds_tlsrec.h), before anything is read.
 * Returns 0, DS_ENOMEM or DS_EIO. */
struct ds_tls_keys;
int ds_conn_tls(struct ds_conn *c, const struct ds_tls_keys *k);

/* Take the next call if one has come, without waiting.  `look` counts the caller's
 * looks since its last call: the ring (a load) is looked at every time, the socket (a
 * system call) every 16th time and now and then between ring records, or every time
 * when there is no ring.  Returns 1 with
 * *call set, 0 when no call is there, DS_EIO when the socket failed or the peer closed
 * it (eof is then set), DS_ENOTREADY when *stop was set during a read, DS_EPROTO for a
 * malformed record. */
int ds_conn_poll(struct ds_conn *c, struct ds_call *call, unsigned look);

/* Sleep until a call may have come, wake_fd is readable, a signal arrives, or the
 * clock (ds_now_ns) reaches wake_ns (0: no limit).  Returns 0 or DS_EIO. */
int ds_conn_sleep(struct ds_conn *c, int wake_fd, uint64_t wake_ns);

/* Bound the host memory a socket record may make the executor hold (ds_rec_budget):
 * free_bytes each, then grant(h, n) is asked.  Ring records are bounded by the ring. */
void ds_conn_budget(struct ds_conn *c, size_t free_bytes, ds_rec_grant_fn grant, void *h);

/* Of the call's record, decoded so far: its bytes, and the bytes its budget granted
 * (the caller's to give back; none for a ring record). */
size_t ds_conn_taken(struct ds_conn *c, const struct ds_call *call);
size_t ds_conn_granted(struct ds_conn *c, const struct ds_call *call);

/* 1 when decoding the call's arguments failed because its budget refused them: the call
 * is to be refused, and the rest of its record is dropped unread into memory. */
int ds_conn_refused(struct ds_conn *c, const struct ds_call *call);

/* The call has been served (its arguments are no longer needed). */
void ds_conn_done(struct ds_conn *c, const struct ds_call *call);

/* Send a successful reply carrying res (encoded with xres).  Returns 0 or DS_EIO. */
int ds_conn_reply(struct ds_conn *c, const struct ds_call *call, xdrproc_t xres, void *res);

/* Send an error reply: PROC_UNAVAIL or GARBAGE_ARGS.  Returns 0 or DS_EIO. */
int ds_conn_reply_error(struct ds_conn *c, const struct ds_call *call, enum accept_stat stat);

void ds_conn_close(struct ds_conn *c);

#endif
