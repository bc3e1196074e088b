/* Named fault domains (isolation=group:NAME, docs/reliability.md): on the sim, which
 * models MPS's blast radius per MPS daemon, a kernel's fault in a group ends the
 * contexts of that group's tenants alone: tenants of the shared domain, of another group
 * and of domains of their own go on computing, and the culprit is named to its group's
 * victims and quarantined as in the shared domain.  A shared fault leaves groups alone.
 * Status shows each tenant's group and each rule's; group names and their number are
 * checked where rules are set (detshare-ctl, the config file, SIGHUP). */
#include "ds_test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;
static char config[128];

/* Exit codes of the children. */
enum { OK = 0, NO_CONNECT = 10, WRONG_ERROR = 11, NO_LINE = 12, NOT_LOST = 13, LOST = 14 };

/* A tenant that allocates, says it is ready on `ready`, then fills and synchronises every
 * 20 ms for `secs` seconds or until a call fails.  Its stderr goes to DIR/NAME.err.
 * lost_to: the culprit whose fault must end its context (told on its stderr), or NULL:
 * every call must succeed. */
static int steady_tenant(const char *name, int ready, double secs, const char *lost_to)
{
    char path[160], buf[4096] = "", want[128];
    CUresult rc = CUDA_SUCCESS;
    CUdeviceptr d;
    int fd;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.err", srv.dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
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
    if (lost_to == NULL)
        return rc == CUDA_SUCCESS ? OK : LOST;
    if (rc == CUDA_SUCCESS)
        return NOT_LOST;
    if (rc != CUDA_ERROR_ILLEGAL_ADDRESS)
        return WRONG_ERROR;
    if ((f = fopen(path, "r")) == NULL)
        return NO_LINE;
    buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
    fclose(f);
    snprintf(want, sizeof(want), "(%s) faulted on the shared GPU", lost_to);
    return strstr(buf, "context lost: tenant") && strstr(buf, want) ? OK : NO_LINE;
}

/* A culprit named `name`: its kernel writes through a wild pointer
 * (DETSHARE_SIM_FAULT=fill). */
static int culprit(const char *name)
{
    CUfunction fill;
    CUdeviceptr wild = 0x10000;
    int v = 3, n = 32;
    void *params[] = { &wild, &v, &n };

    setenv("DETSHARE_TENANT", name, 1);
    if (ds_test_connect() != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS)
        return NO_CONNECT;
    if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS)
        return WRONG_ERROR;
    return cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS ? OK : WRONG_ERROR;
}

