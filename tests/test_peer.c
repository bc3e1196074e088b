/* Who is at the other end of a Unix socket.  A tenant hands its server its host memory,
 * stdout, stderr and call ring, so it must not connect to a server another user started
 * at the name it expects (security.md, "Unix sockets"); and a server's default socket
 * lives in a directory nobody else can put a socket in.  An impostor of another user
 * needs root to make (a child that drops to nobody), so those tests skip elsewhere. */
#include "ds_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534

/* What the impostor got from its one tenant: bytes and descriptors. */
struct haul {
    long bytes;
    long fds;
    int accepted;
};

/* Read whatever comes on `fd` until it closes or stays silent for a second, counting
 * bytes and the descriptors passed along. */
static void take_all(int fd, struct haul *h)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    while (poll(&p, 1, 1000) == 1) {
        char data[4096], ctl[CMSG_SPACE(16 * sizeof(int))];
        struct iovec iov = { data, sizeof(data) };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                            .msg_controllen = sizeof(ctl) };
        ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);

        if (n <= 0)
            return;
        h->bytes += n;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                h->fds += (long)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    }
}

/* The impostor: binds `path` as root (the directory is the test's), listens as nobody,
 * so that the kernel's peer credentials say nobody, and reports its haul on `out`. */
static void impostor(const char *path, int ready, int out)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct haul h = { 0 };
    struct pollfd p;
    int ls = socket(AF_UNIX, SOCK_STREAM, 0), fd;

    if (strlen(path) >= sizeof(sun.sun_path))
        _exit(1);
    memcpy(sun.sun_path, path, strlen(path) + 1);
    if (ls < 0 || bind(ls, (struct sockaddr *)&sun, sizeof(sun)) != 0 ||
        setgid(NOBODY) != 0 || setuid(NOBODY) != 0 || listen(ls, 4) != 0)
        _exit(1);
    if (write(ready, "r", 1) != 1)
        _exit(1);
    p = (struct pollfd){ .fd = ls, .events = POLLIN };
    if (poll(&p, 1, 10000) == 1 && (fd = accept(ls, NULL, NULL)) >= 0) {
        h.accepted = 1;
        take_all(fd, &h);
        close(fd);
    }
    _exit(write(out, &h, sizeof(h)) == (ssize_t)sizeof(h) ? 0 : 1);
}

struct setup {
    char dir[64], path[128], err[128];
    pid_t pid;
    int result;
    int saved_stderr;
};

/* Start an impostor in a fresh directory, point the tenant at it, and send the tenant's
 * stderr to a file. */
static void start_impostor(struct setup *s)
{
    int ready[2], out[2], fd;
    char addr[160], c;

    if (geteuid() != 0)
        cr_skip_test("making a socket of another user needs root (CI runs as root)");
    snprintf(s->dir, sizeof(s->dir), "/tmp/dspeer.XXXXXX");
    cr_assert_not_null(mkdtemp(s->dir));
    snprintf(s->path, sizeof(s->path), "%s/detshare.sock", s->dir);
    snprintf(s->err, sizeof(s->err), "%s/stderr", s->dir);
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(out), 0);
    s->pid = fork();
    cr_assert_geq(s->pid, 0);
    if (s->pid == 0)
        impostor(s->path, ready[1], out[1]);
    close(ready[1]);
    close(out[1]);
    cr_assert_eq(read(ready[0], &c, 1), 1, "the impostor did not start");
    close(ready[0]);
    s->result = out[0];
    snprintf(addr, sizeof(addr), "unix:%s", s->path);
    setenv("DETSHARE_SERVER", addr, 1);
    fflush(stderr);
    s->saved_stderr = dup(2);
    fd = open(s->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    cr_assert_geq(fd, 0);
    dup2(fd, 2);
    close(fd);
}

/* The impostor's haul, and the tenant's stderr in err. */
static struct haul finish_impostor(struct setup *s, char *err, size_t len)
{
    struct haul h = { 0 };
    int status;
    FILE *f;
    size_t n = 0;

    fflush(stderr);
    dup2(s->saved_stderr, 2);
    close(s->saved_stderr);
    cr_assert_eq(read(s->result, &h, sizeof(h)), (ssize_t)sizeof(h));
    close(s->result);
    cr_assert_eq(waitpid(s->pid, &status, 0), s->pid);
    f = fopen(s->err, "r");
    if (f != NULL) {
        n = fread(err, 1, len - 1, f);
        fclose(f);
    }
    err[n] = '\0';
    ds_test_remove_tree(s->dir);
    return h;
}

Test(peer, a_server_of_another_user_gets_nothing_from_the_tenant)
{
    struct setup s;
    struct haul h;
    char err[4096];
    CUresult rc;

    unsetenv("DETSHARE_SERVER_UID");
    start_impostor(&s);
    rc = cuInit(0);
    h = finish_impostor(&s, err, sizeof(err));
    cr_assert_eq(rc, CUDA_ERROR_NO_DEVICE, "cuInit -> %s", ds_test_cu_name(rc));
    cr_assert_eq(h.accepted, 1, "the tenant never connected");
    cr_assert_eq(h.bytes, 0, "the impostor got %ld bytes", h.bytes);
    cr_assert_eq(h.fds, 0, "the impostor got %ld descriptors", h.fds);
    cr_assert(strstr(err, "runs as uid 65534, neither root nor you (uid 0): not connecting"),
              "stderr: %s", err);
    cr_assert(strstr(err, "DETSHARE_SERVER_UID=65534"), "stderr: %s", err);
}

