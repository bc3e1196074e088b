#define _GNU_SOURCE
#include "mps.h"

#include "ds_error.h"
#include "ds_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long the daemon gets to create its pipe, and to go after a quit. */
#define READY_MS 10000
#define QUIT_MS 10000
/* How long an existing control socket may refuse connections before it counts as ready. */
#define LISTEN_GRACE_MS 2000

static const char *control_program(void)
{
    const char *p = getenv("DETSHARE_MPS_CONTROL");

    return p != NULL && p[0] != '\0' ? p : "nvidia-cuda-mps-control";
}

int ds_mps_parse(const char *s, enum ds_mps_mode *mode)
{
    if (strcmp(s, "start") == 0)
        *mode = DS_MPS_START;
    else if (strcmp(s, "external") == 0)
        *mode = DS_MPS_EXTERNAL;
    else if (strcmp(s, "off") == 0)
        *mode = DS_MPS_OFF;
    else
        return DS_EINVAL;
    return 0;
}

const char *ds_mps_mode_name(enum ds_mps_mode mode)
{
    return mode == DS_MPS_START ? "started" : mode == DS_MPS_EXTERNAL ? "external" : "off";
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}

/* A directory only this user can enter: the daemon's pipes accept whoever reaches them. */
static int private_dir(const char *path)
{
    struct stat st;

    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        ds_error("MPS: cannot create %s: %s", path, strerror(errno));
        return DS_EIO;
    }
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
        ds_error("MPS: %s must be a directory of this user with mode 0700", path);
        return DS_EINVAL;
    }
    return 0;
}

static int sub_dir(const char *dir, const char *name, char *out, size_t len)
{
    if ((size_t)snprintf(out, len, "%s/%s", dir, name) >= len) {
        ds_error("MPS: directory name too long: %s", dir);
        return DS_EINVAL;
    }
    return private_dir(out);
}

