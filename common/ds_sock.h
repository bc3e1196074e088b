/*
 * Writing to a connected socket from inside someone else's process (the client) or an
 * executor: everything or nothing, and a peer that went away gives an error, never the
 * SIGPIPE that would kill the program (MSG_NOSIGNAL).
 */
#ifndef DS_SOCK_H
#define DS_SOCK_H

#include <stddef.h>
#include <sys/uio.h>

/* Most pieces ds_sendv_all takes. */
#define DS_SENDV_MAX 8

/* Send all len bytes of buf, retrying after signals.  Returns 0, or -1 with errno set
 * when the socket failed or the peer closed it. */
int ds_send_all(int fd, const void *buf, size_t len);

/* The same for the n (at most DS_SENDV_MAX) pieces of iov, in order, gathered by the
 * kernel: no copy into a buffer of ours first.  Returns 0, or -1 with errno set. */
int ds_sendv_all(int fd, const struct iovec *iov, int n);

#endif
