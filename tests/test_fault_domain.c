/* Fault domains (docs/reliability.md): on the sim, which models MPS's blast radius, a
 * kernel's fault in a tenant of the shared domain ends the context of every other
 * shared tenant, and the server says whose fault it was everywhere: in the log, in each
 * victim's own stderr, in status and in metrics.  A tenant of a domain of its own
 * (isolation=own) keeps running; the culprit's name is quarantined into a domain of its
 * own, which the operator lifts; a tenant arriving meanwhile is served; every
 * connection has an id of its own. */
#include "ds_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;
static char metrics[96];
/* What a victim must read on its stderr: the culprit named, or (anonymous faults, as
 * on a GPU) that it cannot be told. */
static const char *lost_line = "(culprit) faulted on the shared GPU";

/* Exit codes of the children. */
enum { OK = 0, NO_CONNECT = 10, WRONG_ERROR = 11, NO_LINE = 12, NOT_LOST = 13, LOST = 14 };

/* A tenant that allocates, says it is ready on `ready`, then fills and synchronises every
 * 20 ms for `secs` seconds or until a call fails.  Its stderr goes to `err_path`.
 * expect_lost: it must lose its context to a neighbour and be told so on its stderr. */
static int steady_tenant(const char *name, int ready, double secs, int expect_lost,
                         const char *err_path)
{
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CUdeviceptr d;
    CUresult rc = CUDA_SUCCESS;
    char buf[4096] = "";
    FILE *f;

    if (fd < 0 || dup2(fd, 2) < 0)
        return NO_CONNECT;
    close(fd);
    setenv("DETSHARE_TENANT", name, 1);
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 1 << 20) != CUDA_SUCCESS)
        return NO_CONNECT;
    if (write(ready, "r", 1) != 1)
        return NO_CONNECT;
    for (int i = 0; i < (int)(secs * 50) && rc == CUDA_SUCCESS; i++) {
        rc = cuMemsetD32(d, (unsigned)i, 1 << 18);
        if (rc == CUDA_SUCCESS)
            rc = cuCtxSynchronize();
        usleep(20000);
    }
    if (!expect_lost)
        return rc == CUDA_SUCCESS ? OK : LOST;
    if (rc == CUDA_SUCCESS)
        return NOT_LOST;
    if (rc != CUDA_ERROR_ILLEGAL_ADDRESS)
        return WRONG_ERROR;
    f = fopen(err_path, "r");
    if (f == NULL)
        return NO_LINE;
    buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
    fclose(f);
    return strstr(buf, "context lost") && strstr(buf, lost_line) ? OK : NO_LINE;
}

/* The culprit: its kernel writes through a wild pointer (DETSHARE_SIM_FAULT=fill). */
static int culprit(void)
{
    CUfunction fill;
    CUdeviceptr wild = 0x10000;
    int v = 3, n = 32;
    void *params[] = { &wild, &v, &n };

    setenv("DETSHARE_TENANT", "culprit", 1);
    if (ds_test_connect() != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS)
        return NO_CONNECT;
    /* The warm executor started when this tenant took the last one has its context made
     * by now: the fault must end it too. */
    sleep(1);
    if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS)
        return WRONG_ERROR;
    return cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS ? OK : WRONG_ERROR;
}

/* A tenant that allocates and synchronises once, then leaves. */
static int brief(const char *name)
{
    CUdeviceptr d;

    setenv("DETSHARE_TENANT", name, 1);
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 4096) != CUDA_SUCCESS ||
        cuMemsetD32(d, 1, 1024) != CUDA_SUCCESS || cuCtxSynchronize() != CUDA_SUCCESS)
        return NO_CONNECT;
    return OK;
}

static int exit_code(pid_t pid)
{
    int status;

    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static pid_t start_steady(const char *name, int ready, double secs, int expect_lost)
{
    char path[128];
    pid_t pid;

    snprintf(path, sizeof(path), "%s/%s.err", srv.dir, name);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(steady_tenant(name, ready, secs, expect_lost, path));
    return pid;
}

static pid_t start_fn(int (*fn)(void))
{
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(fn());
    return pid;
}

static int run_brief(const char *name)
{
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(brief(name));
    return exit_code(pid);
}

/* The server's Prometheus text, from its Unix metrics endpoint. */
static void scrape(char *out, size_t len)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    size_t have = 0;
    ssize_t n;

    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", metrics);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0, "%s", strerror(errno));
    cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    while (have + 1 < len && (n = read(fd, out + have, len - 1 - have)) > 0)
        have += (size_t)n;
    out[have] = '\0';
    close(fd);
}

