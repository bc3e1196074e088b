/*
 * Server addresses as users write them: "unix:/path/to.sock" or "tcp:HOST:PORT".
 * Shared by the server (listen) and the client (connect) so both agree on syntax and
 * on the default socket path.
 */
#ifndef DS_ADDR_H
#define DS_ADDR_H

#include <stddef.h>

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
 * "/tmp/detshare-UID.sock", as an address into `out`. */
void ds_addr_default(struct ds_addr *out);

/* Format `a` as "unix:PATH" / "tcp:HOST:PORT" into buf (always NUL-terminated). */
void ds_addr_format(const struct ds_addr *a, char *buf, size_t len);

/* Connect a stream socket to `a`.  Returns the fd (close-on-exec) or a negative DS_E*
 * code; errno tells why. */
int ds_addr_connect(const struct ds_addr *a);

#endif
