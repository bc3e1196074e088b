#define _GNU_SOURCE
#include "ds_test.h"

#include "ds_preface.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int ds_test_free_tcp_port(void)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(fd >= 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    port = ntohs(sin.sin_port);
    close(fd);
    return port;
}

static int can_connect(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0), ok;

    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    ok = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
    close(fd);
    return ok;
}

const char *ds_test_device(void)
{
    const char *d = getenv("DS_TEST_DEVICE");

    return d && d[0] ? d : "sim";
}

int ds_test_on_sim(void)
{
    return strcmp(ds_test_device(), "sim") == 0;
}

/* A token file holding one token of this server's own, owner-only as it should be. */
static void write_token_file(struct ds_test_server *s, char *opt, size_t len)
{
    char path[128];
    FILE *f;
    int fd;

    snprintf(s->token, sizeof(s->token), "dstest-%d-%ld", (int)getpid(), (long)time(NULL));
    snprintf(path, sizeof(path), "%s/tokens", s->dir);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fprintf(f, "# detshare test fixture\n%s\n", s->token);
    cr_assert_eq(fclose(f), 0);
    snprintf(opt, len, "--token-file %s", path);
}

static void spawn(struct ds_test_server *s, const char *args)
{
    char cmd[1024], mps[128], tokens[160] = "";

    /* sh splits `args` like a user's command line would.  On a GPU the server runs as in
     * production, with its own MPS daemon; the gpu tests hold a CTest resource lock, since
     * one GPU takes one daemon at a time.  The sim needs none (test_mps covers the
     * daemon's life).  --warm 0: an executor starting ahead would open a device context
     * while a test measures the GPU's free memory (test_server covers the pool). */
    if (ds_test_on_sim())
        snprintf(mps, sizeof(mps), "--mps off");
    else
        snprintf(mps, sizeof(mps), "--mps start --mps-dir %s/mps", s->dir);
    if (s->tcp_addr[0] && (args == NULL || (strstr(args, "--token-file") == NULL &&
                                            strstr(args, "--insecure") == NULL)))
        write_token_file(s, tokens, sizeof(tokens));
    snprintf(cmd, sizeof(cmd),
             "exec %s --device %s %s --warm 0 --listen unix:%s %s%s %s %s >/dev/null 2>>%s",
             DS_SERVER_BIN, ds_test_device(), mps, s->sock, s->tcp_addr[0] ? "--listen " : "",
             s->tcp_addr, tokens, args ? args : "", s->log);
    s->pid = fork();
    cr_assert(s->pid >= 0);
    if (s->pid == 0) {
        /* A test that dies must not leave its server behind (sh execs the server, which
         * keeps this setting). */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(path);
}

void ds_test_remove_tree(const char *dir)
{
    nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

int ds_test_log_count(const struct ds_test_server *s, const char *needle)
{
    char line[1024];
    FILE *f = fopen(s->log, "r");
    int n = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

void ds_test_server_start(struct ds_test_server *s, int with_tcp, const char *args)
{
    int up = 0;

    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/dstest.XXXXXX");
    cr_assert_not_null(mkdtemp(s->dir));
    snprintf(s->sock, sizeof(s->sock), "%s/ds.sock", s->dir);
    snprintf(s->log, sizeof(s->log), "%s/server.log", s->dir);
    snprintf(s->unix_addr, sizeof(s->unix_addr), "unix:%s", s->sock);
    if (with_tcp)
        snprintf(s->tcp_addr, sizeof(s->tcp_addr), "tcp:127.0.0.1:%d",
                 ds_test_free_tcp_port());
    spawn(s, args);
    for (int i = 0; i < 500 && !(up = can_connect(s->sock)); i++) {
        int status;

        cr_assert_eq(waitpid(s->pid, &status, WNOHANG), 0, "detshare-server exited at start");
        usleep(10000);
    }
    cr_assert(up, "detshare-server did not start listening");
    /* That probe sent no preface: let the server see it go, so that a test's counts of
     * refusals start from a known point. */
    for (int i = 0; i < 500 && ds_test_log_count(s, "closed before its preface") < 1; i++)
        usleep(10000);
    setenv("DETSHARE_SERVER", s->unix_addr, 1);
    if (s->token[0])
        setenv("DETSHARE_TOKEN", s->token, 1);
}

void ds_test_servers_use(const struct ds_test_server *s, int n)
{
    char list[1024] = "";

    for (int i = 0; i < n; i++) {
        size_t len = strlen(list);

        cr_assert_lt(len + strlen(s[i].unix_addr) + 2, sizeof(list));
        snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "", s[i].unix_addr);
    }
    setenv("DETSHARE_SERVER", list, 1);
}

int ds_test_log_has(const struct ds_test_server *s, const char *needle)
{
    char buf[65536];
    FILE *f = fopen(s->log, "r");
    size_t n;

    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

static void dump_log(const struct ds_test_server *s)
{
    char line[1024];
    FILE *f = fopen(s->log, "r");

    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL)
        fprintf(stderr, "  server| %s", line);
    fclose(f);
}

void ds_test_server_stop(struct ds_test_server *s)
{
    int status = 0;
    pid_t got = 0;

    if (s->pid <= 0)
        return;
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 1000 && got == 0; i++) {
        got = waitpid(s->pid, &status, WNOHANG);
        if (got == 0)
            usleep(10000);
    }
    if (got == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &status, 0);
    }
    dump_log(s);
    s->pid = 0;
    cr_assert_neq(got, 0, "detshare-server did not stop within 10 s of SIGTERM");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "detshare-server did not exit cleanly (status 0x%x)", status);
    cr_assert_not(ds_test_log_has(s, "Sanitizer"), "a sanitizer reported an error");
    cr_assert_not(ds_test_log_has(s, "runtime error"), "UBSan reported an error");
    cr_assert_not(ds_test_log_has(s, "executor failed"), "an executor failed");
    cr_assert_not(ds_test_log_has(s, "did not stop in time"),
                  "an executor had to be killed at the server's stop");
    unlink(s->log);
    /* With what the server left there: on a GPU, its MPS daemon's pipes and logs. */
    ds_test_remove_tree(s->dir);
}