static void start_server(const char *extra)
{
    char args[400];

    snprintf(metrics, sizeof(metrics), "/tmp/dsfault-metrics.%d", (int)getpid());
    snprintf(args, sizeof(args), "--quarantine 60 --metrics unix:%s%s%s", metrics,
             extra ? " " : "", extra ? extra : "");
    setenv("DETSHARE_SIM_FAULT", "fill", 1);
    ds_test_server_start(&srv, 0, args);
    unsetenv("DETSHARE_SIM_FAULT");
}

static void stop_server(void)
{
    ds_test_server_stop(&srv);
    unlink(metrics);
}

/* Wait until `n` children said they are ready on pipe end fd. */
static void await_ready(int fd, int n)
{
    char c;

    for (int i = 0; i < n; i++)
        cr_assert_eq(read(fd, &c, 1), 1, "a tenant did not get ready");
}

Test(fault_domain, a_shared_fault_ends_shared_neighbours_only_and_names_its_culprit,
     .timeout = 180)
{
    char out[65536], obj[4096];
    pid_t v1, v2, solo, bad;
    int pipefd[2];

    DS_SIM_ONLY();
    /* A warm executor waits with its context made: the fault ends it too. */
    start_server("--warm 1");
    cr_assert_eq(ds_test_ctl(&srv, "quota solo isolation=own", out, sizeof(out)), 0, "%s", out);
    cr_assert_eq(pipe(pipefd), 0);
    v1 = start_steady("victim-1", pipefd[1], 20, 1);
    v2 = start_steady("victim-2", pipefd[1], 20, 1);
    solo = start_steady("solo", pipefd[1], 4, 0);
    await_ready(pipefd[0], 3);
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(ds_test_tenant_json(out, "solo", obj, sizeof(obj)),
                              "\"isolation\":\"own\""), "%s", obj);
    cr_assert_not_null(strstr(ds_test_tenant_json(out, "victim-1", obj, sizeof(obj)),
                              "\"isolation\":\"shared\""), "%s", obj);
    bad = start_fn(culprit);
    cr_assert_eq(exit_code(bad), OK, "the culprit did not see its own fault");
    /* A tenant arriving while the victims are in their grace is served. */
    cr_assert_eq(run_brief("late"), OK, "a tenant arriving after the fault was not served");
    cr_assert_eq(exit_code(v1), OK, "victim-1 (see %s/victim-1.err)", srv.dir);
    cr_assert_eq(exit_code(v2), OK, "victim-2 (see %s/victim-2.err)", srv.dir);
    cr_assert_eq(exit_code(solo), OK, "the tenant of a domain of its own lost its context");
    for (int i = 0; i < 500 && ds_test_log_count(&srv, "lost its context to tenant") < 2; i++)
        usleep(10000);
    cr_assert(ds_test_log_has(&srv, "(culprit): its own kernel faulted (CUresult 700), ending"));
    cr_assert_eq(ds_test_log_count(&srv, "lost its context to tenant"), 2);
    cr_assert_eq(ds_test_log_count(&srv, "(culprit)'s fault on the shared GPU"), 2);
    cr_assert(ds_test_log_has(&srv, "tenant name culprit is quarantined for 60 s"));
    scrape(out, sizeof(out));
    cr_assert_not_null(strstr(out, "detshare_tenant_faults_total{tenant=\"culprit\",kind=\"own\"} 1"),
                       "%s", out);
    cr_assert_not_null(strstr(out, "detshare_tenant_faults_total{tenant=\"victim-1\",kind=\"neighbour\"} 1"),
                       "%s", out);
    cr_assert_null(strstr(out, "tenant=\"solo\",kind=\"neighbour\"} 1"), "%s", out);
    cr_assert_not_null(strstr(out, "detshare_tenant_quarantined{tenant=\"culprit\"} 1"), "%s", out);
    close(pipefd[0]);
    close(pipefd[1]);
    stop_server();
}

