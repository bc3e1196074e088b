#define _GNU_SOURCE
#include "exec_spawn.h"

#include "ds_fdpass.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

extern char **environ;

/* posix_spawn's dup2 leaves a descriptor alone when source and target are the same
 * number, keeping its close-on-exec flag; sources above the fixed numbers avoid that and
 * the clobbering of one source by the other's dup2. */
#define HIGH_FD 16

static int move_high(int fd)
{
    int high = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD), err = errno;

    close(fd);
    errno = err;
    return high;
}

/* environ with CUDA_MPS_PIPE_DIRECTORY replaced by `var` ("NAME=VALUE"); NULL when
 * out of memory.  Free the array only: its strings are environ's and var. */
static char **env_with(char *var)
{
    size_t n = 0, k = 0;
    char **env;

    while (environ[n] != NULL)
        n++;
    env = calloc(n + 2, sizeof(*env));
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CUDA_MPS_PIPE_DIRECTORY=", 24) != 0)
            env[k++] = environ[i];
    env[k] = var;
    return env;
}

static int start(int shm_fd, int child_ctl, int slot, const char *mps_pipe, pid_t *pid)
{
    char var[300], **env = environ;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    char slot_arg[16];
    char *argv[] = { "detshare-server", "--executor", slot_arg, NULL };
    int rc;

    snprintf(slot_arg, sizeof(slot_arg), "%d", slot);
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, shm_fd, DS_EXEC_SHM_FD);
    posix_spawn_file_actions_adddup2(&fa, child_ctl, DS_EXEC_CTL_FD);
    /* The control process handles SIGCHLD/SIGTERM through libuv and ignores SIGPIPE;
     * none of that is the executor's. */
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    if (mps_pipe != NULL) {
        snprintf(var, sizeof(var), "CUDA_MPS_PIPE_DIRECTORY=%s", mps_pipe);
        env = env_with(var);
    }
    rc = env != NULL ? posix_spawn(pid, "/proc/self/exe", &fa, &at, argv, env) : ENOMEM;
    if (env != environ)
        free(env);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

int ds_spawn_executor(int shm_fd, int slot, const char *mps_pipe, struct ds_spawned *out)
{
    int sv[2], high_shm, rc;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    high_shm = fcntl(shm_fd, F_DUPFD_CLOEXEC, HIGH_FD);
    sv[1] = move_high(sv[1]);
    if (high_shm < 0 || sv[1] < 0) {
        rc = errno;
    } else {
        rc = start(high_shm, sv[1], slot, mps_pipe, &out->pid);
    }
    if (high_shm >= 0)
        close(high_shm);
    if (sv[1] >= 0)
        close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        errno = rc;
        return -1;
    }
    out->ctl = sv[0];
    out->slot = slot;
    return 0;
}

int ds_spawn_handover(struct ds_spawned *e, int tenant_fd)
{
    int rc = ds_fd_send(e->ctl, 'T', tenant_fd), err = errno;

    close(e->ctl);
    e->ctl = -1;
    errno = err;
    return rc == 0 ? 0 : -1;
}

int ds_spawn_await_tenant(void)
{
    char tag;
    int fd;

    return ds_fd_recv(DS_EXEC_CTL_FD, &tag, &fd) == 0 ? fd : -1;
}
