/*
 * What both fuzz targets need around the code they drive: a peer on the other end of a
 * socket pair that writes the input and reads whatever comes back, so that neither side
 * blocks on a full buffer, and a count of open descriptors to catch leaks.
 */
#ifndef DS_FUZZ_IO_H
#define DS_FUZZ_IO_H

#include "ds_ring.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct ds_fuzz_peer {
    pthread_t thread;
    int fd;
    const uint8_t *bytes;
    size_t len;
    struct ds_ring *ring; /* or NULL */
};

/* Start a thread that writes len bytes to fd, then, once every record of `ring` (the
 * producer's side, or NULL) has been served, shuts fd down for writing; and that reads
 * (and drops) everything that arrives on fd until its other end is closed.  An executor
 * looks at its socket now and then between ring records, and would end the session at
 * the socket's end before serving the rest.  fd, bytes and ring stay the caller's until
 * ds_fuzz_peer_join.  Returns 0 or -1. */
int ds_fuzz_peer_start(struct ds_fuzz_peer *p, int fd, const uint8_t *bytes, size_t len,
                       struct ds_ring *ring);

/* Wait for the thread and close fd. */
void ds_fuzz_peer_join(struct ds_fuzz_peer *p);

/* How many descriptors this process has open. */
int ds_fuzz_open_fds(void);

#endif