/* The quarantined name runs in a domain of its own until the operator sets its rule's
 * isolation=; the domain shows in status; every connection gets an id of its own. */
Test(fault_domain, quarantine_holds_a_name_apart_until_lifted, .timeout = 120)
{
    char out[65536], obj[4096], first[64], again[64];
    pid_t bad, held;
    int pipefd[2];

    DS_SIM_ONLY();
    start_server(NULL);
    bad = start_fn(culprit);
    cr_assert_eq(exit_code(bad), OK);
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, "is quarantined"); i++)
        usleep(10000);
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(out, "\"quarantine\":[{\"name\":\"culprit\""), "%s", out);
    cr_assert_eq(pipe(pipefd), 0);
    held = start_steady("culprit", pipefd[1], 1, 0);
    await_ready(pipefd[0], 1);
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(strstr(out, "\"tenants\""), "culprit", obj, sizeof(obj));
    cr_assert_not_null(strstr(obj, "\"isolation\":\"own\""), "%s", obj);
    cr_assert_not_null(strstr(obj, "\"quarantined\":true"), "%s", obj);
    cr_assert_not_null(strstr(obj, "\"faults\":1"), "%s", obj);
    cr_assert_eq(exit_code(held), OK);
    cr_assert(ds_test_log_has(&srv, "(culprit) connected on"));
    cr_assert(ds_test_log_has(&srv, "its own domain"), "the quarantined name shared the domain");
    /* The operator lifts it. */
    cr_assert_eq(ds_test_ctl(&srv, "quota culprit isolation=shared", out, sizeof(out)), 0, "%s",
                 out);
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(out, "\"quarantine\":[]"), "%s", out);
    held = start_steady("culprit", pipefd[1], 1, 0);
    await_ready(pipefd[0], 1);
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(strstr(out, "\"tenants\""), "culprit", obj, sizeof(obj));
    cr_assert_not_null(strstr(obj, "\"isolation\":\"shared\""), "%s", obj);
    cr_assert_eq(exit_code(held), OK);
    /* Three connections of one name, three ids. */
    cr_assert_eq(ds_test_log_count(&srv, "(culprit) connected on"), 3);
    snprintf(first, sizeof(first), "tenant 1 (culprit) connected");
    snprintf(again, sizeof(again), "tenant 3 (culprit) connected");
    cr_assert(ds_test_log_has(&srv, first) && ds_test_log_has(&srv, again), "ids were reused");
    close(pipefd[0]);
    close(pipefd[1]);
    stop_server();
}

/* --isolation own: every tenant has a domain of its own, so nobody loses a context to
 * the culprit, and nobody is quarantined (nobody else was hurt). */
Test(fault_domain, isolation_own_by_default_contains_every_fault, .timeout = 120)
{
    pid_t v1, bad;
    int pipefd[2];

    DS_SIM_ONLY();
    start_server("--isolation own");
    cr_assert_eq(pipe(pipefd), 0);
    v1 = start_steady("victim-1", pipefd[1], 3, 0);
    await_ready(pipefd[0], 1);
    bad = start_fn(culprit);
    cr_assert_eq(exit_code(bad), OK);
    cr_assert_eq(exit_code(v1), OK, "a tenant of its own domain lost its context");
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, "its own kernel faulted"); i++)
        usleep(10000);
    cr_assert(ds_test_log_has(&srv, "(culprit): its own kernel faulted (CUresult 700)"));
    cr_assert_not(ds_test_log_has(&srv, "ending the contexts"),
                  "an own tenant's fault was said to end others' contexts");
    cr_assert_not(ds_test_log_has(&srv, "is quarantined"));
    cr_assert_not(ds_test_log_has(&srv, "lost its context"));
    close(pipefd[0]);
    close(pipefd[1]);
    stop_server();
}

/* The tenant's object in status, in obj; fails when it is not there. */
static void tenant_status(const char *name, char *obj, size_t len)
{
    static char out[65536];

    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(ds_test_tenant_json(strstr(out, "\"tenants\""), name, obj, len), "%s",
                       out);
}

/* On a GPU under MPS a fault names no culprit (DETSHARE_SIM_ANONYMOUS_FAULTS models
 * that): every tenant that lost its context goes on probation, in a domain of its own,
 * so the culprit's next fault hurts nobody and names it; it is quarantined and the
 * others go back to the shared domain. */
