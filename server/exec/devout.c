#define _GNU_SOURCE /* pipe2 */

#include "devout.h"

#include "ds_devout.h"
#include "ds_error.h"
#include "ds_log.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Above the descriptors the executor is started with (exec_spawn.h). */
#define LOG_FD_MIN 10

static int log_moved;
static int taken[2]; /* fd 1, fd 2: the tenant's own */

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
    else
        taken[target - STDOUT_FILENO] = 1;
    close(fd);
    return rc;
}

/* The pipe's reader: whole lines, or DS_DEVOUT_LINE bytes of one too long, into the log. */
static void *log_lines(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[DS_DEVOUT_LINE];
    size_t have = 0;
    ssize_t n;

    while ((n = read(fd, buf + have, sizeof(buf) - have)) > 0) {
        char *start = buf, *nl;

        have += (size_t)n;
        while ((nl = memchr(start, '\n', have - (size_t)(start - buf))) != NULL) {
            ds_info("device output: %.*s", (int)(nl - start), start);
            start = nl + 1;
        }
        have -= (size_t)(start - buf);
        memmove(buf, start, have);
        if (have == sizeof(buf)) {
            ds_info("device output: %.*s", (int)have, buf);
            have = 0;
        }
    }
    if (have > 0)
        ds_info("device output: %.*s", (int)have, buf);
    close(fd);
    return NULL;
}

int ds__devout_log_untaken(void)
{
    int out = !taken[0], err = !taken[1] && log_moved, p[2], rc = 0;
    pthread_t th;

    /* fd 2 is the log's own until ds__devout_init moved the log off it. */
    if (!out && !err)
        return 0;
    if (pipe2(p, O_CLOEXEC) != 0)
        return DS_EIO;
    fflush(stdout);
    if ((out && dup2(p[1], STDOUT_FILENO) < 0) || (err && dup2(p[1], STDERR_FILENO) < 0))
        rc = DS_EIO;
    close(p[1]);
    if (rc == 0 && pthread_create(&th, NULL, log_lines, (void *)(intptr_t)p[0]) == 0) {
        pthread_detach(th);
        return 0;
    }
    close(p[0]);
    return DS_EIO;
}

void ds__devout_flush(void)
{
    fflush(stdout);
}
