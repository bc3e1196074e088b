#define _GNU_SOURCE
#include "conn.h"

#include "detshare.h"
#include "devout.h"
#include "ds_clock.h"
#include "ds_error.h"
#include "ds_rec.h"
#include "ds_sock.h"
#include "ds_tlsrec.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Receive and send buffers of the socket's record stream; bulk bytes bypass them. */
#define DS_RECBUF (64 * 1024)
/* While spinning, the socket is polled (a system call) once per this many looks at the
 * ring (a load). */
#define SOCKET_EVERY 16u
/* ...and first once per this many looks at the ring. */
#define RING_RUN 64u

/* The record stream's reader.  Reads block, but for the look that finds whether bytes
 * have come (nowait): the loop below only starts a record once bytes are there, and a
 * tenant that stops halfway through one stalls nobody but itself. */
static ssize_t read_fd(void *h, void *buf, size_t len)
{
    struct ds_conn *c = h;

    for (;;) {
        int flags = c->nowait ? MSG_DONTWAIT : 0;
        ssize_t n = c->tls != NULL ? ds_tlsrec_recv(c->tls, buf, len, flags)
                                   : recv(c->fd, buf, len, flags);

        if (n > 0)
            return n;
        /* A peer that died with our replies unread resets the connection: it left all
         * the same. */
        if (n == 0 || errno == ECONNRESET)
            c->eof = 1;
        if (n == 0 || errno != EINTR || *c->stop)
            return -1;
    }
}

/* The record stream's writer. */
static int write_fd(void *h, const struct iovec *iov, int n)
{
    struct ds_conn *c = h;

    if ((c->tls != NULL ? ds_tlsrec_sendv(c->tls, iov, n) : ds_sendv_all(c->fd, iov, n)) == 0)
        return 0;
    if (errno == EPIPE || errno == ECONNRESET)
        c->eof = 1;
    return -1;
}

int ds_conn_init(struct ds_conn *c, int fd, const volatile sig_atomic_t *stop)
{
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->stop = stop;
    c->ring.bell = -1;
    return ds_rec_create(&c->sock, DS_RECBUF, DS_RECBUF, c, read_fd, write_fd);
}

int ds_conn_tls(struct ds_conn *c, const struct ds_tls_keys *k)
{
    return ds_tlsrec_open(c->fd, k, 1, &c->tls);
}

/* Decode a call header from xdrs.  Only AUTH_NONE is spoken: a tenant is who its
 * connection says it is. */
static int header(XDR *xdrs, struct ds_call *call)
{
    char auth[2 * MAX_AUTH_BYTES];
    struct rpc_msg m;

    memset(&m, 0, sizeof(m));
    /* Given buffers, xdr_callmsg allocates nothing for the credentials. */
    m.rm_call.cb_cred.oa_base = auth;
    m.rm_call.cb_verf.oa_base = auth + MAX_AUTH_BYTES;
    if (!xdr_callmsg(xdrs, &m) || m.rm_direction != CALL ||
        m.rm_call.cb_rpcvers != RPC_MSG_VERSION || m.rm_call.cb_prog != DS_PROG ||
        m.rm_call.cb_vers != DS_V1 || m.rm_call.cb_cred.oa_flavor != AUTH_NONE)
        return DS_EPROTO;
    call->proc = m.rm_call.cb_proc;
    call->xid = m.rm_xid;
    call->args = xdrs;
    return 1;
}

/* Skipping to the next record between records reads nothing, so a closed socket shows only when
 * the header cannot be read. */
static int socket_call(struct ds_conn *c, struct ds_call *call)
{
    int rc;

    c->sock.x_op = XDR_DECODE;
    rc = ds_rec_skiprecord(&c->sock) ? header(&c->sock, call) : DS_EIO;
    if (rc < 0)
        return c->eof ? DS_EIO : *c->stop ? DS_ENOTREADY : rc;
    call->from_ring = 0;
    c->from_socket++;
    return rc;
}

/* The arguments are decoded in place: each byte is read once, into the executor's own
 * memory, and then validated like anything from the network, so a tenant changing the
 * record meanwhile only garbles its own call. */
static int ring_call(struct ds_conn *c, struct ds_call *call, const unsigned char *rec,
                     size_t len)
{
    xdrmem_create(&c->mem, (char *)(uintptr_t)rec, (u_int)len, XDR_DECODE);
    call->from_ring = 1;
    call->ring_len = len;
    c->from_ring++;
    return header(&c->mem, call);
}

/* 1 when bytes have come or the socket was closed, 0 when not, <0 on error.  A read
 * that does not wait takes the bytes in at once, where a poll would need a read after it:
 * a system call less per call. */
static int socket_ready(struct ds_conn *c)
{
    int got;

    c->nowait = 1;
    got = ds_rec_fill(&c->sock);
    c->nowait = 0;
    if (got || c->eof)
        return 1;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : DS_EIO;
}