Test(fault_domain, an_unattributed_fault_puts_its_suspects_on_probation_until_one_faults_alone,
     .timeout = 180)
{
    char out[65536], obj[4096];
    pid_t v1, v2, bad;
    int pipefd[2];

    DS_SIM_ONLY();
    lost_line = "which one cannot be told";
    setenv("DETSHARE_SIM_ANONYMOUS_FAULTS", "1", 1);
    start_server(NULL);
    unsetenv("DETSHARE_SIM_ANONYMOUS_FAULTS");
    cr_assert_eq(pipe(pipefd), 0);
    v1 = start_steady("victim-1", pipefd[1], 20, 1);
    v2 = start_steady("victim-2", pipefd[1], 20, 1);
    await_ready(pipefd[0], 2);
    bad = start_fn(culprit);
    cr_assert_eq(exit_code(bad), OK, "the culprit did not see its fault");
    cr_assert_eq(exit_code(v1), OK, "victim-1 (see %s/victim-1.err)", srv.dir);
    cr_assert_eq(exit_code(v2), OK, "victim-2 (see %s/victim-2.err)", srv.dir);
    for (int i = 0; i < 500 && ds_test_log_count(&srv, "is on probation") < 3; i++)
        usleep(10000);
    cr_assert_eq(ds_test_log_count(&srv, "is on probation"), 3);
    cr_assert_not(ds_test_log_has(&srv, "is quarantined"), "a culprit was guessed");
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(out, "\"quarantine\":[]"), "%s", out);
    cr_assert_not_null(strstr(out, "{\"name\":\"culprit\",\"seconds_left\":"), "%s", out);
    scrape(out, sizeof(out));
    cr_assert_not_null(strstr(out, "detshare_tenant_probation{tenant=\"victim-1\"} 1"), "%s", out);
    cr_assert_not_null(strstr(out, "detshare_tenant_faults_total{tenant=\"victim-1\",kind=\"unknown\"} 1"),
                       "%s", out);

    /* Everyone comes back: the suspects run apart, so the fault is the culprit's alone. */
    v1 = start_steady("victim-1", pipefd[1], 3, 0);
    v2 = start_steady("victim-2", pipefd[1], 3, 0);
    await_ready(pipefd[0], 2);
    tenant_status("victim-1", obj, sizeof(obj));
    cr_assert_not_null(strstr(obj, "\"isolation\":\"own\""), "%s", obj);
    cr_assert_not_null(strstr(obj, "\"probation\":true"), "%s", obj);
    bad = start_fn(culprit);
    cr_assert_eq(exit_code(bad), OK);
    cr_assert_eq(exit_code(v1), OK, "victim-1 lost its context on probation");
    cr_assert_eq(exit_code(v2), OK, "victim-2 lost its context on probation");
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, "it is the culprit"); i++)
        usleep(10000);
    cr_assert(ds_test_log_has(&srv, "tenant name culprit faulted alone while on probation: it is "
                                    "the culprit"));
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(out, "\"quarantine\":[{\"name\":\"culprit\""), "%s", out);
    cr_assert_not_null(strstr(out, "\"probation\":[]"), "%s", out);

    /* Cleared, a victim shares the domain again. */
    v1 = start_steady("victim-1", pipefd[1], 1, 0);
    await_ready(pipefd[0], 1);
    tenant_status("victim-1", obj, sizeof(obj));
    cr_assert_not_null(strstr(obj, "\"isolation\":\"shared\""), "%s", obj);
    cr_assert_eq(exit_code(v1), OK);
    lost_line = "(culprit) faulted on the shared GPU";
    close(pipefd[0]);
    close(pipefd[1]);
    stop_server();
}

/* A tenant that launches one kernel (not fill: on this server fill faults) and leaves. */
static int one_kernel(void)
{
    CUfunction step;
    CUdeviceptr d;
    int k = 3;
    void *params[] = { &d, &k };

    setenv("DETSHARE_TENANT", "victim-1", 1);
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 4096) != CUDA_SUCCESS ||
        cuModuleGetFunction(&step, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "step") !=
            CUDA_SUCCESS)
        return NO_CONNECT;
    if (cuLaunchKernel(step, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS)
        return WRONG_ERROR;
    return cuCtxSynchronize() == CUDA_SUCCESS ? OK : WRONG_ERROR;
}

