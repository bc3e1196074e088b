/* TCP tenants show a token before they cost the server anything: the right token (and,
 * where the token says so, the right tenant-name prefix) gets an executor; a missing or
 * wrong one, or a peer that sends garbage or nothing, gets a refusal, a log line and no
 * executor, and the server goes on serving others.  A server with a TCP listener starts
 * only with a readable token file or --insecure. */
#include "ds_preface.h"
#include "ds_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rpc/rpc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXECUTORS "(executor pid"
#define REFUSED "refusing a tenant on tcp:"

static struct ds_test_server srv;
static char dir[64];

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    cr_assert_eq(fchmod(fd, mode), 0);
    close(fd);
}

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/dstoken.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

/* A server whose tokens are tok-any (any tenant name), tok-alpha (names "alpha-...") and
 * pa55#word (names "team-h-...": a '#' inside a token is no comment). */
static void start(void)
{
    char path[128], args[200];

    make_dir();
    snprintf(path, sizeof(path), "%s/tokens", dir);
    write_file(path, "# tenants over TCP\n\ntok-any\n  tok-alpha\talpha-   # the alpha team\n"
                     "pa55#word team-h-\t#team h\n",
               0600);
    snprintf(args, sizeof(args), "--token-file %s", path);
    ds_test_server_start(&srv, 1, args);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

struct tenant {
    const char *token, *token_file, *name; /* NULL: unset */
    const char *server;                    /* NULL: srv's TCP address */
};

struct outcome {
    CUresult rc;
    char err[4096]; /* what the tenant wrote on stderr */
};

static void set_or_unset(const char *var, const char *value)
{
    if (value != NULL)
        setenv(var, value, 1);
    else
        unsetenv(var);
}

/* The child: connect, then make a real call (an allocation); reports the first failure. */
static void tenant_main(const struct tenant *t, int out, const char *errpath)
{
    CUdeviceptr d;
    CUresult rc;
    int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    if (fd < 0 || dup2(fd, 2) < 0)
        _exit(1);
    setenv("DETSHARE_SERVER", t->server ? t->server : srv.tcp_addr, 1);
    set_or_unset("DETSHARE_TOKEN", t->token);
    set_or_unset("DETSHARE_TOKEN_FILE", t->token_file);
    set_or_unset("DETSHARE_TENANT", t->name);
    rc = ds_test_connect();
    if (rc == CUDA_SUCCESS)
        rc = cuMemAlloc(&d, 4096);
    if (rc == CUDA_SUCCESS)
        rc = cuMemFree(d);
    _exit(write(out, &rc, sizeof(rc)) == sizeof(rc) ? 0 : 1);
}

/* A process connects once, so each tenant runs in a child of its own. */
static void run_tenant(const struct tenant *t, struct outcome *o)
{
    char errpath[128];
    int p[2], status;
    FILE *f;
    pid_t pid;
    size_t n;

    snprintf(errpath, sizeof(errpath), "%s/tenant.err", dir);
    cr_assert_eq(pipe(p), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        tenant_main(t, p[1], errpath);
    }
    close(p[1]);
    cr_assert_eq(read(p[0], &o->rc, sizeof(o->rc)), (ssize_t)sizeof(o->rc),
                 "the tenant died before reporting");
    close(p[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tenant: 0x%x", status);
    f = fopen(errpath, "r");
    cr_assert_not_null(f);
    n = fread(o->err, 1, sizeof(o->err) - 1, f);
    o->err[n] = '\0';
    fclose(f);
}

/* A tenant that must be refused for `reason`, costing the server a log line and no
 * executor. */
static void expect_refused(const struct tenant *t, const char *reason)
{
    int executors = ds_test_log_count(&srv, EXECUTORS);
    int refused = ds_test_log_count(&srv, REFUSED);
    char line[256];
    struct outcome o;

    run_tenant(t, &o);
    cr_assert_eq(o.rc, CUDA_ERROR_NO_DEVICE, "cuInit -> %s", ds_test_cu_name(o.rc));
    snprintf(line, sizeof(line), "detshare-server at %s refused this tenant: %s", srv.tcp_addr,
             reason);
    cr_assert_not_null(strstr(o.err, line), "the tenant said: %s", o.err);
    cr_assert_eq(ds_test_log_count(&srv, REFUSED), refused + 1);
    cr_assert(ds_test_log_has(&srv, reason), "the server log does not say %s", reason);
    cr_assert_eq(ds_test_log_count(&srv, EXECUTORS), executors, "an executor was started");
}

static void expect_served(const struct tenant *t)
{
    int executors = ds_test_log_count(&srv, EXECUTORS);
    struct outcome o;

    run_tenant(t, &o);
    cr_assert_eq(o.rc, CUDA_SUCCESS, "-> %s; the tenant said: %s", ds_test_cu_name(o.rc), o.err);
    cr_assert_eq(ds_test_log_count(&srv, EXECUTORS), executors + 1);
}

TestSuite(token, .init = start, .fini = stop, .timeout = 60);

Test(token, a_tenant_without_a_token_is_refused)
{
    struct tenant t = { .name = "alpha-1" };

    expect_refused(&t, "no token given");
}

Test(token, a_wrong_token_is_refused)
{
    struct tenant t = { .token = "tok-alphA", .name = "alpha-1" };

    expect_refused(&t, "unknown token");
}

Test(token, a_token_for_other_tenant_names_is_refused)
{
    struct tenant t = { .token = "tok-alpha", .name = "beta-1" };

    expect_refused(&t, "this token is not for this tenant name");
}

Test(token, the_right_token_is_served)
{
    struct tenant alpha = { .token = "tok-alpha", .name = "alpha-1" };
    struct tenant any = { .token = "tok-any", .name = "beta-1" };

    expect_served(&alpha);
    cr_assert(ds_test_log_has(&srv, "token accepted for alpha-1"));
    expect_served(&any);
    cr_assert(ds_test_log_has(&srv, "token accepted for beta-1"));
}

Test(token, a_token_file_is_read)
{
    char path[128];
    struct tenant t = { .token_file = path, .name = "alpha-2" };
    struct outcome o;

    snprintf(path, sizeof(path), "%s/mine", dir);
    write_file(path, "# my token\n\n   tok-alpha\n", 0600);
    expect_served(&t);
    snprintf(path, sizeof(path), "%s/absent", dir);
    run_tenant(&t, &o);
    cr_assert_eq(o.rc, CUDA_ERROR_NO_DEVICE);
    cr_assert_not_null(strstr(o.err, "cannot be read"), "the tenant said: %s", o.err);
}

Test(token, a_hash_inside_a_token_is_part_of_it)
{
    char path[128];
    struct tenant whole = { .token = "pa55#word", .name = "team-h-1" };
    struct tenant cut = { .token = "pa55", .name = "team-h-1" };
    struct tenant other = { .token = "pa55#word", .name = "beta-1" };
    struct tenant from_file = { .token_file = path, .name = "team-h-2" };

    expect_served(&whole);
    expect_refused(&cut, "unknown token");
    expect_refused(&other, "this token is not for this tenant name");
    /* The tenant reads its token file the same way. */
    snprintf(path, sizeof(path), "%s/mine", dir);
    write_file(path, "pa55#word team-h-  # mine\n", 0600);
    expect_served(&from_file);
}

/* Write len bytes to path (the token file's own mode kept). */
static void write_bytes(const char *path, const char *bytes, size_t len)
{
    int fd = open(path, O_WRONLY | O_TRUNC);

    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
    close(fd);
}

/* A reload that finds a bad file keeps the tokens in force and says which line is bad. */
Test(token, a_bad_token_file_on_sighup_keeps_the_tokens_and_says_why)
{
    struct tenant any = { .token = "tok-any" };
    struct tenant fresh = { .token = "tok-new" };
    char path[128], why[200];

    snprintf(path, sizeof(path), "%s/tokens", dir);
    write_bytes(path, "tok-new\nab\0cd\n", sizeof("tok-new\nab\0cd\n") - 1);
    cr_assert_eq(kill(srv.pid, SIGHUP), 0);
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, "SIGHUP handled"); i++)
        usleep(10000);
    snprintf(why, sizeof(why), "%s:2: holds a NUL byte", path);
    cr_assert(ds_test_log_has(&srv, why), "the log does not say %s", why);
    cr_assert(ds_test_log_has(&srv, "SIGHUP: the tokens in force stay"));
    cr_assert_not(ds_test_log_has(&srv, "longer than"));
    expect_served(&any);
    expect_refused(&fresh, "unknown token");
}

/* Connect to srv's TCP port and send `bytes` (none when NULL). */
static int raw_connect(const char *bytes)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    const char *port = strrchr(srv.tcp_addr, ':');
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert_not_null(port);
    sin.sin_port = htons((uint16_t)atoi(port + 1));
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "%s", strerror(errno));
    if (bytes != NULL)
        cr_assert_eq(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
    return fd;
}