CUcontext ds_test_ctx(void)
{
    CUcontext ctx;

    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
    return ctx;
}

int ds_test_raw_connect(const struct ds_test_server *s, const char *name)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    char why[DS_PREFACE_REASON_MAX + 1];
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    cr_assert_geq(fd, 0);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", s->sock);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    cr_assert_eq(ds_preface_send(fd, "", 0, name), 0);
    cr_assert_eq(ds_preface_await(fd, why, sizeof(why)), 0, "preface refused: %s", why);
    return fd;
}

/* The executors of server `server`, newest first; returns how many. */
static int executors(pid_t server, pid_t *pids, int max)
{
    char cmd[128], line[32];
    FILE *p;
    int n = 0;

    snprintf(cmd, sizeof(cmd), "pgrep -P %d -f -- '--executor' | sort -rn", (int)server);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    while (n < max && fgets(line, sizeof(line), p) != NULL)
        pids[n++] = (pid_t)atoi(line);
    pclose(p);
    return n;
}

pid_t ds_test_warm_executor(const struct ds_test_server *s)
{
    pid_t pids[8];

    for (int i = 0; i < 500; i++) {
        if (executors(s->pid, pids, 8) == 1) {
            usleep(50000);
            if (executors(s->pid, pids, 8) == 1)
                return pids[0];
        }
        usleep(10000);
    }
    return 0;
}

