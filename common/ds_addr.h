/*
 * Server addresses as users write them: "unix:/path/to.sock" or "tcp:HOST:PORT".
 * Shared by the server (listen) and the client (connect) so both agree on syntax and
 * on the default socket path.
 */
#ifndef DS_ADDR_H
#define DS_ADDR_H

#include <stddef.h>
#include <sys/types.h>

enum ds_addr_kind { DS_ADDR_UNIX, DS_ADDR_TCP };

struct ds_addr {
    enum ds_addr_kind kind;
    char path[108];  /* unix: socket path (sun_path size) */
    char host[256];  /* tcp */
    char port[8];    /* tcp */
};

/* Parse `text` into `out`.  Returns 0 or DS_EINVAL (bad syntax, path too long). */
int ds_addr_parse(const char *text, struct ds_addr *out);

/* Write the default server socket, "$XDG_RUNTIME_DIR/detshare.sock" or
 * "/tmp/detshare-UID/detshare.sock", as an address into `out`.
 * The directory keeps other users out of the path: in /tmp itself anyone could bind
 * the name first and pose as the server. */
void ds_addr_default(struct ds_addr *out);

/* For a server about to bind `a`: make the socket's directory (mode 0700) when it does
 * not exist, and check that it is a directory, not a symbolic link, owned by root or by
 * this process's effective user, and writable by nobody else, so that no other user can
 * have put a socket there.  Returns 0, or DS_EPERM with the reason in `why` (always
 * NUL-terminated). */
int ds_addr_private_dir(const struct ds_addr *a, char *why, size_t len);

/* The user on the other end of connected Unix socket `fd` (SO_PEERCRED: the one who
 * made the listening socket, for a client).  Returns 0 or DS_EIO (errno tells why). */
int ds_addr_peer_uid(int fd, uid_t *uid);

/* Format `a` as "unix:PATH" / "tcp:HOST:PORT" into buf (always NUL-terminated). */
void ds_addr_format(const struct ds_addr *a, char *buf, size_t len);

/* Connect a stream socket to `a`.  Returns the fd (close-on-exec) or a negative DS_E*
 * code; errno tells why. */
int ds_addr_connect(const struct ds_addr *a);

#endif
