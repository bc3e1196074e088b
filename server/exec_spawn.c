#define _GNU_SOURCE
#include "exec_spawn.h"

#include "ds_tls.h"

#include "ds_fdpass.h"
#include "detshare.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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

/* The byte an executor sends back on its pair once it holds its tenant's connection. */
#define TAKEN 'A'
/* The tag the connection is handed over with. */
#define TENANT 'T'
/* ...a TLS tenant's, its stream keys in the next message. */
#define TENANT_TLS 'K'
/* ...a data connection of the tenant taken, its secret in the next message. */
#define ATTACH 'A'

/* Send all n bytes of buf on sock.  Returns 0, or -1 with errno set. */
static int send_whole(int sock, const void *buf, size_t len)
{
    ssize_t n;

    do
        n = send(sock, buf, len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n >= 0 && n != (ssize_t)len)
        errno = EMSGSIZE;
    return n == (ssize_t)len ? 0 : -1;
}

int ds_spawn_attach(int ctl, int fd, const unsigned char *secret)
{
    if (ds_fd_send(ctl, ATTACH, fd) != 0)
        return -1;
    return send_whole(ctl, secret, DS_ATTACH_SECRET);
}

int ds_spawn_handover(struct ds_spawned *e, int tenant_fd, const struct ds_tls_keys *keys)
{
    if (ds_fd_send(e->ctl, keys != NULL ? TENANT_TLS : TENANT, tenant_fd) != 0)
        return -1;
    return keys == NULL ? 0 : send_whole(e->ctl, keys, sizeof(*keys));
}

int ds_spawn_taken(struct ds_spawned *e)
{
    ssize_t n;
    char b;

    do
        n = recv(e->ctl, &b, 1, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n == 1)
        return b == TAKEN ? 1 : -1;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
}

void ds_spawn_close(struct ds_spawned *e)
{
    if (e->ctl >= 0)
        close(e->ctl);
    e->ctl = -1;
}

/* How often ds_spawn_await_tenant looks at its stop flag.  A SIGTERM handled before the
 * wait began, while the device opened (seconds, under MPS, for executors started
 * together), interrupts nothing: the warm executors of H100 runs slept through the
 * server's stop until it killed them. */
#define WAIT_MS 100

/* The executor's taker thread, which ends once the tenant's connection came or none
 * will; fd is its descriptor, or -1, once the thread has been joined. */
static struct {
    pthread_t thread;
    int running; /* started, not yet joined */
    int ended;   /* eventfd, written as the thread ends */
    int fd;
    int tls;     /* keys came with fd */
    struct ds_tls_keys keys;
} taker = { .ended = -1, .fd = -1 };

/* The keys after a TENANT_TLS descriptor.  Returns 1 when they came whole. */
static int take_keys(void)
{
    ssize_t n;

    do
        n = recv(DS_EXEC_CTL_FD, &taker.keys, sizeof(taker.keys), 0);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(taker.keys);
}

static void *take(void *arg)
{
    char tag, taken = TAKEN;
    int fd, rc;

    (void)arg;
    do {
        errno = 0;
        rc = ds_fd_recv(DS_EXEC_CTL_FD, &tag, &fd);
    } while (rc != 0 && errno == EINTR);
    if (rc == 0 && tag == TENANT_TLS)
        taker.tls = take_keys();
    if (rc == 0 && tag != TENANT && !taker.tls) {
        close(fd);
        fd = -1;
    }
    /* A control process that no longer listens has no use for the word: the tenant is
     * served all the same. */
    if (fd >= 0)
        (void)send(DS_EXEC_CTL_FD, &taken, 1, MSG_NOSIGNAL);
    taker.fd = fd;
    eventfd_write(taker.ended, 1);
    return NULL;
}

int ds_spawn_listen(void)
{
    sigset_t all, old;
    int rc;

    if ((taker.ended = eventfd(0, EFD_CLOEXEC)) < 0)
        return errno;
    /* Signals (SIGTERM) are the main thread's. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&taker.thread, NULL, take, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close(taker.ended);
        taker.ended = -1;
        return rc;
    }
    taker.running = 1;
    return 0;
}

/* Whether the taker has ended, waiting up to ms for it (-1: as long as it takes);
 * joined once it has. */
static int taker_ended(int ms)
{
    struct pollfd p = { .fd = taker.ended, .events = POLLIN };

    if (!taker.running)
        return 1;
    if (poll(&p, 1, ms) <= 0)
        return 0;
    pthread_join(taker.thread, NULL);
    close(taker.ended);
    taker.ended = -1;
    taker.running = 0;
    return 1;
}

int ds_spawn_tenant_came(void)
{
    struct pollfd p = { .fd = DS_EXEC_CTL_FD, .events = POLLIN };

    if (taker_ended(0))
        return taker.fd >= 0;
    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

void ds_spawn_stop_taking(void)
{
    /* Wakes the taker's receive, which then returns a connection already queued, or
     * the end of the pair. */
    shutdown(DS_EXEC_CTL_FD, SHUT_RD);
    while (!taker_ended(-1))
        ;
}

int ds_spawn_tenant_keys(struct ds_tls_keys *k)
{
    if (!taker.tls)
        return 0;
    *k = taker.keys;
    explicit_bzero(&taker.keys, sizeof(taker.keys));
    taker.tls = 0;
    return 1;
}

int ds_spawn_take_attach(int *fd, unsigned char *secret)
{
    char tag;
    ssize_t n;
    int rc;

    for (;;) {
        do {
            errno = 0;
            rc = ds_fd_recv(DS_EXEC_CTL_FD, &tag, fd);
        } while (rc != 0 && errno == EINTR);
        if (rc != 0)
            return -1;
        if (tag == ATTACH)
            break;
        close(*fd);
    }
    do
        n = recv(DS_EXEC_CTL_FD, secret, DS_ATTACH_SECRET, MSG_WAITALL);
    while (n < 0 && errno == EINTR);
    if (n == DS_ATTACH_SECRET)
        return 0;
    close(*fd);
    return -1;
}

void ds_spawn_stop_attaching(void)
{
    shutdown(DS_EXEC_CTL_FD, SHUT_RD);
}

int ds_spawn_await_tenant(const volatile sig_atomic_t *stop)
{
    int fd;

    while (!*stop && !taker_ended(WAIT_MS))
        ;
    if (*stop) {
        ds_spawn_stop_taking();
        if (taker.fd >= 0)
            close(taker.fd);
        taker.fd = -1;
        return -1;
    }
    fd = taker.fd;
    taker.fd = -1;
    return fd;
}
