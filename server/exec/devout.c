#include "devout.h"

#include "ds_devout.h"
#include "ds_error.h"
#include "ds_log.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* Above the descriptors the executor is started with (exec_spawn.h). */
#define LOG_FD_MIN 10

static int log_moved;

int ds__devout_init(void)
{
    int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, LOG_FD_MIN);

    if (fd < 0)
        return DS_EIO;
    ds_log_set_fd(fd);
    log_moved = 1;
    return 0;
}

int ds__devout_is_marker(char tag)
{
    return tag == DS_STDOUT_MARKER || tag == DS_STDERR_MARKER;
}

int ds__devout_take(char tag, int fd)
{
    int target = tag == DS_STDOUT_MARKER ? STDOUT_FILENO : STDERR_FILENO;
    int rc = 0;

    /* The driver's stdio buffer holds nothing yet, but what it may hold belongs to the
     * descriptor it was written for. */
    fflush(target == STDOUT_FILENO ? stdout : stderr);
    if ((target == STDERR_FILENO && !log_moved) || dup2(fd, target) < 0)
        rc = DS_EIO;
    close(fd);
    return rc;
}

void ds__devout_flush(void)
{
    fflush(stdout);
}