/* Everything the server sends until it closes (or resets, when bytes it did not read
 * were left), within timeout_ms; returns its length. */
static size_t read_to_end(int fd, char *buf, size_t len, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    size_t have = 0;
    ssize_t n = 1;

    while (n > 0 && have < len - 1 && poll(&p, 1, timeout_ms) == 1)
        if ((n = read(fd, buf + have, len - 1 - have)) > 0)
            have += (size_t)n;
    cr_assert(n == 0 || (n < 0 && errno == ECONNRESET), "the server did not close the "
              "connection");
    buf[have] = '\0';
    return have;
}

Test(token, garbage_is_refused_and_the_server_serves_on)
{
    struct tenant t = { .token = "tok-any" };
    int executors = ds_test_log_count(&srv, EXECUTORS);
    int refused = ds_test_log_count(&srv, "not a preface");
    /* What a client of an older version sends first: an RPC record mark. */
    int fd = raw_connect("\x80\x01");
    char buf[512];

    cr_assert_geq(read_to_end(fd, buf, sizeof(buf), 5000), 2);
    close(fd);
    cr_assert_eq(buf[0], DS_PREFACE_REFUSED);
    cr_assert_not_null(strstr(buf + 2, "not a preface"), "answer: %s", buf + 2);
    fd = raw_connect("GET / HTTP/1.1\r\nHost: gpu\r\n\r\n");
    read_to_end(fd, buf, sizeof(buf), 5000);
    close(fd);
    cr_assert_eq(ds_test_log_count(&srv, "not a preface"), refused + 2);
    cr_assert_eq(ds_test_log_count(&srv, EXECUTORS), executors);
    expect_served(&t);
}

