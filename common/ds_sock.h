/*
 * Writing to a connected socket from inside someone else's process (the client) or an
 * executor: everything or nothing, and a peer that went away gives an error, never the
 * SIGPIPE that would kill the program (MSG_NOSIGNAL).
 */
#ifndef DS_SOCK_H
#define DS_SOCK_H

#include <stddef.h>

/* Send all len bytes of buf, retrying after signals.  Returns 0, or -1 with errno set
 * when the socket failed or the peer closed it. */
int ds_send_all(int fd, const void *buf, size_t len);

#endif