static int exit_code(pid_t pid)
{
    int status;

    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static pid_t start_steady(const char *name, int ready, double secs, const char *lost_to)
{
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(steady_tenant(name, ready, secs, lost_to));
    return pid;
}

static int run_culprit(const char *name)
{
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(culprit(name));
    return exit_code(pid);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* A sim server whose config file holds `rules`, faulting in kernel fill, with more
 * arguments `extra`. */
static void start_server(const char *rules, const char *extra)
{
    char args[400], tmpl[] = "/tmp/dsgroup.XXXXXX";

    cr_assert_not_null(mkdtemp(tmpl));
    snprintf(config, sizeof(config), "%s/detshare.conf", tmpl);
    write_file(config, rules);
    snprintf(args, sizeof(args), "--quarantine 60 --config %s%s%s", config, extra ? " " : "",
             extra ? extra : "");
    setenv("DETSHARE_SIM_FAULT", "fill", 1);
    ds_test_server_start(&srv, 0, args);
    unsetenv("DETSHARE_SIM_FAULT");
}

static void stop_server(void)
{
    char *slash;

    ds_test_server_stop(&srv);
    slash = strrchr(config, '/');
    *slash = '\0';
    ds_test_remove_tree(config);
}

static void await_ready(int fd, int n)
{
    char c;

    for (int i = 0; i < n; i++)
        cr_assert_eq(read(fd, &c, 1), 1, "a tenant did not get ready");
}

static void expect_isolation(const char *status, const char *name, const char *want)
{
    char obj[4096], field[64];

    snprintf(field, sizeof(field), "\"isolation\":\"%s\"", want);
    ds_test_tenant_json(strstr(status, "\"tenants\""), name, obj, sizeof(obj));
    cr_assert_not_null(strstr(obj, field), "%s: %s", name, obj);
}

static void wait_log_count(const char *needle, int n)
{
    for (int i = 0; i < 500 && ds_test_log_count(&srv, needle) < n; i++)
        usleep(10000);
}

static const char rules[] = "quota g1-* isolation=group:g1\n"
                            "quota g2-* isolation=group:g2\n"
                            "quota solo isolation=own\n";

Test(group_domain, a_groups_fault_ends_its_members_contexts_and_no_one_elses, .timeout = 180)
{
    char out[65536];
    pid_t mate, shared, other, solo;
    int pipefd[2];

    DS_SIM_ONLY();
    start_server(rules, "--warm 1");
    cr_assert_eq(pipe(pipefd), 0);
    mate = start_steady("g1-mate", pipefd[1], 20, "g1-bad");
    shared = start_steady("shared", pipefd[1], 5, NULL);
    other = start_steady("g2-other", pipefd[1], 5, NULL);
    solo = start_steady("solo", pipefd[1], 5, NULL);
    await_ready(pipefd[0], 4);
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    expect_isolation(out, "g1-mate", "group:g1");
    expect_isolation(out, "g2-other", "group:g2");
    expect_isolation(out, "shared", "shared");
    expect_isolation(out, "solo", "own");
    cr_assert_eq(ds_test_ctl(&srv, "quota", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(out, "g1-*: memory no limit, sm-share no limit, kernel-time no "
                                   "limit, class claimed, isolation group:g1"),
                       "%s", out);
    cr_assert(ds_test_log_has(&srv, "(g1-mate) connected on"));
    cr_assert(ds_test_log_has(&srv, "group g1's domain"));
    cr_assert_eq(run_culprit("g1-bad"), OK, "the culprit did not see its own fault");
    /* The others go on computing for seconds after the fault. */
    cr_assert_eq(exit_code(mate), OK, "the culprit's group mate (see %s/g1-mate.err)", srv.dir);
    cr_assert_eq(exit_code(shared), OK, "a shared tenant lost its context to a group's fault");
    cr_assert_eq(exit_code(other), OK, "another group's tenant lost its context");
    cr_assert_eq(exit_code(solo), OK, "a tenant of its own domain lost its context");
    wait_log_count("lost its context to tenant", 1);
    cr_assert(ds_test_log_has(&srv, "(g1-bad): its own kernel faulted (CUresult 700), ending"));
    cr_assert_eq(ds_test_log_count(&srv, "lost its context to tenant"), 1);
    cr_assert(ds_test_log_has(&srv, "(g1-mate) lost its context to tenant"));
    cr_assert(ds_test_log_has(&srv, "tenant name g1-bad is quarantined for 60 s"));
    /* Quarantined, the culprit's name runs in a domain of its own, whatever its group. */
    mate = start_steady("g1-bad", pipefd[1], 0.2, NULL);
    await_ready(pipefd[0], 1);
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    expect_isolation(out, "g1-bad", "own");
    cr_assert_eq(exit_code(mate), OK);
    close(pipefd[0]);
    close(pipefd[1]);
    stop_server();
}

Test(group_domain, a_shared_fault_leaves_groups_alone, .timeout = 180)
{
    pid_t mate, victim;
    int pipefd[2];

    DS_SIM_ONLY();
    start_server(rules, NULL);
    cr_assert_eq(pipe(pipefd), 0);
    mate = start_steady("g1-mate", pipefd[1], 5, NULL);
    victim = start_steady("victim", pipefd[1], 20, "bad");
    await_ready(pipefd[0], 2);
    cr_assert_eq(run_culprit("bad"), OK);
    cr_assert_eq(exit_code(victim), OK, "the shared victim (see %s/victim.err)", srv.dir);
    cr_assert_eq(exit_code(mate), OK, "a group's tenant lost its context to a shared fault");
    wait_log_count("lost its context to tenant", 1);
    cr_assert_eq(ds_test_log_count(&srv, "lost its context to tenant"), 1);
    cr_assert(ds_test_log_has(&srv, "(victim) lost its context to tenant"));
    close(pipefd[0]);
    close(pipefd[1]);
    stop_server();
}

/* The server's default may name a group; detshare-ctl refuses bad names before asking,
 * and the server refuses a rule that makes too many groups, with the default counted;
 * SIGHUP keeps the rules in force when the file names too many. */
Test(group_domain, group_names_and_their_number_are_checked, .timeout = 120)
{
    char out[65536], cmd[128], many[1024] = "";
    pid_t t;
    int pipefd[2];

    DS_SIM_ONLY();
    start_server("quota cfg isolation=group:from-file\n", "--isolation group:def");
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(out, "\"isolation\":\"group:def\""), "%s", out);
    cr_assert_eq(ds_test_ctl(&srv, "quota", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(out, "isolation group:from-file"), "%s", out);
    cr_assert_eq(pipe(pipefd), 0);
    t = start_steady("anyone", pipefd[1], 0.2, NULL);
    await_ready(pipefd[0], 1);
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    expect_isolation(out, "anyone", "group:def");
    cr_assert_eq(exit_code(t), OK);
    const char *bad[] = { "group:", "group:a/b", "group:..",
                          "group:0123456789012345678901234567890123" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(cmd, sizeof(cmd), "quota x isolation=%s", bad[i]);
        cr_assert_neq(ds_test_ctl(&srv, cmd, out, sizeof(out)), 0, "%s", bad[i]);
        cr_assert_not_null(strstr(out, "group:NAME"), "%s: %s", bad[i], out);
    }
    /* def and from-file are two; six more make eight. */
    for (int i = 3; i <= 8; i++) {
        snprintf(cmd, sizeof(cmd), "quota t%d isolation=group:g%d", i, i);
        cr_assert_eq(ds_test_ctl(&srv, cmd, out, sizeof(out)), 0, "%s", out);
    }
    cr_assert_eq(ds_test_ctl(&srv, "quota t3b isolation=group:g3", out, sizeof(out)), 0, "%s",
                 out);
    cr_assert_neq(ds_test_ctl(&srv, "quota t9 isolation=group:g9", out, sizeof(out)), 0);
    cr_assert_not_null(strstr(out, "too many named fault domains"), "%s", out);
    cr_assert_eq(ds_test_ctl(&srv, "quota", out, sizeof(out)), 0, "%s", out);
    cr_assert_null(strstr(out, "t9"), "the refused rule was kept: %s", out);
    /* A file of nine groups is refused on SIGHUP, whole. */
    for (int i = 1; i <= 9; i++) {
        snprintf(cmd, sizeof(cmd), "quota f%d isolation=group:f%d\n", i, i);
        strcat(many, cmd);
    }
    write_file(config, many);
    cr_assert_eq(kill(srv.pid, SIGHUP), 0);
    wait_log_count("SIGHUP handled", 1);
    cr_assert(ds_test_log_has(&srv, "too many named fault domains"));
    cr_assert_eq(ds_test_ctl(&srv, "quota", out, sizeof(out)), 0, "%s", out);
    cr_assert_null(strstr(out, "f9"), "%s", out);
    cr_assert_not_null(strstr(out, "t8"), "%s", out);
    close(pipefd[0]);
    close(pipefd[1]);
    stop_server();
}
