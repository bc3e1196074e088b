#include "ds_devout.h"

#include "ds_error.h"
#include "ds_fdpass.h"

#include <fcntl.h>
#include <unistd.h>

static int send_one(int sock, char tag, int fd)
{
    int null, rc;

    /* A program that closed its stdout has the connection itself there, the lowest
     * descriptor free when it was made: device output must not go into the RPC stream. */
    if (fd != sock && fcntl(fd, F_GETFD) >= 0)
        return ds_fd_send(sock, tag, fd);
    null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0)
        return DS_EIO;
    rc = ds_fd_send(sock, tag, null);
    close(null);
    return rc;
}

int ds_devout_send(int sock)
{
    if (send_one(sock, DS_STDOUT_MARKER, STDOUT_FILENO) != 0)
        return DS_EIO;
    return send_one(sock, DS_STDERR_MARKER, STDERR_FILENO);
}
