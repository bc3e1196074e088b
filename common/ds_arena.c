#include "ds_arena.h"

#include "ds_error.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int ds_arena_send(int sock, int fd)
{
    char marker = DS_ARENA_MARKER;
    struct iovec iov = { &marker, 1 };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);

    memset(&ctl, 0, sizeof(ctl));
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : DS_EIO;
}

int ds_arena_recv(int sock, int *fd)
{
    char marker;
    struct iovec iov = { &marker, 1 };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf) };
    struct cmsghdr *c;
    ssize_t n;

    *fd = -1;
    do
        n = recv(sock, &marker, 1, MSG_PEEK);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return DS_EIO;
    if (marker != DS_ARENA_MARKER)
        return 0;
    do
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    c = n == 1 ? CMSG_FIRSTHDR(&m) : NULL;
    if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(sizeof(int)) || (m.msg_flags & MSG_CTRUNC))
        return DS_EIO;
    memcpy(fd, CMSG_DATA(c), sizeof(int));
    return 0;
}
