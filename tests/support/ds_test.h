/*
 * Test support: a detshare-server started as a fixture on a private socket, and
 * assertions for CUresult.  The server's log goes to a file; stopping the server fails
 * the test if the server did not exit cleanly or a sanitizer reported anything in the
 * control process or any executor.
 */
#ifndef DS_TEST_H
#define DS_TEST_H

#include <criterion/criterion.h>
#include <cuda.h>
#include <sys/types.h>

struct ds_test_server {
    pid_t pid;
    char dir[64];
    char sock[100];
    char log[128];
    char unix_addr[160];
    char tcp_addr[64]; /* empty unless started with TCP */
    char token[64];    /* the fixture's token for TCP tenants, empty if it wrote none */
};

/* The device the fixture's servers use: DS_TEST_DEVICE (sim or cuda), default sim. */
const char *ds_test_device(void);

/* 1 when the tests run on the sim device, whose model some assertions rely on. */
int ds_test_on_sim(void);

/* Skip the calling test unless it runs on the sim device. */
#define DS_SIM_ONLY()                                                   \
    do {                                                                \
        if (!ds_test_on_sim())                                          \
            cr_skip_test("asserts the sim device's model");             \
    } while (0)

/* Start `detshare-server --device DEVICE` with extra arguments `args` (may be NULL), on a
 * fresh Unix socket and, when with_tcp, a free loopback TCP port.  Points
 * DETSHARE_SERVER at the Unix socket.  With TCP, unless args give --token-file or
 * --insecure, the server gets a token file of one token (s->token), which DETSHARE_TOKEN
 * is set to, so that TCP tenants authenticate as in production. */
void ds_test_server_start(struct ds_test_server *s, int with_tcp, const char *args);

/* Point DETSHARE_SERVER at the Unix sockets of the n servers s[0 .. n), in that order:
 * one tenant, n devices. */
void ds_test_servers_use(const struct ds_test_server *s, int n);

/* A loopback TCP port that was free a moment ago. */
int ds_test_free_tcp_port(void);

/* SIGTERM the server, wait for it, and assert a clean exit and a clean log. */
void ds_test_server_stop(struct ds_test_server *s);

/* Remove directory `dir` and everything in it. */
void ds_test_remove_tree(const char *dir);

/* 1 when the server log contains `needle`. */
int ds_test_log_has(const struct ds_test_server *s, const char *needle);

/* Run `detshare-ctl ARGS` against server s's admin socket; its output (stdout and
 * stderr) in out.  Returns its exit status. */
int ds_test_ctl(const struct ds_test_server *s, const char *args, char *out, size_t len);

/* The JSON object of tenant `name` in a `status --json` output, cut at its end, in obj. */
const char *ds_test_tenant_json(const char *status, const char *name, char *obj, size_t len);

/* How many lines of the server log contain `needle`. */
int ds_test_log_count(const struct ds_test_server *s, const char *needle);

/* cuInit + primary context made current; returns the context. */
CUcontext ds_test_ctx(void);

/* The same for a tenant in a child process, where an assertion cannot stop the test:
 * returns the first failure, or CUDA_SUCCESS. */
CUresult ds_test_connect(void);

/* A raw connection to s's Unix socket that has shown its preface for tenant `name` and
 * had it accepted (ds_preface.h): what follows reaches an executor, for tests that
 * speak RPC by hand.  Asserts; returns the descriptor. */
int ds_test_raw_connect(const struct ds_test_server *s, const char *name);

/* pid of the one executor waiting in s's pool (started with --warm 1): the only one
 * left once the executors that served the fixture's probes of the socket (connections
 * too) have exited.  0 when there is none after 5 s. */
pid_t ds_test_warm_executor(const struct ds_test_server *s);

/* Stop process pid with SIGSTOP and return once every thread of it has stopped: kill
 * returns as soon as the signal is queued, and the other threads of a process stop only
 * after the one the signal woke has run, so an executor's taker thread could still take
 * a connection and say so.  0, or -1 when some thread had not stopped after 5 s. */
int ds_test_stop_process(pid_t pid);

const char *ds_test_cu_name(CUresult rc);

/* Load the file at `path` (fatbin or cubin) as a module of the current context. */
CUmodule ds_test_module(const char *path);

/* The cubin at `path` with its section table moved past padding: a valid image of
 * `size` bytes (larger than the call ring, say), to free.  NULL when the file cannot be
 * read or is larger than size / 2. */
void *ds_test_padded_cubin(const char *path, size_t size);

/* A second tenant in a child process.  It is forked before the test connects (a forked
 * child of a connected tenant has no connection), runs fn(arg) when ds_test_peer_go or
 * ds_test_peer_join lets it (fn connects, with ds_test_connect, and returns 0 on
 * success), then stays as it is until ds_test_peer_leave. */
struct ds_test_peer {
    pid_t pid;
    int go, up, down;
};

void ds_test_peer_fork(struct ds_test_peer *p, int (*fn)(void *), void *arg);
/* Let it run (returns at once). */
void ds_test_peer_go(struct ds_test_peer *p);
/* Let it run if not yet, and wait until fn has returned; asserts that it succeeded. */
void ds_test_peer_join(struct ds_test_peer *p);
/* Let it disconnect and exit; asserts a clean exit. */
void ds_test_peer_leave(struct ds_test_peer *p);

#define CU_OK(call)                                                                    \
    do {                                                                               \
        CUresult rc_ = (call);                                                         \
        cr_assert_eq(rc_, CUDA_SUCCESS, "%s -> %s", #call, ds_test_cu_name(rc_));      \
    } while (0)

#define CU_IS(call, want)                                                              \
    do {                                                                               \
        CUresult rc_ = (call);                                                         \
        cr_assert_eq(rc_, (want), "%s -> %s, expected %s", #call, ds_test_cu_name(rc_), \
                     ds_test_cu_name(want));                                           \
    } while (0)

#endif