/* Make the directory this server's alone while it runs. */
static int take_lock(struct ds_mps *m)
{
    char path[sizeof(m->dir) + 16];

    snprintf(path, sizeof(path), "%s/lock", m->dir);
    m->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (m->lock_fd < 0) {
        ds_error("MPS: cannot open %s: %s", path, strerror(errno));
        return DS_EIO;
    }
    if (flock(m->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        ds_error("MPS: another detshare-server owns %s (one MPS daemon per GPU); stop it, "
                 "or run this one with --mps external", m->dir);
        close(m->lock_fd);
        m->lock_fd = -1;
        return DS_EBUSY;
    }
    return 0;
}

/* Run the control program with `command` on its standard input, against pipe directory
 * `pipe_dir`, and wait for it (at most QUIT_MS). */
static void control_command(const char *pipe_dir, const char *command)
{
    int in[2];
    pid_t pid;

    if (pipe2(in, O_CLOEXEC) != 0)
        return;
    pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);

        dup2(in[0], 0);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
        execlp(control_program(), control_program(), (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    if (pid > 0 && write(in[1], command, strlen(command)) < 0)
        ds_warn("MPS: cannot send '%s' to the control program", command);
    close(in[1]);
    for (int ms = 0; pid > 0 && ms < QUIT_MS; ms += 10) {
        if (waitpid(pid, NULL, WNOHANG) != 0)
            return;
        sleep_ms(10);
    }
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
}

static void pid_path(const char *dir, char *out, size_t len)
{
    snprintf(out, len, "%s/daemon.pid", dir);
}

static void write_pid(const char *dir, pid_t pid)
{
    char path[300];
    FILE *f;

    pid_path(dir, path, sizeof(path));
    f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%d\n", (int)pid);
        fclose(f);
    }
}

/* 1 when pid runs the control program (a recycled pid must not be killed). */
static int is_control(pid_t pid)
{
    const char *prog = control_program(), *base = strrchr(prog, '/');
    char path[64], comm[32] = "";
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    base = base != NULL ? base + 1 : prog;
    /* The kernel keeps the first 15 bytes of a program's name. */
    return comm[0] != '\0' && strncmp(comm, base, 15) == 0;
}

/* A server killed without its clean-up left the daemon of directory `dir` (pipes in
 * pipe_dir) running: stop it. */
static void stop_stale(const char *dir, const char *pipe_dir)
{
    char path[300];
    long pid = 0;
    FILE *f;

    pid_path(dir, path, sizeof(path));
    f = fopen(path, "r");
    if (f == NULL)
        return;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    unlink(path);
    if (pid <= 1 || kill((pid_t)pid, 0) != 0 || !is_control((pid_t)pid))
        return;
    ds_warn("MPS: stopping the control daemon (pid %ld) an earlier server left running", pid);
    control_command(pipe_dir, "quit\n");
    for (int ms = 0; ms < QUIT_MS && kill((pid_t)pid, 0) == 0; ms += 10)
        sleep_ms(10);
    if (kill((pid_t)pid, 0) == 0 && is_control((pid_t)pid))
        kill((pid_t)pid, SIGKILL);
}

/* In the forked child: become the daemon of pipe_dir, dying with the server. */
static void spawn_child(const char *pipe_dir, const char *log, pid_t parent)
{
    char out[300];
    int fd;

    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(0);
    snprintf(out, sizeof(out), "%s/daemon.out", log);
    fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    fd = open("/dev/null", O_RDONLY);
    if (fd >= 0)
        dup2(fd, 0);
    setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", log, 1);
    execlp(control_program(), control_program(), "-f", (char *)NULL);
    fprintf(stderr, "cannot run %s: %s\n", control_program(), strerror(errno));
    _exit(127);
}

/* Whether the daemon's control socket is there and listening.  Its file appears before
 * the daemon listens on it: executors started in between came up as no MPS clients, the
 * first warm one at every start of a server on an H200 (issue 24).  Only a refusal
 * (nobody listening yet) means wait: the daemon's socket is of its own type, which a
 * stream connect may not match (EPROTOTYPE) although the daemon listens.  A control
 * "pipe" that is no socket (a stand-in program's FIFO) answers once it exists. */
static int control_answers(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct stat st;
    int fd, rc, err;

    if (stat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode))
        return 1;
    if (strlen(path) >= sizeof(sun.sun_path) ||
        (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return 1;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
    err = errno;
    close(fd);
    return rc == 0 || (err != ECONNREFUSED && err != ENOENT);
}

/* Wait for the daemon's control socket to take connections; 0 once it does. */
static int await_ready(struct ds_mps *m, const char *log)
{
    char control[sizeof(m->pipe) + 16];
    int status;

    snprintf(control, sizeof(control), "%s/control", m->pipe);
    for (int ms = 0; ms < READY_MS; ms += 10) {
        if (control_answers(control))
            return 0;
        /* A daemon whose socket never takes our connect (another type of socket than
         * expected) is taken as ready once it has been there a while, as before. */
        if (ms >= LISTEN_GRACE_MS && access(control, F_OK) == 0) {
            ds_warn("MPS: the control socket %s does not take connections; going on", control);
            return 0;
        }
        if (waitpid(m->daemon, &status, WNOHANG) == m->daemon) {
            m->daemon = 0;
            ds_error("MPS: %s exited (status %d) before it was ready; see %s/daemon.out, or "
                     "run with --mps off (tenants then time-slice)",
                     control_program(), WIFEXITED(status) ? WEXITSTATUS(status) : -1, log);
            return DS_EIO;
        }
        sleep_ms(10);
    }
    ds_error("MPS: no control pipe in %s after %d s", m->pipe, READY_MS / 1000);
    return DS_EIO;
}

/* A group's directory under the server's: DIR/group-NAME. */
static int group_dir(const char *dir, const char *name, char *out, size_t len)
{
    if ((size_t)snprintf(out, len, "%s/group-%s", dir, name) >= len) {
        ds_error("MPS: directory name too long: %s", dir);
        return DS_EINVAL;
    }
    return 0;
}

/* Daemons of named groups that a killed server left running: stopped before this server
 * starts any, since a group's daemon is started while tenants wait and must not wait for
 * a stale one to quit. */
static void stop_stale_groups(const struct ds_mps *m)
{
    char gdir[sizeof(m->dir) + 48], gpipe[sizeof(gdir) + 8];
    struct dirent *e;
    DIR *d = opendir(m->dir);

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "group-", 6) != 0 ||
            group_dir(m->dir, e->d_name + 6, gdir, sizeof(gdir)) != 0)
            continue;
        snprintf(gpipe, sizeof(gpipe), "%s/pipe", gdir);
        stop_stale(gdir, gpipe);
    }
    if (d != NULL)
        closedir(d);
}

static int start_daemon(struct ds_mps *m)
{
    char log[sizeof(m->dir) + 8];
    pid_t self = getpid();
    int rc;

    if ((rc = sub_dir(m->dir, "pipe", m->pipe, sizeof(m->pipe))) != 0 ||
        (rc = sub_dir(m->dir, "log", log, sizeof(log))) != 0 || (rc = take_lock(m)) != 0)
        return rc;
    stop_stale(m->dir, m->pipe);
    stop_stale_groups(m);
    m->daemon = fork();
    if (m->daemon == 0)
        spawn_child(m->pipe, log, self);
    if (m->daemon < 0) {
        m->daemon = 0;
        ds_error("MPS: cannot fork: %s", strerror(errno));
        return DS_EIO;
    }
    if ((rc = await_ready(m, log)) != 0) {
        ds_mps_stop(m);
        return rc;
    }
    write_pid(m->dir, m->daemon);
    setenv("CUDA_MPS_PIPE_DIRECTORY", m->pipe, 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", log, 1);
    ds_info("MPS: control daemon started (pid %d, pipe %s, logs %s)", (int)m->daemon, m->pipe,
            log);
    return 0;
}

static void default_dir(char *out, size_t len, int gpu)
{
    const char *base = getenv("XDG_RUNTIME_DIR");

    if (base == NULL || base[0] != '/')
        base = "/tmp";
    snprintf(out, len, "%s/detshare-mps-%u-gpu%d", base, (unsigned)geteuid(), gpu);
}

/* An MPS client gets fewer connections (hardware work queues) than a context of its own,
 * and a tenant's independent streams then wait for each other: on an H100 two streams'
 * copies serialised under MPS and ran side by side with 8, the driver's own default
 * without MPS.  Executors inherit this; an operator's own setting wins.  More connections
 * per client leave room for fewer MPS clients (NVIDIA's MPS guide). */
static void native_connections(void)
{
    if (setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 0) != 0)
        ds_warn("MPS: cannot set CUDA_DEVICE_MAX_CONNECTIONS: %s", strerror(errno));
}