Test(token, a_silent_peer_is_dropped_after_the_timeout)
{
    struct tenant t = { .token = "tok-any" };
    int executors = ds_test_log_count(&srv, EXECUTORS);
    int fd = raw_connect(NULL);
    struct timespec t0, t1;
    char buf[512];
    double waited;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Served meanwhile: a silent peer does not hold the control process up. */
    expect_served(&t);
    cr_assert_geq(read_to_end(fd, buf, sizeof(buf), 10000), 2);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    close(fd);
    waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_geq(waited, 2.5, "dropped after %.2f s, before the timeout", waited);
    cr_assert_eq(buf[0], DS_PREFACE_REFUSED);
    cr_assert(ds_test_log_has(&srv, "no preface in time"));
    cr_assert_eq(ds_test_log_count(&srv, EXECUTORS), executors + 1);
}

/* A token accepted for one name does not let the hello that follows claim another: the
 * preface says alpha-1 (the token's prefix allows it), the hello says beta-1. */
Test(token, a_hello_cannot_claim_another_name_than_the_token_was_granted_for)
{
    struct timeval wait = { .tv_sec = 10 };
    ds_hello_args a = { .proto_version = DS_PROTO_VERSION, .tenant = "beta-1",
                        .klass = DS_CLASS_BEST_EFFORT };
    ds_hello_res r;
    char why[DS_PREFACE_REASON_MAX + 1];
    int refused = ds_test_log_count(&srv, "refusing the hello of beta-1");
    int fd = raw_connect(NULL);
    CLIENT *c;

    cr_assert_eq(ds_preface_send(fd, "tok-alpha", 9, "alpha-1"), 0);
    cr_assert_eq(ds_preface_await(fd, why, sizeof(why)), 0, "refused: %s", why);
    c = clnt_vc_create(fd, &(struct netbuf){ 0 }, DS_PROG, DS_V1, 0, 0);
    cr_assert_not_null(c);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(clnt_call(c, DS_HELLO, (xdrproc_t)xdr_ds_hello_args, (char *)&a,
                           (xdrproc_t)xdr_ds_hello_res, (char *)&r, wait),
                 RPC_SUCCESS);
    cr_assert_eq(r.err, CUDA_ERROR_NOT_PERMITTED, "hello -> %d", r.err);
    clnt_destroy(c);
    close(fd);
    cr_assert(ds_test_log_has(&srv, "token accepted for alpha-1"));
    cr_assert_eq(ds_test_log_count(&srv, "refusing the hello of beta-1: its preface (and token, if any) "
                                         "named tenant alpha-1"), refused + 1);
    cr_assert_eq(ds_test_log_count(&srv, "[beta-1] info: joined"), 0, "beta-1 joined");
}

/* ---- Starting a server ---- */

