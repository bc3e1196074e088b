#include "fuzz_io.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

/* Write what is left when fd has room. */
static void feed(struct ds_fuzz_peer *p, size_t *off)
{
    ssize_t n = send(p->fd, p->bytes + *off, p->len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);

    if (n > 0)
        *off += (size_t)n;
    else if (n < 0 && errno != EAGAIN && errno != EINTR)
        *off = p->len; /* the other side is gone: nothing more will be read */
}

/* Looks at a ring that does not move before the socket ends anyway: the executor may
 * be blocked reading the rest of a record that the socket's bytes left unfinished. */
#define STUCK_LOOKS 20000

/* 1 once everything was written and the ring's records were served, or the ring has
 * stopped moving (*room: its free space at the last look, *looks: looks since it
 * changed). */
static int done(struct ds_fuzz_peer *p, size_t off, size_t *room, unsigned *looks)
{
    size_t now;

    if (off < p->len)
        return 0;
    if (p->ring == NULL || ds_ring_drained(p->ring))
        return 1;
    ds_ring_space(p->ring, &now);
    *looks = now == *room ? *looks + 1 : 0;
    *room = now;
    return *looks > STUCK_LOOKS;
}

static void *run(void *arg)
{
    struct ds_fuzz_peer *p = arg;
    char sink[64 * 1024];
    size_t off = 0, room = 0;
    unsigned looks = 0;
    int shut = 0;

    for (;;) {
        struct pollfd f = { .fd = p->fd, .events = POLLIN | (off < p->len ? POLLOUT : 0) };
        int n;

        if (!shut && done(p, off, &room, &looks)) {
            shutdown(p->fd, SHUT_WR);
            shut = 1;
        }
        /* Waiting for the ring to drain is waiting for no descriptor: look again soon. */
        n = poll(&f, 1, shut || off < p->len ? -1 : 0);
        if (n < 0 && errno != EINTR)
            break;
        if (n <= 0) {
            sched_yield();
            continue;
        }
        if ((f.revents & POLLOUT) && off < p->len)
            feed(p, &off);
        if (f.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT);

            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                break;
        }
    }
    return NULL;
}

int ds_fuzz_peer_start(struct ds_fuzz_peer *p, int fd, const uint8_t *bytes, size_t len,
                       struct ds_ring *ring)
{
    p->fd = fd;
    p->bytes = bytes;
    p->len = len;
    p->ring = ring;
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