int ds_mps_start(struct ds_mps *m, enum ds_mps_mode mode, int gpu, const char *dir)
{
    int rc;

    memset(m, 0, sizeof(*m));
    m->mode = mode;
    m->lock_fd = -1;
    if (mode != DS_MPS_OFF)
        native_connections();
    if (mode == DS_MPS_EXTERNAL) {
        const char *p = getenv("CUDA_MPS_PIPE_DIRECTORY");

        ds_info("MPS: using the running control daemon at %s",
                p != NULL && p[0] != '\0' ? p : "/tmp/nvidia-mps (the default)");
        return 0;
    }
    if (dir != NULL)
        snprintf(m->dir, sizeof(m->dir), "%s", dir);
    else
        default_dir(m->dir, sizeof(m->dir), gpu);
    if ((rc = private_dir(m->dir)) != 0)
        return rc;
    /* Pointing an executor at an empty directory hides any daemon the host runs. */
    if ((rc = sub_dir(m->dir, "none", m->none, sizeof(m->none))) != 0)
        return rc;
    if (mode == DS_MPS_START)
        return start_daemon(m);
    snprintf(m->pipe, sizeof(m->pipe), "%s", m->none);
    setenv("CUDA_MPS_PIPE_DIRECTORY", m->pipe, 1);
    ds_warn("MPS: off: tenants take turns on the GPU (time-slicing) instead of sharing SMs");
    return 0;
}

/* Ask the daemon *daemon of directory `dir` (pipes in pipe_dir) to quit, and wait for
 * it (QUIT_MS, then by signal). */
static void quit_daemon(pid_t *daemon, const char *dir, const char *pipe_dir)
{
    char path[300];
    int status;

    control_command(pipe_dir, "quit\n");
    for (int ms = 0; ms < QUIT_MS; ms += 10) {
        pid_t r = waitpid(*daemon, &status, WNOHANG);

        if (r == *daemon || (r < 0 && errno == ECHILD)) {
            *daemon = 0;
            break;
        }
        sleep_ms(10);
    }
    if (*daemon > 0) {
        ds_warn("MPS: the control daemon of %s did not quit in %d s: killing it", dir,
                QUIT_MS / 1000);
        kill(*daemon, SIGKILL);
        waitpid(*daemon, NULL, 0);
        *daemon = 0;
    }
    pid_path(dir, path, sizeof(path));
    unlink(path);
}

void ds_mps_stop(struct ds_mps *m)
{
    if (m->daemon > 0) {
        quit_daemon(&m->daemon, m->dir, m->pipe);
        ds_info("MPS: control daemon stopped");
    }
    if (m->lock_fd >= 0) {
        close(m->lock_fd);
        m->lock_fd = -1;
    }
}

int ds_mps_group_start(struct ds_mps_group *g, const char *dir, const char *name)
{
    char log[sizeof(g->dir) + 8];
    pid_t self = getpid();
    int rc;

    memset(g, 0, sizeof(*g));
    if ((rc = group_dir(dir, name, g->dir, sizeof(g->dir))) != 0 ||
        (rc = private_dir(g->dir)) != 0 ||
        (rc = sub_dir(g->dir, "pipe", g->pipe, sizeof(g->pipe))) != 0 ||
        (rc = sub_dir(g->dir, "log", log, sizeof(log))) != 0)
        return rc;
    g->daemon = fork();
    if (g->daemon == 0)
        spawn_child(g->pipe, log, self);
    if (g->daemon < 0) {
        g->daemon = 0;
        ds_error("MPS: cannot fork: %s", strerror(errno));
        return DS_EIO;
    }
    write_pid(g->dir, g->daemon);
    ds_info("MPS: starting the control daemon of group %s (pid %d, pipe %s, logs %s)", name,
            (int)g->daemon, g->pipe, log);
    return 0;
}

int ds_mps_group_ready(const struct ds_mps_group *g)
{
    char control[sizeof(g->pipe) + 16];

    snprintf(control, sizeof(control), "%s/control", g->pipe);
    return control_answers(control);
}

void ds_mps_group_stop(struct ds_mps_group *g)
{
    if (g->daemon > 0)
        quit_daemon(&g->daemon, g->dir, g->pipe);
}
