#include "ds_sock.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

int ds_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EPIPE;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Skip the first `sent` bytes of v[*first, n), which advances *first past pieces sent
 * whole and trims the piece sent in part. */
static void advance(struct iovec *v, int n, int *first, size_t sent)
{
    while (*first < n && sent >= v[*first].iov_len) {
        sent -= v[*first].iov_len;
        (*first)++;
    }
    if (*first < n) {
        v[*first].iov_base = (char *)v[*first].iov_base + sent;
        v[*first].iov_len -= sent;
    }
}

int ds_sendv_all(int fd, const struct iovec *iov, int n)
{
    struct iovec v[DS_SENDV_MAX];
    int first = 0;

    if (n < 0 || n > DS_SENDV_MAX) {
        errno = EINVAL;
        return -1;
    }
    memcpy(v, iov, (size_t)n * sizeof(*iov));
    advance(v, n, &first, 0);
    while (first < n) {
        struct msghdr m = { .msg_iov = v + first, .msg_iovlen = (size_t)(n - first) };
        ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);

        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EPIPE;
            return -1;
        }
        advance(v, n, &first, (size_t)k);
    }
    return 0;
}
