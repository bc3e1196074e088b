#include "ds_fdpass.h"

#include "ds_error.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

union fd_ctl {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
};

int ds_fd_send(int sock, char tag, int fd)
{
    struct iovec iov = { &tag, 1 };
    union fd_ctl ctl;
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    ssize_t n;

    memset(&ctl, 0, sizeof(ctl));
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    do
        n = sendmsg(sock, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : DS_EIO;
}

int ds_fd_recv(int sock, char *tag, int *fd)
{
    struct iovec iov = { tag, 1 };
    union fd_ctl ctl;
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf) };
    struct cmsghdr *c;

    *fd = -1;
    c = recvmsg(sock, &m, MSG_CMSG_CLOEXEC) == 1 ? CMSG_FIRSTHDR(&m) : NULL;
    if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(sizeof(int)) || (m.msg_flags & MSG_CTRUNC))
        return DS_EIO;
    memcpy(fd, CMSG_DATA(c), sizeof(int));
    return 0;
}

int ds_fd_peek(int sock, char *tag)
{
    ssize_t n;

    do
        n = recv(sock, tag, 1, MSG_PEEK);
    while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : DS_EIO;
}
