#define _GNU_SOURCE
#include "wire.h"

#include "ds_clock.h"
#include "ds_error.h"
#include "ds_fdpass.h"
#include "ds_procs.h"
#include "ds_rec.h"
#include "ds_ring.h"
#include "ds_sock.h"
#include "ds_tlsrec.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Record-stream buffers; bulk bytes bypass them (common/ds_rec.h). */
#define DS_WIREBUF (256 * 1024)
/* The buffer of the direction a stream never uses. */
#define UNUSED_BUF 64
/* Bytes of ring first offered to a call's encoder. */
#define SMALL_CALL (64u * 1024)

struct ds_wire {
    XDR tx; /* calls */
    XDR rx; /* replies */
    int fd;
    atomic_uint spin_us; /* set by any thread, read by the reader */
    uint32_t xid;
    _Atomic uint64_t queued_since; /* also read, without the sender's lock, by the flusher */
    /* The last queued call's record is left open: the stream can only send its buffer
     * by ending a record, and ending an empty one would put an empty record on the wire. */
    int open;
    struct ds_ring ring; /* ring.hdr is NULL without one */
    struct ds_tlsrec *tls; /* the stream's protection, for a TLS tenant */
};

/* recv(2) on the socket, or on its protected stream. */
static ssize_t take_in(struct ds_wire *w, void *buf, size_t len, int flags)
{
    return w->tls != NULL ? ds_tlsrec_recv(w->tls, buf, len, flags) : recv(w->fd, buf, len, flags);
}

/* The record stream's reader: poll without sleeping for spin_us, then sleep in poll().
 * Returns the bytes read, or -1 at end of stream or on error. */
