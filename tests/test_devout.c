/* Device output (printf and assert in kernels): the executor's fd 1 and 2 are its
 * tenant's own stdout and stderr, while the executor's log stays the server's.  The sim
 * runs no kernel code, so on it the tests check the plumbing through /proc: which
 * descriptor each executor holds, and that bytes written to it reach the tenant.  On a
 * GPU, kernels that print check the whole path. */
#include "ds_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 1, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(devout, .init = start, .fini = stop, .timeout = 60);

/* A tenant in a child process with its stdout and stderr on pipes of the test. */
struct tenant {
    pid_t pid;
    int out, err;  /* read ends of its stdout and stderr */
    int up, leave; /* it says it is connected (one byte: 0 or what failed); it is told to go */
};

enum how { LOCAL, NO_STDOUT, REMOTE };

/* What a tenant does once connected; returns 0 or what failed. */
typedef int (*work_fn)(void);

static int connected(void)
{
    return 0;
}

static void child(enum how how, int out, int err, int up, int leave, work_fn work)
{
    char byte = 1;

    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    if (how == NO_STDOUT)
        close(STDOUT_FILENO);
    if (how == REMOTE)
        setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    if (ds_test_connect() == CUDA_SUCCESS)
        byte = (char)work();
    if (write(up, &byte, 1) != 1 || read(leave, &byte, 1) < 0)
        _exit(2);
    _exit(0);
}

static void tenant_start(struct tenant *t, enum how how, work_fn work)
{
    int out[2], err[2], up[2], leave[2];
    char ok = 1;

    cr_assert_eq(pipe(out) | pipe(err) | pipe(up) | pipe(leave), 0);
    t->pid = fork();
    cr_assert_geq(t->pid, 0);
    if (t->pid == 0) {
        close(out[0]);
        close(err[0]);
        close(up[0]);
        close(leave[1]);
        child(how, out[1], err[1], up[1], leave[0], work);
    }
    close(out[1]);
    close(err[1]);
    close(up[1]);
    close(leave[0]);
    t->out = out[0];
    t->err = err[0];
    t->up = up[0];
    t->leave = leave[1];
    cr_assert_eq(read(t->up, &ok, 1), 1, "the tenant died before connecting");
    cr_assert_eq(ok, 0, "the tenant failed at step %d", ok);
}

/* Let the tenant go and wait for it; its stdout is then complete. */
static void tenant_end(struct tenant *t)
{
    char bye = 0;
    int status;

    /* A byte, not the end of the pipe: tenants forked later hold its write end too. */
    cr_assert_eq(write(t->leave, &bye, 1), 1);
    close(t->leave);
    cr_assert_eq(waitpid(t->pid, &status, 0), t->pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void tenant_close(struct tenant *t)
{
    close(t->out);
    close(t->err);
    close(t->up);
}

/* Everything left on fd until its writers are gone, in buf (NUL-terminated). */
static void drain(int fd, char *buf, size_t len)
{
    size_t n = 0;
    ssize_t r;

    while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
}

static int same_file(const char *path, int fd)
{
    struct stat a, b;

    return stat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static pid_t parent_of(pid_t pid)
{
    char path[64], line[256];
    pid_t ppid = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "PPid: %d", &ppid) == 1)
            break;
    fclose(f);
    return ppid;
}

/* The server's child (an executor) whose descriptor `which` is the file of fd; -1 when
 * none is, -2 when more than one is. */
static pid_t executor_holding(int which, int fd)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = -1;

    cr_assert_not_null(d);
    while ((e = readdir(d)) != NULL) {
        pid_t pid = (pid_t)atoi(e->d_name);
        char path[64];

        if (pid <= 0 || parent_of(pid) != srv.pid)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, which);
        if (same_file(path, fd))
            found = found == -1 ? pid : -2;
    }
    closedir(d);
    return found;
}

/* Write msg to descriptor `which` of process pid, through /proc: the same open file. */
static void write_through(pid_t pid, int which, const char *msg)
{
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, which);
    fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0, "cannot open %s", path);
    cr_assert_eq(write(fd, msg, strlen(msg)), (ssize_t)strlen(msg));
    close(fd);
}

static int ignores_sigpipe(pid_t pid)
{
    char path[64], line[256];
    unsigned long long ign = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "SigIgn: %llx", &ign) == 1)
            break;
    fclose(f);
    return (ign >> (SIGPIPE - 1)) & 1;
}

Test(devout, a_local_tenants_executor_writes_on_the_tenants_stdout_and_stderr)
{
    struct tenant t;
    char out[256], err[256];
    pid_t ex;

    tenant_start(&t, LOCAL, connected);
    ex = executor_holding(1, t.out);
    cr_assert_gt(ex, 0, "no single executor holds the tenant's stdout (%d)", (int)ex);
    cr_assert_eq(executor_holding(2, t.err), ex, "its stderr is not the tenant's");
    cr_assert(ignores_sigpipe(ex), "a tenant's closed pipe would kill its executor");
    write_through(ex, 1, "to stdout\n");
    write_through(ex, 2, "to stderr\n");
    tenant_end(&t);
    drain(t.out, out, sizeof(out));
    drain(t.err, err, sizeof(err));
    cr_assert_str_eq(out, "to stdout\n");
    /* The executor's own lines (its tenant joined, left) went to the server's log. */
    cr_assert_str_eq(err, "to stderr\n");
    cr_assert(ds_test_log_has(&srv, "joined as"));
    tenant_close(&t);
}

