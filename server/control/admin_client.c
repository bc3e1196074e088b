#include "admin_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Read from fd into u until it holds one whole object.  Returns 0 or -1. */
static int take_answer(int fd, int timeout_ms, msgpack_unpacker *u, msgpack_unpacked *out)
{
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;

        if (poll(&p, 1, timeout_ms) != 1 || !msgpack_unpacker_reserve_buffer(u, 4096))
            return -1;
        n = read(fd, msgpack_unpacker_buffer(u), msgpack_unpacker_buffer_capacity(u));
        if (n <= 0)
            return -1;
        msgpack_unpacker_buffer_consumed(u, (size_t)n);
        if (msgpack_unpacker_next(u, out) == MSGPACK_UNPACK_SUCCESS)
            return 0;
    }
}

int ds_admin_ask(const struct ds_addr *admin, const char *req, size_t len, int timeout_ms,
                 msgpack_unpacker *u, msgpack_unpacked *out, char *why, size_t why_len)
{
    int fd = ds_addr_connect(admin), rc = -1;

    if (fd < 0) {
        snprintf(why, why_len, "cannot reach the admin socket %s: %s", admin->path,
                 strerror(errno));
        return -1;
    }
    if (write(fd, req, len) == (ssize_t)len)
        rc = take_answer(fd, timeout_ms, u, out);
    if (rc != 0)
        snprintf(why, why_len, "no answer from %s", admin->path);
    close(fd);
    return rc;
}