static int ring_take(struct ds_conn *c, struct ds_call *call)
{
    const unsigned char *rec;
    size_t len;
    int rc = ds_ring_peek(&c->ring, &rec, &len);

    return rc <= 0 ? rc : ring_call(c, call, rec, len);
}

/* The ring goes first, but every RING_RUN-th look the socket does: a call another thread
 * of the tenant put there must not wait for the ring to run dry. */
int ds_conn_poll(struct ds_conn *c, struct ds_call *call, unsigned look)
{
    int rc, socket_turn = c->ring.hdr == NULL || look % SOCKET_EVERY == 0;

    if (!ds_rec_eof(&c->sock))
        return socket_call(c, call);
    if (c->ring.hdr != NULL) {
        if (++c->turns % RING_RUN == 0)
            socket_turn = 1;
        else if ((rc = ring_take(c, call)) != 0)
            return rc;
    }
    if (socket_turn && (rc = socket_ready(c)) != 0)
        return rc < 0 ? rc : socket_call(c, call);
    return c->ring.hdr != NULL ? ring_take(c, call) : 0;
}

/* A sleep announced in the ring, so that the tenant knows to ring the doorbell. */
int ds_conn_sleep(struct ds_conn *c, int wake_fd, uint64_t wake_ns)
{
    struct pollfd p[3] = { { .fd = c->fd, .events = POLLIN },
                           { .fd = wake_fd, .events = POLLIN },
                           { .fd = c->ring.bell, .events = POLLIN } };
    struct timespec t, *tp = NULL;
    int n;

    if (c->ring.hdr != NULL && !ds_ring_sleep(&c->ring))
        return 0;
    /* Bytes a TLS record brought that nobody took yet would wait for the next. */
    if (c->tls != NULL && ds_tlsrec_pending(c->tls) > 0)
        return 0;
    if (wake_ns != 0) {
        uint64_t now = ds_now_ns(), left = wake_ns > now ? wake_ns - now : 0;

        t.tv_sec = (time_t)(left / 1000000000u);
        t.tv_nsec = (long)(left % 1000000000u);
        tp = &t;
    }
    n = ppoll(p, c->ring.hdr != NULL ? 3 : 2, tp, NULL);
    if (c->ring.hdr != NULL)
        ds_ring_wake(&c->ring);
    return n < 0 && errno != EINTR ? DS_EIO : 0;
}

void ds_conn_budget(struct ds_conn *c, size_t free_bytes, ds_rec_grant_fn grant, void *h)
{
    ds_rec_budget(&c->sock, free_bytes, grant, h);
}

size_t ds_conn_taken(struct ds_conn *c, const struct ds_call *call)
{
    return call->from_ring ? call->ring_len : ds_rec_taken(&c->sock);
}

size_t ds_conn_granted(struct ds_conn *c, const struct ds_call *call)
{
    return call->from_ring ? 0 : ds_rec_granted(&c->sock);
}

int ds_conn_refused(struct ds_conn *c, const struct ds_call *call)
{
    return !call->from_ring && ds_rec_refused(&c->sock);
}

void ds_conn_done(struct ds_conn *c, const struct ds_call *call)
{
    if (call->from_ring)
        ds_ring_consume(&c->ring);
}

static int reply(struct ds_conn *c, const struct ds_call *call, enum accept_stat stat,
                 xdrproc_t xres, void *res)
{
    struct rpc_msg m;

    memset(&m, 0, sizeof(m));
    m.rm_xid = call->xid;
    m.rm_direction = REPLY;
    m.rm_reply.rp_stat = MSG_ACCEPTED;
    m.acpted_rply.ar_verf = _null_auth;
    m.acpted_rply.ar_stat = stat;
    m.acpted_rply.ar_results.where = res;
    m.acpted_rply.ar_results.proc = xres;
    c->sock.x_op = XDR_ENCODE;
    if (!xdr_replymsg(&c->sock, &m) || !ds_rec_endofrecord(&c->sock, TRUE))
        return DS_EIO;
    c->replies++;
    return 0;
}

int ds_conn_reply(struct ds_conn *c, const struct ds_call *call, xdrproc_t xres, void *res)
{
    /* A reply may end a synchronisation: what kernels printed before it is out first. */
    ds__devout_flush();
    return reply(c, call, SUCCESS, xres, res);
}

int ds_conn_reply_error(struct ds_conn *c, const struct ds_call *call, enum accept_stat stat)
{
    return reply(c, call, stat, NULL, NULL);
}

void ds_conn_close(struct ds_conn *c)
{
    if (c->sock.x_ops != NULL)
        XDR_DESTROY(&c->sock);
    ds_ring_close(&c->ring);
    ds_tlsrec_close(c->tls);
    c->tls = NULL;
    close(c->fd);
    c->fd = -1;
}