Test(devout, each_tenant_gets_its_own_output)
{
    struct tenant a, b;

    tenant_start(&a, LOCAL, connected);
    tenant_start(&b, LOCAL, connected);
    cr_assert_gt(executor_holding(1, a.out), 0);
    cr_assert_gt(executor_holding(1, b.out), 0);
    cr_assert_neq(executor_holding(1, a.out), executor_holding(1, b.out));
    tenant_end(&a);
    tenant_end(&b);
    tenant_close(&a);
    tenant_close(&b);
}

Test(devout, a_tenant_without_stdout_gives_its_executor_none)
{
    struct tenant t;
    pid_t ex;
    char path[64], target[64] = "";

    tenant_start(&t, NO_STDOUT, connected);
    ex = executor_holding(2, t.err);
    cr_assert_gt(ex, 0);
    snprintf(path, sizeof(path), "/proc/%d/fd/1", (int)ex);
    cr_assert_gt(readlink(path, target, sizeof(target) - 1), 0);
    cr_assert_str_eq(target, "/dev/null", "the server's stdout would get the device output");
    tenant_end(&t);
    tenant_close(&t);
}

/* The server's child whose fd 1 is not the server's own: the executor of a tenant that
 * handed none over (warm executors still have the server's); -1 when there is none. */
static pid_t executor_with_own_stdout(void)
{
    char path[64];
    struct stat mine, theirs;
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = -1;

    snprintf(path, sizeof(path), "/proc/%d/fd/1", (int)srv.pid);
    cr_assert_eq(stat(path, &mine), 0);
    cr_assert_not_null(d);
    while ((e = readdir(d)) != NULL) {
        pid_t pid = (pid_t)atoi(e->d_name);

        snprintf(path, sizeof(path), "/proc/%d/fd/1", (int)pid);
        if (pid > 0 && parent_of(pid) == srv.pid && stat(path, &theirs) == 0 &&
            (theirs.st_dev != mine.st_dev || theirs.st_ino != mine.st_ino))
            found = pid;
    }
    closedir(d);
    return found;
}

/* A remote tenant hands over no descriptors: what its kernels print becomes log lines
 * tagged with its name, not output of the server's own. */
Test(devout, a_remote_tenants_output_goes_to_the_log_tagged)
{
    struct tenant t;
    pid_t ex;

    tenant_start(&t, REMOTE, connected);
    cr_assert_eq(executor_holding(1, t.out), -1, "a remote tenant's descriptor was taken");
    cr_assert_eq(executor_holding(2, t.err), -1);
    ex = executor_with_own_stdout();
    cr_assert_gt(ex, 0, "no executor has a stdout of its own");
    write_through(ex, 1, "first line\nsecond ");
    write_through(ex, 2, "line\n");
    for (int i = 0; i < 200 && !ds_test_log_has(&srv, "device output: second line"); i++)
        usleep(10000);
    cr_expect(ds_test_log_has(&srv, "] info: device output: first line"));
    cr_expect(ds_test_log_has(&srv, "info: device output: second line"));
    tenant_end(&t);
    tenant_close(&t);
}

/* The tenant's own lines around two launches of a kernel that prints and a
 * synchronisation: natively, the kernel's lines come between them, in launch order. */
static int print_between(void)
{
    CUmodule m;
    CUfunction f;
    int one = 1, two = 2;
    void *first[] = { &one }, *second[] = { &two };

    printf("before\n");
    fflush(stdout);
    if (cuModuleLoad(&m, DS_KERNEL_DIR "/devout.fatbin") != CUDA_SUCCESS)
        return 3;
    if (cuModuleGetFunction(&f, m, "say") != CUDA_SUCCESS)
        return 4;
    if (cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, first, NULL) != CUDA_SUCCESS ||
        cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, second, NULL) != CUDA_SUCCESS)
        return 5;
    if (cuCtxSynchronize() != CUDA_SUCCESS)
        return 6;
    printf("after\n");
    fflush(stdout);
    return 0;
}

Test(devout, what_a_kernel_prints_comes_out_at_the_synchronisation)
{
    const char *want = ds_test_on_sim() ? "before\nafter\n"
                                        : "before\nkernel 1 says hello from block 0\n"
                                          "kernel 2 says hello from block 0\nafter\n";
    struct tenant t;
    char out[512];

    tenant_start(&t, LOCAL, print_between);
    tenant_end(&t);
    drain(t.out, out, sizeof(out));
    cr_assert_str_eq(out, want);
    cr_assert_eq(ds_test_log_count(&srv, "says hello"), 0, "device output in the server's log");
    tenant_close(&t);
}

/* A failed device assert: the synchronisation reports it, and its message is the
 * tenant's. */
static int fail_assert(void)
{
    CUmodule m;
    CUfunction f;
    int bad = 1;
    void *args[] = { &bad };
    CUresult want = ds_test_on_sim() ? CUDA_SUCCESS : CUDA_ERROR_ASSERT;

    if (cuModuleLoad(&m, DS_KERNEL_DIR "/devout.fatbin") != CUDA_SUCCESS)
        return 3;
    if (cuModuleGetFunction(&f, m, "insist") != CUDA_SUCCESS)
        return 4;
    if (cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS)
        return 5;
    return cuCtxSynchronize() == want ? 0 : 6;
}

Test(devout, a_failed_device_assert_is_told_on_the_tenants_stderr)
{
    struct tenant t;
    char err[1024];

    if (ds_test_on_sim())
        cr_skip_test("the sim runs no kernel code");
    tenant_start(&t, LOCAL, fail_assert);
    tenant_end(&t);
    drain(t.err, err, sizeof(err));
    cr_assert_not_null(strstr(err, "Assertion"), "stderr: %s", err);
    cr_assert_eq(ds_test_log_count(&srv, "Assertion"), 0, "device output in the server's log");
    tenant_close(&t);
}
