#include "ds_arena.h"

#include "ds_error.h"
#include "ds_fdpass.h"

#include <errno.h>
#include <sys/socket.h>

int ds_arena_send(int sock, int fd)
{
    return ds_fd_send(sock, DS_ARENA_MARKER, fd);
}

int ds_arena_recv(int sock, int *fd)
{
    char marker;
    ssize_t n;
    int rc;

    *fd = -1;
    do
        n = recv(sock, &marker, 1, MSG_PEEK);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return DS_EIO;
    if (marker != DS_ARENA_MARKER)
        return 0;
    do
        rc = ds_fd_recv(sock, &marker, fd);
    while (rc != 0 && errno == EINTR);
    return rc;
}