static ssize_t read_fd(void *h, void *buf, size_t len)
{
    struct ds_wire *w = h;
    uint64_t until = 0;
    int spinning = 1;

    for (;;) {
        ssize_t n = take_in(w, buf, len, spinning ? MSG_DONTWAIT : 0);

        if (n > 0)
            return n;
        if (n == 0) {
            errno = ECONNRESET; /* for the log line: errno would be a spin's EAGAIN */
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        /* The clock starts at the first empty read: most reads find data at once. */
        if (until == 0)
            until = ds_now_ns() +
                    (uint64_t)atomic_load_explicit(&w->spin_us, memory_order_relaxed) * 1000u;
        if (spinning && ds_now_ns() >= until) {
            struct pollfd p = { .fd = w->fd, .events = POLLIN };

            spinning = 0;
            if (poll(&p, 1, -1) < 0 && errno != EINTR)
                return -1;
        }
    }
}

/* The record stream's writer. */
static int write_fd(void *h, const struct iovec *iov, int n)
{
    struct ds_wire *w = h;

    return w->tls != NULL ? ds_tlsrec_sendv(w->tls, iov, n) : ds_sendv_all(w->fd, iov, n);
}

struct ds_wire *ds__wire_open(int fd, unsigned spin_us)
{
    struct ds_wire *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return NULL;
    w->fd = fd;
    atomic_init(&w->spin_us, spin_us);
    w->ring.bell = -1;
    if (ds_rec_create(&w->tx, DS_WIREBUF, UNUSED_BUF, w, read_fd, write_fd) != 0) {
        free(w);
        return NULL;
    }
    if (ds_rec_create(&w->rx, UNUSED_BUF, DS_WIREBUF, w, read_fd, write_fd) != 0) {
        XDR_DESTROY(&w->tx);
        free(w);
        return NULL;
    }
    w->tx.x_op = XDR_ENCODE;
    w->rx.x_op = XDR_DECODE;
    return w;
}

void ds__wire_close(struct ds_wire *w)
{
    if (w == NULL)
        return;
    XDR_DESTROY(&w->tx);
    XDR_DESTROY(&w->rx);
    ds_ring_close(&w->ring);
    ds_tlsrec_close(w->tls);
    close(w->fd);
    free(w);
}

int ds__wire_tls(struct ds_wire *w, const struct ds_tls_keys *k)
{
    return ds_tlsrec_open(w->fd, k, 0, &w->tls);
}

int ds__wire_tls_kernel(struct ds_wire *w)
{
    return w->tls != NULL ? ds_tlsrec_kernel(w->tls) : 0;
}

void ds__wire_set_spin(struct ds_wire *w, unsigned spin_us)
{
    atomic_store_explicit(&w->spin_us, spin_us, memory_order_relaxed);
}

void ds__wire_shutdown(struct ds_wire *w)
{
    int e = errno;

    shutdown(w->fd, SHUT_RDWR);
    errno = e;
}

uint32_t ds__wire_xid(struct ds_wire *w)
{
    return ++w->xid;
}

/* Encode one call message (header, no credentials, arguments). */
static bool_t encode_call(XDR *xdrs, uint32_t xid, unsigned long proc, xdrproc_t xarg,
                          void *arg)
{
    struct rpc_msg m = { .rm_xid = xid, .rm_direction = CALL };

    m.rm_call.cb_rpcvers = RPC_MSG_VERSION;
    m.rm_call.cb_prog = DS_PROG;
    m.rm_call.cb_vers = DS_V1;
    m.rm_call.cb_proc = (rpcproc_t)proc;
    m.rm_call.cb_cred = _null_auth;
    m.rm_call.cb_verf = _null_auth;
    return xdr_callmsg(xdrs, &m) && xarg(xdrs, arg);
}

/* Encode a call into the socket's send buffer, after ending the record left open. */
static int encode(struct ds_wire *w, uint32_t xid, unsigned long proc, xdrproc_t xarg,
                  void *arg)
{
    if (w->open && !ds_rec_endofrecord(&w->tx, FALSE))
        return DS_EIO;
    w->open = 1;
    return encode_call(&w->tx, xid, proc, xarg, arg) ? 0 : DS_EIO;
}

/* End the open record and send the buffer. */
static int send_now(struct ds_wire *w)
{
    w->open = 0;
    atomic_store_explicit(&w->queued_since, 0, memory_order_relaxed);
    return ds_rec_endofrecord(&w->tx, TRUE) ? 0 : DS_EIO;
}

int ds__wire_offer_ring(struct ds_wire *w)
{
    int memfd;

    if (ds_ring_create(&w->ring, DS_RING_SIZE, &memfd) != 0)
        return DS_EIO;
    if (ds_fd_send(w->fd, DS_RING_MARKER, memfd) != 0 ||
        ds_fd_send(w->fd, DS_BELL_MARKER, w->ring.bell) != 0) {
        close(memfd);
        ds_ring_close(&w->ring);
        return DS_EIO;
    }
    close(memfd);
    return 0;
}

/* The ring is full: the executor is working through it (it sleeps only on an empty
 * one).  Watch the socket meanwhile, so that an executor that died is noticed. */
static int wait_for_room(struct ds_wire *w)
{
    struct pollfd p = { .fd = w->fd, .events = 0 };
    struct timespec t = { 0, 20 * 1000 };

    sched_yield();
    if (ppoll(&p, 1, &t, NULL) < 0 && errno != EINTR)
        return DS_EIO;
    return (p.revents & (POLLHUP | POLLERR)) ? DS_EIO : 0;
}

/* Encode a call into the `room` bytes at p; returns its length, or 0 when it does not
 * fit. */
static size_t encode_into(unsigned char *p, size_t room, uint32_t xid, unsigned long proc,
                          xdrproc_t xarg, void *arg)
{
    XDR x;
    size_t len;

    xdrmem_create(&x, (char *)p, (u_int)room, XDR_ENCODE);
    len = encode_call(&x, xid, proc, xarg, arg) ? xdr_getpos(&x) : 0;
    XDR_DESTROY(&x);
    return len;
}

/* Put a call into the ring.  Returns 0, 1 when it does not fit even into an empty ring,
 * or DS_EIO.  The encoder is first given a small window: nearly every call fits in it,
 * and a sanitizer build checks the whole window on every call. */
static int ring_put(struct ds_wire *w, uint32_t xid, unsigned long proc, xdrproc_t xarg,
                    void *arg)
{
    for (;;) {
        size_t avail, len = 0;
        unsigned char *p = ds_ring_space(&w->ring, &avail);

        if (avail > 0)
            len = encode_into(p, avail < SMALL_CALL ? avail : SMALL_CALL, xid, proc, xarg, arg);
        if (len == 0 && avail > SMALL_CALL)
            len = encode_into(p, avail, xid, proc, xarg, arg);
        if (len > 0)
            return ds_ring_publish(&w->ring, len);
        if (ds_ring_drained(&w->ring))
            return 1;
        if (wait_for_room(w) != 0)
            return DS_EIO;
    }
}

/* Send a call over the socket now, with whatever was queued before it. */
static int socket_send(struct ds_wire *w, uint32_t xid, unsigned long proc, xdrproc_t xarg,
                       void *arg)
{
    return encode(w, xid, proc, xarg, arg) == 0 && send_now(w) == 0 ? 0 : DS_EIO;
}

/* DS_NULL's arguments. */
static bool_t nothing(XDR *xdrs, void *p)
{
    (void)xdrs;
    (void)p;
    return TRUE;
}

int ds__wire_send_large(struct ds_wire *w, unsigned long proc, xdrproc_t xarg, void *arg,
                        uint32_t null_xid)
{
    if (socket_send(w, ++w->xid, proc, xarg, arg) != 0 ||
        socket_send(w, null_xid, DS_NULL, (xdrproc_t)nothing, NULL) != 0)
        return DS_EIO;
    return 0;
}

/* Bytes the send stream has written in place so far. */
static unsigned long long sent_in_place(struct ds_wire *w)
{
    struct ds_rec_stats st;

    ds_rec_stats(&w->tx, &st);
    return st.out_direct;
}

int ds__wire_queue(struct ds_wire *w, unsigned long proc, xdrproc_t xarg, void *arg)
{
    unsigned long long direct;

    if (w->ring.hdr != NULL)
        return ring_put(w, ++w->xid, proc, xarg, arg);
    direct = sent_in_place(w);
    if (encode(w, ++w->xid, proc, xarg, arg) != 0)
        return DS_EIO;
    /* A call whose bulk bytes have left is sent whole now: the executor, which has its
     * bytes, would otherwise wait for the record's end. */
    if (sent_in_place(w) != direct)
        return send_now(w);
    if (atomic_load_explicit(&w->queued_since, memory_order_relaxed) == 0)
        atomic_store_explicit(&w->queued_since, ds_now_ns(), memory_order_relaxed);
    return 0;
}

int ds__wire_flush(struct ds_wire *w)
{
    return w->open ? send_now(w) : 0;
}

uint64_t ds__wire_queued_since(struct ds_wire *w)
{
    return atomic_load_explicit(&w->queued_since, memory_order_relaxed);
}

int ds__wire_post(struct ds_wire *w, uint32_t xid, unsigned long proc, xdrproc_t xarg,
                  void *arg)
{
    if (w->ring.hdr != NULL) {
        int rc = ring_put(w, xid, proc, xarg, arg);

        if (rc <= 0)
            return rc;
    }
    return socket_send(w, xid, proc, xarg, arg);
}

/* A reply being read: its header, then where its results go, asked of the caller's
 * find once the header has given the xid. */
struct reply {
    struct rpc_msg m;
    ds_wire_find_fn find;
    void *arg;
    int asked;
    void *owner;
    xdrproc_t xres;
    void *res;
};

/* xdr_replymsg's decoder of the results of a successful reply, which it calls with the
 * header (and so the xid) already decoded. */
static bool_t results(XDR *xdrs, void *p)
{
    struct reply *r = p;

    r->asked = 1;
    r->owner = r->find(r->arg, r->m.rm_xid, &r->xres, &r->res);
    return r->owner != NULL && r->xres(xdrs, r->res);
}

int ds__wire_read_reply(struct ds_wire *w, ds_wire_find_fn find, void *arg, void **owner)
{
    struct reply r = { .find = find, .arg = arg };
    char verf[MAX_AUTH_BYTES];
    struct rpc_err e;

    /* Given a buffer, xdr_replymsg allocates nothing for the server's verifier, which
     * nothing here would free. */
    r.m.acpted_rply.ar_verf = _null_auth;
    r.m.acpted_rply.ar_verf.oa_base = verf;
    r.m.acpted_rply.ar_results.where = (caddr_t)&r;
    r.m.acpted_rply.ar_results.proc = (xdrproc_t)results;
    if (!ds_rec_skiprecord(&w->rx))
        return DS_EIO;
    if (!xdr_replymsg(&w->rx, &r.m)) {
        if (r.owner != NULL)
            xdr_free(r.xres, r.res);
        return r.asked && r.owner == NULL ? DS_EPROTO : DS_EIO;
    }
    _seterr_reply(&r.m, &e);
    if (e.re_status != RPC_SUCCESS)
        return DS_EPROTO;
    *owner = r.owner;
    return 0;
}