/* A suspect whose connection ran kernels apart and ended without a fault is cleared. */
Test(fault_domain, a_suspect_that_runs_clean_apart_is_cleared, .timeout = 120)
{
    char obj[4096];
    pid_t v1, bad;
    int pipefd[2];

    DS_SIM_ONLY();
    lost_line = "which one cannot be told";
    setenv("DETSHARE_SIM_ANONYMOUS_FAULTS", "1", 1);
    start_server(NULL);
    unsetenv("DETSHARE_SIM_ANONYMOUS_FAULTS");
    cr_assert_eq(pipe(pipefd), 0);
    v1 = start_steady("victim-1", pipefd[1], 20, 1);
    await_ready(pipefd[0], 1);
    bad = start_fn(culprit);
    cr_assert_eq(exit_code(bad), OK);
    cr_assert_eq(exit_code(v1), OK, "victim-1 (see %s/victim-1.err)", srv.dir);
    for (int i = 0; i < 500 && ds_test_log_count(&srv, "is on probation") < 2; i++)
        usleep(10000);
    /* Memory calls alone do not clear it: nothing of its own could have faulted. */
    cr_assert_eq(run_brief("victim-1"), OK);
    cr_assert_not(ds_test_log_has(&srv, "its probation ends"));
    cr_assert_eq(exit_code(start_fn(one_kernel)), OK);
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, "its probation ends"); i++)
        usleep(10000);
    cr_assert(ds_test_log_has(&srv, "tenant name victim-1 ran kernels in a domain of its own "
                                    "without a fault: its probation ends"));
    v1 = start_steady("victim-1", pipefd[1], 1, 0);
    await_ready(pipefd[0], 1);
    tenant_status("victim-1", obj, sizeof(obj));
    cr_assert_not_null(strstr(obj, "\"isolation\":\"shared\""), "%s", obj);
    cr_assert_not_null(strstr(obj, "\"probation\":false"), "%s", obj);
    cr_assert_eq(exit_code(v1), OK);
    lost_line = "(culprit) faulted on the shared GPU";
    close(pipefd[0]);
    close(pipefd[1]);
    stop_server();
}

/* A tenant that allocates, says it is ready, then makes no call for `secs`: its executor
 * finds its context lost by itself and keeps it for its grace (a second) before leaving.
 * Then its next call must fail. */
static int idle_tenant(const char *name, int ready, unsigned secs)
{
    CUdeviceptr d;

    setenv("DETSHARE_TENANT", name, 1);
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 1 << 20) != CUDA_SUCCESS)
        return NO_CONNECT;
    if (write(ready, "r", 1) != 1)
        return NO_CONNECT;
    sleep(secs);
    return cuCtxSynchronize() != CUDA_SUCCESS ? OK : NOT_LOST;
}

/* MPS admits no new client until every client of the failed daemon has left: a tenant of
 * the domain arriving meanwhile waits for them (recovery.h), then is served. */
Test(fault_domain, a_tenant_arriving_during_recovery_waits_then_is_served, .timeout = 120)
{
    pid_t holder, bad;
    int pipefd[2];

    DS_SIM_ONLY();
    start_server(NULL);
    cr_assert_eq(pipe(pipefd), 0);
    holder = fork();
    cr_assert_geq(holder, 0);
    if (holder == 0)
        _exit(idle_tenant("holder", pipefd[1], 4));
    await_ready(pipefd[0], 1);
    bad = start_fn(culprit);
    cr_assert_eq(exit_code(bad), OK);
    /* The culprit's process may be gone before the control process has read its
     * executor's word of the fault: a tenant arriving in between finds nothing to wait
     * for (CI's plain build once).  It arrives once the fault is known. */
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, "its own kernel faulted"); i++)
        usleep(10000);
    cr_assert_eq(run_brief("late"), OK, "a tenant arriving during the recovery was not served");
    cr_assert(ds_test_log_has(&srv, "tenant late waits for its fault domain to recover"));
    cr_assert(ds_test_log_has(&srv, "fault domain shared recovered (every executor of the "
                                    "fault left"));
    cr_assert_eq(exit_code(holder), OK, "the idle tenant did not lose its context");
    close(pipefd[0]);
    close(pipefd[1]);
    stop_server();
}
