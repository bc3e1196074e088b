/*
 * Handing a descriptor to another process over a Unix socket: one tag byte with the
 * descriptor attached (SCM_RIGHTS).  The client hands its host arena to its executor
 * this way, and the control process a tenant's connection to its executor.
 */
#ifndef DS_FDPASS_H
#define DS_FDPASS_H

/* Send `tag` with fd attached.  Returns 0 or DS_EIO (errno says why). */
int ds_fd_send(int sock, char tag, int fd);

/* Receive one tag byte and the descriptor attached to it (close-on-exec).  Returns 0, or
 * DS_EIO when the peer left, a signal interrupted the wait (errno EINTR) or the byte
 * came without exactly one descriptor. */
int ds_fd_recv(int sock, char *tag, int *fd);

/* The next byte the peer sent, left unread: a tag, or the start of something else.
 * Returns 0, or DS_EIO when the peer left or the socket failed. */
int ds_fd_peek(int sock, char *tag);

#endif
