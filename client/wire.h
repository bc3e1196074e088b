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
 * Not thread-safe: the caller serialises (client/rpc.c holds one lock).
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

/* How long a reply is awaited without sleeping, from now on. */
void ds__wire_set_spin(struct ds_wire *w, unsigned spin_us);

/* Send everything queued plus this call, then decode the reply into `res`.  Returns 0,
 * or DS_EIO when the connection failed (res then holds nothing), or DS_EPROTO when the
 * reply was not a successful one for this call. */
int ds__wire_call(struct ds_wire *w, unsigned long proc, xdrproc_t xarg, void *arg,
                  xdrproc_t xres, void *res);

/* Send a synchronous call whose reply is left to ds__wire_collect; *xid names it.
 * Replies come in the order the calls were sent.  Returns 0 or DS_EIO. */
int ds__wire_post(struct ds_wire *w, unsigned long proc, xdrproc_t xarg, void *arg,
                  uint32_t *xid);

/* Decode the reply to posted call xid, which must be the oldest one unanswered.
 * Returns as ds__wire_call does. */
int ds__wire_collect(struct ds_wire *w, uint32_t xid, xdrproc_t xres, void *res);

/* Queue a call that gets no reply; it leaves with the next flush, or by itself once the
 * send buffer is full; through the ring it reaches the executor at once.  Returns 0 or
 * DS_EIO. */
int ds__wire_queue(struct ds_wire *w, unsigned long proc, xdrproc_t xarg, void *arg);

/* Send what is queued.  Returns 0 or DS_EIO. */
int ds__wire_flush(struct ds_wire *w);

/* Monotonic time (ns) at which the oldest queued call was queued; 0 when none is. */
uint64_t ds__wire_queued_since(const struct ds_wire *w);

#endif
