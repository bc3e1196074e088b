#include "fuzz_io.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Write what is left when fd has room; returns -1 once nothing is left to do. */
static int feed(struct ds_fuzz_peer *p, size_t *off)
{
    ssize_t n = send(p->fd, p->bytes + *off, p->len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);

    if (n > 0)
        *off += (size_t)n;
    else if (n < 0 && errno != EAGAIN && errno != EINTR)
        *off = p->len; /* the other side is gone: nothing more will be read */
    if (*off == p->len)
        shutdown(p->fd, SHUT_WR);
    return 0;
}

static void *run(void *arg)
{
    struct ds_fuzz_peer *p = arg;
    char sink[64 * 1024];
    size_t off = 0;

    if (p->len == 0)
        shutdown(p->fd, SHUT_WR);
    for (;;) {
        struct pollfd f = { .fd = p->fd, .events = POLLIN | (off < p->len ? POLLOUT : 0) };

        if (poll(&f, 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if ((f.revents & POLLOUT) && off < p->len)
            feed(p, &off);
        if (f.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT);

            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                break;
        }
    }
    return NULL;
}

int ds_fuzz_peer_start(struct ds_fuzz_peer *p, int fd, const uint8_t *bytes, size_t len)
{
    p->fd = fd;
    p->bytes = bytes;
    p->len = len;
    return pthread_create(&p->thread, NULL, run, p) == 0 ? 0 : -1;
}

void ds_fuzz_peer_join(struct ds_fuzz_peer *p)
{
    pthread_join(p->thread, NULL);
    close(p->fd);
}

int ds_fuzz_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}