/* The check is the tenant's to widen: a server of the user it names gets the session
 * (this one never answers the tenant's preface, so the tenant sends nothing more and
 * fails when the server hangs up). */
Test(peer, a_server_of_the_user_the_tenant_names_is_trusted)
{
    struct setup s;
    struct haul h;
    char err[4096];

    setenv("DETSHARE_SERVER_UID", "65534", 1);
    start_impostor(&s);
    cr_assert_neq(cuInit(0), CUDA_SUCCESS);
    h = finish_impostor(&s, err, sizeof(err));
    cr_assert_gt(h.bytes, 0, "a trusted server did not get the preface; stderr: %s", err);
    cr_assert_null(strstr(err, "not connecting"), "stderr: %s", err);
}

Test(peer, a_server_uid_that_names_nobody_is_refused)
{
    struct setup s;
    struct haul h;
    char err[4096];

    setenv("DETSHARE_SERVER_UID", "no-such-user-here", 1);
    start_impostor(&s);
    cr_assert_eq(cuInit(0), CUDA_ERROR_NO_DEVICE);
    h = finish_impostor(&s, err, sizeof(err));
    cr_assert_eq(h.bytes, 0);
    cr_assert(strstr(err, "DETSHARE_SERVER_UID=no-such-user-here is neither a uid nor a user "
                          "name"), "stderr: %s", err);
}

/* Start the server with no --listen and XDG_RUNTIME_DIR=dir: its default socket.
 * Returns its pid; its stderr goes to log. */
static pid_t server_in(const char *dir, const char *log)
{
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(126);
        setenv("XDG_RUNTIME_DIR", dir, 1);
        execl(DS_SERVER_BIN, DS_SERVER_BIN, "--device", "sim", "--mps", "off", "--warm", "0",
              (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The server's exit status within 10 s, or -1 while it runs on. */
static int exit_within(pid_t pid, int ms)
{
    int status;

    for (int i = 0; i < ms / 10; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        usleep(10000);
    }
    return -1;
}

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;

    if (f != NULL) {
        n = fread(buf, 1, len - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
}

/* A default socket's directory that others may write to, or that is someone else's, is
 * refused: whoever can create a file there could have bound the name first. */
static void refused_in(const char *why, void (*spoil)(const char *dir))
{
    char base[64], dir[96], log[128], text[8192];
    pid_t pid;
    int rc;

    snprintf(base, sizeof(base), "/tmp/dsdir.XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    snprintf(dir, sizeof(dir), "%s/run", base);
    snprintf(log, sizeof(log), "%s/server.log", base);
    cr_assert_eq(mkdir(dir, 0700), 0);
    spoil(dir);
    pid = server_in(dir, log);
    rc = exit_within(pid, 10000);
    if (rc < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    read_file(log, text, sizeof(text));
    ds_test_remove_tree(base);
    cr_assert_gt(rc, 0, "the server started in %s: %s", dir, text);
    cr_assert(strstr(text, "will not listen on the default unix:"), "%s", text);
    cr_assert(strstr(text, why), "%s", text);
}

static void world_writable(const char *dir)
{
    cr_assert_eq(chmod(dir, 0777), 0);
}

static void someone_elses(const char *dir)
{
    if (geteuid() != 0)
        cr_skip_test("giving a directory to another user needs root (CI runs as root)");
    cr_assert_eq(chown(dir, NOBODY, NOBODY), 0);
}

static void a_link(const char *dir)
{
    char real[128];

    snprintf(real, sizeof(real), "%s.real", dir);
    cr_assert_eq(rename(dir, real), 0);
    cr_assert_eq(symlink(real, dir), 0);
}

Test(peer, a_default_directory_others_may_write_to_is_refused)
{
    refused_in("has mode 0777: others could put a socket there", world_writable);
}

Test(peer, a_default_directory_of_another_user_is_refused)
{
    refused_in("belongs to uid 65534, not to this server's user", someone_elses);
}

Test(peer, a_default_directory_that_is_a_link_is_refused)
{
    refused_in("is not a directory (a symbolic link?)", a_link);
}

/* A private directory is used, and made when missing. */
Test(peer, the_default_socket_goes_in_a_private_directory_made_for_it)
{
    char base[64], dir[96], log[128], sock[128], text[8192];
    struct stat st;
    pid_t pid;
    int up = 0, rc;

    snprintf(base, sizeof(base), "/tmp/dsdir.XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    snprintf(dir, sizeof(dir), "%s/run", base);
    snprintf(log, sizeof(log), "%s/server.log", base);
    snprintf(sock, sizeof(sock), "%s/detshare.sock", dir);
    pid = server_in(dir, log);
    for (int i = 0; i < 500 && !up; i++) {
        up = stat(sock, &st) == 0 && S_ISSOCK(st.st_mode);
        if (!up)
            usleep(10000);
    }
    kill(pid, SIGTERM);
    rc = exit_within(pid, 10000);
    read_file(log, text, sizeof(text));
    cr_assert_eq(rc, 0, "the server's exit: %d: %s", rc, text);
    cr_assert(up, "no socket at %s: %s", sock, text);
    cr_assert_eq(stat(dir, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700, "made with mode %o", st.st_mode & 0777);
    ds_test_remove_tree(base);
}