/* Whether every thread of process pid is stopped ('T' in its stat, after the name). */
static int all_threads_stopped(pid_t pid)
{
    char path[64], stat[512], *state;
    struct dirent *d;
    DIR *dir;
    int stopped = 1, any = 0;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    if ((dir = opendir(path)) == NULL)
        return 0;
    while (stopped && (d = readdir(dir)) != NULL) {
        FILE *f;

        if (d->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat", (int)pid, d->d_name);
        f = fopen(path, "r");
        stat[0] = '\0';
        if (f != NULL) {
            if (fgets(stat, sizeof(stat), f) == NULL)
                stat[0] = '\0';
            fclose(f);
        }
        state = strrchr(stat, ')');
        stopped = state != NULL && state[1] == ' ' && state[2] == 'T';
        any = 1;
    }
    closedir(dir);
    return stopped && any;
}

int ds_test_stop_process(pid_t pid)
{
    if (kill(pid, SIGSTOP) != 0)
        return -1;
    for (int i = 0; i < 5000; i++) {
        if (all_threads_stopped(pid))
            return 0;
        usleep(1000);
    }
    return -1;
}

CUresult ds_test_connect(void)
{
    CUcontext ctx;
    CUresult rc = cuInit(0);

    if (rc == CUDA_SUCCESS)
        rc = cuDevicePrimaryCtxRetain(&ctx, 0);
    if (rc == CUDA_SUCCESS)
        rc = cuCtxSetCurrent(ctx);
    return rc;
}

const char *ds_test_cu_name(CUresult rc)
{
    const char *name = NULL;

    if (cuGetErrorName(rc, &name) != CUDA_SUCCESS || name == NULL)
        return "unknown CUresult";
    return name;
}

CUmodule ds_test_module(const char *path)
{
    CUmodule m;
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    CU_OK(cuModuleLoadData(&m, buf));
    free(buf);
    return m;
}

void *ds_test_padded_cubin(const char *path, size_t size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *img = calloc(1, size);
    uint64_t shoff;
    uint16_t shentsize, shnum;
    long n = 0;
    int ok;

    ok = f != NULL && img != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
         (size_t)n <= size / 2 && fseek(f, 0, SEEK_SET) == 0 &&
         fread(img, 1, (size_t)n, f) == (size_t)n;
    if (f != NULL)
        fclose(f);
    if (ok) {
        memcpy(&shoff, img + 0x28, 8);
        memcpy(&shentsize, img + 0x3a, 2);
        memcpy(&shnum, img + 0x3c, 2);
        ok = shoff + (uint64_t)shentsize * shnum <= (uint64_t)n;
    }
    if (!ok) {
        free(img);
        return NULL;
    }
    memcpy(img + size - (size_t)shentsize * shnum, img + shoff, (size_t)shentsize * shnum);
    shoff = size - (uint64_t)shentsize * shnum;
    memcpy(img + 0x28, &shoff, 8);
    return img;
}

/* The parent's ends of every peer's pipes: a peer forked later must not hold them, or an
 * earlier peer would never see its go or down pipe close. */
#define PEER_FDS 48
static int peer_fds[PEER_FDS];
static int npeer_fds;

static void remember(int fd)
{
    if (npeer_fds < PEER_FDS)
        peer_fds[npeer_fds++] = fd;
}

static void close_peer_fd(int fd)
{
    for (int i = 0; i < npeer_fds; i++)
        if (peer_fds[i] == fd)
            peer_fds[i] = peer_fds[--npeer_fds];
    close(fd);
}

/* The child: wait for go, run fn, report its status, wait for down to close. */
static int peer_main(int go, int up, int down, int (*fn)(void *), void *arg)
{
    char c, rc;

    if (read(go, &c, 1) != 0)
        return 10;
    rc = (char)fn(arg);
    if (write(up, &rc, 1) != 1)
        return 11;
    return read(down, &c, 1) == 0 ? 0 : 12;
}

void ds_test_peer_fork(struct ds_test_peer *p, int (*fn)(void *), void *arg)
{
    int go[2], up[2], down[2];

    cr_assert(pipe(go) == 0 && pipe(up) == 0 && pipe(down) == 0);
    p->pid = fork();
    cr_assert(p->pid >= 0);
    if (p->pid == 0) {
        close(go[1]);
        close(up[0]);
        close(down[1]);
        while (npeer_fds > 0)
            close(peer_fds[--npeer_fds]);
        _exit(peer_main(go[0], up[1], down[0], fn, arg));
    }
    close(go[0]);
    close(up[1]);
    close(down[0]);
    p->go = go[1];
    p->up = up[0];
    p->down = down[1];
    remember(p->go);
    remember(p->up);
    remember(p->down);
}

void ds_test_peer_go(struct ds_test_peer *p)
{
    if (p->go >= 0)
        close_peer_fd(p->go);
    p->go = -1;
}

void ds_test_peer_join(struct ds_test_peer *p)
{
    char rc;

    ds_test_peer_go(p);
    cr_assert_eq(read(p->up, &rc, 1), 1, "the second tenant did not start");
    cr_assert_eq(rc, 0, "the second tenant failed (%d)", rc);
}

void ds_test_peer_leave(struct ds_test_peer *p)
{
    int status;

    close_peer_fd(p->down);
    cr_assert_eq(waitpid(p->pid, &status, 0), p->pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "second tenant: 0x%x", status);
    close_peer_fd(p->up);
}

int ds_test_ctl(const struct ds_test_server *s, const char *args, char *out, size_t len)
{
    char cmd[1024];
    FILE *p;
    size_t n;

    snprintf(cmd, sizeof(cmd), "%s --admin unix:%s.admin %s 2>&1", DS_CTL_BIN, s->sock, args);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return WEXITSTATUS(pclose(p));
}

const char *ds_test_tenant_json(const char *status, const char *name, char *obj, size_t len)
{
    char key[64];
    const char *at, *end;

    snprintf(key, sizeof(key), "\"name\":\"%s\"", name);
    at = strstr(status, key);
    cr_assert_not_null(at, "no tenant %s in %s", name, status);
    end = strchr(at, '}');
    cr_assert_not_null(end);
    snprintf(obj, len, "%.*s", (int)(end - at), at);
    return obj;
}