/* Run the server with a TCP listener and `args`; its exit status, its output in out. */
static int server_exit(const char *args, char *out, size_t len)
{
    char cmd[1024];
    FILE *p;
    size_t n;

    snprintf(cmd, sizeof(cmd),
             "timeout 20 %s --device sim --mps off --warm 0 --listen unix:%s/s "
             "--listen tcp:127.0.0.1:1 %s 2>&1",
             DS_SERVER_BIN, dir, args);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return WEXITSTATUS(pclose(p));
}

static void expect_start_refused(const char *args, const char *says)
{
    char out[4096];

    cr_assert_eq(server_exit(args, out, sizeof(out)), 2, "args %s: %s", args, out);
    cr_assert_not_null(strstr(out, says), "args %s: %s", args, out);
}

TestSuite(token_start, .init = make_dir, .timeout = 60);

Test(token_start, tcp_without_tokens_needs_insecure)
{
    expect_start_refused("", "refusing to listen on tcp:127.0.0.1:1 without tokens");
    expect_start_refused("", "--insecure");
    ds_test_remove_tree(dir);
}

Test(token_start, bad_token_files_are_refused)
{
    char args[200], path[128], says[200], out[4096];
    int fd;

    snprintf(path, sizeof(path), "%s/none", dir);
    snprintf(args, sizeof(args), "--token-file %s", path);
    expect_start_refused(args, "cannot read token file");
    write_file(path, "# nothing here\n\n", 0600);
    expect_start_refused(args, "holds no token");
    write_file(path, "good\nbad alpha- extra\n", 0644);
    snprintf(says, sizeof(says), "%s:2: expected a token", path);
    expect_start_refused(args, says);
    expect_start_refused(args, "is readable by others");
    /* A NUL byte is reported as one, at its line. */
    write_file(path, "good\n", 0600);
    fd = open(path, O_WRONLY | O_APPEND);
    cr_assert_eq(write(fd, "x\0y\n", 4), 4);
    close(fd);
    snprintf(says, sizeof(says), "%s:2: holds a NUL byte", path);
    expect_start_refused(args, says);
    cr_assert_eq(server_exit(args, out, sizeof(out)), 2);
    cr_assert_null(strstr(out, "longer than"), "%s", out);
    ds_test_remove_tree(dir);
}

