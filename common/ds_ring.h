/*
 * The call ring: a local tenant's calls, in shared memory instead of the socket.
 *
 * A local client writes each call's XDR record (the same bytes the socket would carry)
 * into a single-producer, single-consumer byte ring that it shares with its executor,
 * so a call costs a store instead of a system call on each side, and the executor
 * starts a launch while the tenant is still running Python towards its next call.
 * Replies still come over the socket.  An eventfd is the doorbell: the client rings it
 * only when the executor has said, in the ring's header, that it is going to sleep.
 *
 * The data area is mapped twice in a row, so a record that runs past the end of the
 * ring continues at its start without being split.  Each record is a 4-byte length
 * and the XDR bytes, padded to 8 bytes.  The consumer advances `head` only once the
 * record has been served, so `head == tail` means every call published so far is done.
 *
 * The executor trusts nothing the tenant writes here: the ring's size comes from the
 * memfd (which must be sealed against shrinking), the head it serves from is its own,
 * and every length is checked against what has been published.
 */
#ifndef DS_RING_H
#define DS_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DS_RING_MARKER 'R' /* tag of the ring's memfd at connection (ds_fdpass.h) */
#define DS_BELL_MARKER 'B' /* tag of the doorbell eventfd */
#define DS_RING_SIZE (4u << 20)

struct ds_ring_hdr;

struct ds_ring {
    struct ds_ring_hdr *hdr;
    unsigned char *data; /* size bytes, then the same bytes again */
    size_t size;         /* a power of two */
    size_t map_len;
    int bell;      /* eventfd */
    uint64_t head; /* consumer: its own copy; producer: last value seen */
    uint64_t tail; /* producer: its own copy; consumer: last value seen */
    size_t peeked; /* consumer: bytes of the record being served */
};

/* Producer side: create a ring of `size` bytes (a power of two, a multiple of the page
 * size) and its doorbell.  *memfd and r->bell are to be handed to the consumer.
 * Returns 0 or DS_EIO. */
int ds_ring_create(struct ds_ring *r, size_t size, int *memfd);

/* Consumer side: map the ring in memfd (consumed), after checking its size and seals;
 * bell (consumed) is its doorbell.  Returns 0, or DS_EINVAL for a ring not made by
 * ds_ring_create. */
int ds_ring_attach(struct ds_ring *r, int memfd, int bell);

/* Unmap and close the doorbell. */
void ds_ring_close(struct ds_ring *r);

/* Producer: where the next record's bytes go and how many fit (0 when the ring is
 * full). */
unsigned char *ds_ring_space(struct ds_ring *r, size_t *avail);

/* Producer: publish the len bytes written at ds_ring_space, and ring the doorbell when
 * the consumer sleeps.  Returns 0, or DS_EIO when the doorbell could not be rung. */
int ds_ring_publish(struct ds_ring *r, size_t len);

/* Producer: 1 when every published record has been served. */
int ds_ring_drained(struct ds_ring *r);

/* Consumer: the oldest unserved record.  Returns 1 with *rec and *len set, 0 when there
 * is none, or DS_EPROTO when the producer wrote something impossible. */
int ds_ring_peek(struct ds_ring *r, const unsigned char **rec, size_t *len);

/* Consumer: the record from ds_ring_peek has been served. */
void ds_ring_consume(struct ds_ring *r);

/* Consumer: announce a sleep.  Returns 1 when the caller may block on the doorbell, 0
 * when a record arrived meanwhile (the sleep is then already called off). */
int ds_ring_sleep(struct ds_ring *r);

/* Consumer: awake again (after blocking on r->bell); empties the doorbell. */
void ds_ring_wake(struct ds_ring *r);

#endif
