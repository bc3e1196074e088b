/*
 * The record stream to the executor: ONC RPC call messages in record marking over one
 * connected socket (Unix or TCP), or, for a local tenant, the same records through the
 * call ring in shared memory (common/ds_ring.h), with replies on the socket.
 *
 * TI-RPC's own client (clnt_vc) would do, but it always sleeps in poll() for a reply and
 * needs SIGPIPE blocked around every call, four system calls even for a batched call
 * that only lands in a buffer.  Here writes use MSG_NOSIGNAL, and a reply is first
 * awaited by polling the socket without sleeping for a bounded time: a reply usually
 * comes within microseconds, and a sleeping thread's wake-up costs more than that.
 *
 * Calls and replies are two record streams, so that one thread can read replies while
 * another sends calls.  Replies may come in any order: each is matched to its call by
 * xid.  The sending side (ds__wire_xid, _post, _queue, _send_large, _flush) is used by
 * one thread at a time, and so is the receiving side
 * (ds__wire_read_reply); the caller serialises each (client/rpc.c).
 * ds__wire_set_spin and ds__wire_shutdown may be called from any thread.
 */
#ifndef DS_WIRE_H
#define DS_WIRE_H

#include <rpc/rpc.h>
#include <stdint.h>

struct ds_wire;

/* Take over connected socket `fd` (closed by ds__wire_close).  A reply is awaited
 * without sleeping for up to spin_us microseconds.  NULL when out of memory. */
struct ds_wire *ds__wire_open(int fd, unsigned spin_us);

void ds__wire_close(struct ds_wire *w);

/* Hand the executor a call ring (a local socket only, before the first call); calls
 * then go through it, and only one too large for it goes over the socket.  Returns 0,
 * or DS_EIO when no ring could be made or handed over (calls stay on the socket). */
int ds__wire_offer_ring(struct ds_wire *w);

/* Protect the stream from now on with a TLS tenant's keys (ds_tlsrec.h), before the
 * first call.  Returns 0, DS_ENOMEM or DS_EIO. */
struct ds_tls_keys;
int ds__wire_tls(struct ds_wire *w, const struct ds_tls_keys *k);

/* Which directions of a TLS stream the kernel protects (ds_tlsrec_kernel); 0 without
 * TLS. */
int ds__wire_tls_kernel(struct ds_wire *w);

/* How long a reply is awaited without sleeping, from now on. */
void ds__wire_set_spin(struct ds_wire *w, unsigned spin_us);

/* End the connection in both directions: a reader waiting for bytes and a sender
 * waiting for room both fail at once, and so does anything later.  errno is kept. */
void ds__wire_shutdown(struct ds_wire *w);

/* A fresh xid for a call that awaits a reply: whoever will read that reply must know
 * the xid before the call leaves. */
uint32_t ds__wire_xid(struct ds_wire *w);

/* Send synchronous call `xid` (from ds__wire_xid), with everything queued before it;
 * its reply is read by ds__wire_read_reply.  Returns 0 or DS_EIO. */
int ds__wire_post(struct ds_wire *w, uint32_t xid, unsigned long proc, xdrproc_t xarg,
                  void *arg);

/* Queue a call that gets no reply; it leaves with the next flush, or by itself once the
 * send buffer is full; through the ring it reaches the executor at once.  Returns 0,
 * DS_EIO, or 1 when it does not fit even into the empty ring: nothing was queued, the
 * ring is drained, and the call is for ds__wire_send_large. */
int ds__wire_queue(struct ds_wire *w, unsigned long proc, xdrproc_t xarg, void *arg);

/* Send a call that gets no reply and is too large for the ring over the socket,
 * followed by DS_NULL call `null_xid` (from ds__wire_xid): once that is answered, the
 * executor has taken the call, and no ring record queued after it can overtake it.
 * Returns 0 or DS_EIO. */
int ds__wire_send_large(struct ds_wire *w, unsigned long proc, xdrproc_t xarg, void *arg,
                        uint32_t null_xid);

/* Send what is queued.  Returns 0 or DS_EIO. */
int ds__wire_flush(struct ds_wire *w);

/* Monotonic time (ns) at which the oldest queued call was queued; 0 when none is.  Any
 * thread may ask, without the sending side's lock, for a hint that may be stale. */
uint64_t ds__wire_queued_since(struct ds_wire *w);

/* Who awaits the reply to call `xid`: returns its owner (any non-NULL pointer), with
 * *xres and *res saying how to decode the results and where they go; NULL when no call
 * `xid` awaits a reply. */
typedef void *(*ds_wire_find_fn)(void *arg, uint32_t xid, xdrproc_t *xres, void **res);

/* Read the next reply, whoever's it is, decode its results as find(arg, ...) says, and
 * set *owner to what find returned.  Returns 0, DS_EIO when the connection failed, or
 * DS_EPROTO when the reply was not a successful one or nobody awaited it; on failure no
 * results are left to free. */
int ds__wire_read_reply(struct ds_wire *w, ds_wire_find_fn find, void *arg, void **owner);

#endif