Test(token_start, insecure_serves_tcp_without_a_token)
{
    struct tenant t = { .server = NULL };
    struct outcome o;

    ds_test_server_start(&srv, 1, "--insecure");
    cr_assert(ds_test_log_has(&srv, "--insecure: TCP listeners (tcp:127.0.0.1:"));
    cr_assert(ds_test_log_has(&srv, "take tenants without a token"));
    cr_assert(ds_test_log_has(&srv, "cleartext"));
    run_tenant(&t, &o);
    cr_assert_eq(o.rc, CUDA_SUCCESS, "-> %s; the tenant said: %s", ds_test_cu_name(o.rc), o.err);
    cr_assert(ds_test_log_has(&srv, "connected on tcp:127.0.0.1"));
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

/* ---- Tokens added at run time, and Unix tenants that must show one (--unix-token) ---- */

#define UNIX_REFUSED "refusing a tenant on unix:"

static void start_unix_token(void)
{
    make_dir();
    ds_test_server_start(&srv, 0, "--unix-token");
}

/* Mint a token through `detshare-ctl token add ARGS` into tok (its last line of output). */
static void mint(const char *args_, char *tok, size_t len)
{
    char args[128], out[1024], *last;
    size_t n;

    snprintf(args, sizeof(args), "token add %s", args_);
    cr_assert_eq(ds_test_ctl(&srv, args, out, sizeof(out)), 0, "%s", out);
    n = strlen(out);
    while (n > 0 && out[n - 1] == '\n')
        out[--n] = '\0';
    last = strrchr(out, '\n');
    cr_assert_not_null(last, "%s", out);
    snprintf(tok, len, "%s", last + 1);
    cr_assert_eq(strlen(tok), 48, "not a minted token: %s", tok);
}

/* A Unix tenant that must be refused for `reason`, with no executor started. */
static void expect_unix_refused(const struct tenant *t, const char *reason)
{
    int executors = ds_test_log_count(&srv, EXECUTORS);
    int refused = ds_test_log_count(&srv, UNIX_REFUSED);
    struct outcome o;

    run_tenant(t, &o);
    cr_assert_eq(o.rc, CUDA_ERROR_NO_DEVICE, "cuInit -> %s", ds_test_cu_name(o.rc));
    cr_assert_not_null(strstr(o.err, reason), "the tenant said: %s", o.err);
    cr_assert_eq(ds_test_log_count(&srv, UNIX_REFUSED), refused + 1);
    cr_assert_eq(ds_test_log_count(&srv, EXECUTORS), executors, "an executor was started");
}

TestSuite(token_minted, .init = start_unix_token, .fini = stop, .timeout = 60);

Test(token_minted, a_unix_tenant_without_a_token_is_refused)
{
    struct tenant t = { .name = "pod-1", .server = srv.unix_addr };

    expect_unix_refused(&t, "no token given");
}

Test(token_minted, a_minted_token_serves_its_prefix_until_revoked)
{
    struct tenant t = { .name = "pod-a-1", .server = srv.unix_addr };
    struct tenant other = { .name = "pod-b-1", .server = srv.unix_addr };
    char tok[64], args[128], out[1024];

    mint("pod-a-", tok, sizeof(tok));
    t.token = other.token = tok;
    expect_served(&t);
    cr_assert(ds_test_log_has(&srv, "token accepted for pod-a-1"));
    cr_assert_not(ds_test_log_has(&srv, tok), "the log holds the token");
    expect_unix_refused(&other, "this token is not for this tenant name");
    snprintf(args, sizeof(args), "token revoke %s", tok);
    cr_assert_eq(ds_test_ctl(&srv, args, out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(out, "tokens added in force: 0"), "%s", out);
    expect_unix_refused(&t, "unknown token");
    cr_assert_eq(ds_test_ctl(&srv, args, out, sizeof(out)), 1, "%s", out);
    cr_assert_not_null(strstr(out, "no such token"), "%s", out);
}

Test(token_minted, token_requests_are_checked)
{
    char out[1024];

    cr_assert_eq(ds_test_ctl(&srv, "token add 'a b'", out, sizeof(out)), 1, "%s", out);
    cr_assert_not_null(strstr(out, "printable and without spaces"), "%s", out);
    cr_assert_eq(ds_test_ctl(&srv, "token frob x", out, sizeof(out)), 2, "%s", out);
}

/* Without --unix-token a Unix tenant shows no token, whatever tokens were added. */
Test(token_start, unix_tenants_need_no_token_by_default)
{
    struct tenant t = { .name = "pod-1" };
    char tok[64];
    struct outcome o;

    ds_test_server_start(&srv, 0, NULL);
    t.server = srv.unix_addr;
    mint("pod-a-", tok, sizeof(tok));
    run_tenant(&t, &o);
    cr_assert_eq(o.rc, CUDA_SUCCESS, "-> %s; the tenant said: %s", ds_test_cu_name(o.rc), o.err);
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

/* A token minted with a name names its tenants, whatever their own name: the name
 * status shows and quota rules match. */
Test(token_minted, a_token_with_a_name_names_its_tenants)
{
    struct tenant t = { .name = "k8s-gpu0-1234-", .server = srv.unix_addr };
    char tok[64], out[8192] = "";
    pid_t pid;
    int p[2];

    mint("k8s-gpu0-1234- as ns1/pod-a", tok, sizeof(tok));
    t.token = tok;
    cr_assert(ds_test_log_has(&srv, "naming them ns1/pod-a"));
    expect_served(&t);
    cr_assert(ds_test_log_has(&srv, "token accepted for ns1/pod-a"));
    cr_assert(ds_test_log_has(&srv, "[ns1/pod-a] info: joined"));
    /* While it is connected, status names it so. */
    cr_assert_eq(pipe(p), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char b;

        close(p[1]);
        setenv("DETSHARE_SERVER", srv.unix_addr, 1);
        setenv("DETSHARE_TOKEN", tok, 1);
        setenv("DETSHARE_TENANT", "k8s-gpu0-1234-", 1);
        if (ds_test_connect() != CUDA_SUCCESS)
            _exit(1);
        _exit(read(p[0], &b, 1) >= 0 ? 0 : 1);
    }
    close(p[0]);
    for (int i = 0; i < 250 && strstr(out, " ns1/pod-a (") == NULL; i++) {
        usleep(20000);
        ds_test_ctl(&srv, "status", out, sizeof(out));
    }
    cr_assert_not_null(strstr(out, " ns1/pod-a ("), "%s", out);
    cr_assert_null(strstr(out, "k8s-gpu0-1234-"), "%s", out);
    close(p[1]);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
}
