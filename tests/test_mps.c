/* The MPS control daemon a server owns, driven against a stand-in control program that
 * speaks the same two ways: "-f" serves the control pipe until it reads "quit"; without
 * arguments it forwards its input to that pipe.  It ignores SIGTERM, as a daemon that
 * outlives a killed server would. */
#include "ds_error.h"
#include "mps.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp[] = "/tmp/dsmps.XXXXXX";
static char dir[256];

static const char fake[] =
    "#!/bin/sh\n"
    "trap '' TERM\n"
    "p=\"$CUDA_MPS_PIPE_DIRECTORY/control\"\n"
    "if [ \"$1\" = -f ]; then\n"
    "  mkfifo \"$p\" || exit 1\n"
    "  while :; do\n"
    "    read -r cmd < \"$p\" && [ \"$cmd\" = quit ] && { rm -f \"$p\"; exit 0; }\n"
    "  done\n"
    "fi\n"
    "cat > \"$p\"\n";

static void setup(void)
{
    char prog[300];
    FILE *f;

    cr_assert_not_null(mkdtemp(tmp));
    snprintf(prog, sizeof(prog), "%s/fake-mps-control", tmp);
    f = fopen(prog, "w");
    cr_assert_not_null(f);
    fputs(fake, f);
    fclose(f);
    chmod(prog, 0700);
    setenv("DETSHARE_MPS_CONTROL", prog, 1);
    snprintf(dir, sizeof(dir), "%s/mps", tmp);
}

static void teardown(void)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(mps, .init = setup, .fini = teardown, .timeout = 60);

static int alive(pid_t pid)
{
    return kill(pid, 0) == 0;
}

static long pid_file(void)
{
    char path[300];
    long pid = -1;
    FILE *f;

    snprintf(path, sizeof(path), "%s/daemon.pid", dir);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = -1;
    fclose(f);
    return pid;
}

Test(mps, modes_parse)
{
    enum ds_mps_mode m;

    cr_expect_eq(ds_mps_parse("start", &m), 0);
    cr_expect_eq(m, DS_MPS_START);
    cr_expect_eq(ds_mps_parse("external", &m), 0);
    cr_expect_eq(m, DS_MPS_EXTERNAL);
    cr_expect_eq(ds_mps_parse("off", &m), 0);
    cr_expect_eq(m, DS_MPS_OFF);
    cr_expect_eq(ds_mps_parse("on", &m), DS_EINVAL);
}

Test(mps, start_runs_a_private_daemon_and_stop_ends_it)
{
    struct ds_mps m;
    char want[300];
    struct stat st;
    pid_t pid;

    cr_assert_eq(ds_mps_start(&m, DS_MPS_START, 0, dir), 0);
    pid = m.daemon;
    cr_assert_gt(pid, 0);
    cr_expect(alive(pid));
    cr_expect_eq(pid_file(), (long)pid);
    snprintf(want, sizeof(want), "%s/pipe", dir);
    cr_expect_str_eq(getenv("CUDA_MPS_PIPE_DIRECTORY"), want, "executors are pointed at it");
    cr_assert_eq(stat(dir, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0700);
    ds_mps_stop(&m);
    cr_expect_eq(m.daemon, 0);
    cr_expect(!alive(pid), "the daemon is gone after stop");
    cr_expect_eq(pid_file(), -1);
}

Test(mps, a_second_server_cannot_take_the_same_directory)
{
    struct ds_mps a, b;

    cr_assert_eq(ds_mps_start(&a, DS_MPS_START, 0, dir), 0);
    cr_expect_eq(ds_mps_start(&b, DS_MPS_START, 0, dir), DS_EBUSY);
    ds_mps_stop(&a);
}

/* A server killed with SIGKILL never stops its daemon; the next one does. */
Test(mps, a_daemon_left_by_a_killed_server_is_stopped_at_the_next_start)
{
    struct ds_mps m;
    int fds[2], status;
    long old = -1;
    pid_t server;

    cr_assert_eq(pipe(fds), 0);
    server = fork();
    cr_assert_geq(server, 0);
    if (server == 0) {
        struct ds_mps first;
        char c = 1;

        if (ds_mps_start(&first, DS_MPS_START, 0, dir) != 0)
            _exit(1);
        if (write(fds[1], &c, 1) != 1)
            _exit(2);
        pause();
        _exit(0);
    }
    close(fds[1]);
    {
        char c;

        cr_assert_eq(read(fds[0], &c, 1), 1, "the first server started its daemon");
    }
    old = pid_file();
    cr_assert_gt(old, 0);
    kill(server, SIGKILL);
    waitpid(server, &status, 0);
    usleep(100000);
    cr_assert(alive((pid_t)old), "the stand-in daemon outlives its server");
    cr_assert_eq(ds_mps_start(&m, DS_MPS_START, 0, dir), 0);
    for (int i = 0; i < 500 && alive((pid_t)old); i++)
        usleep(10000);
    cr_expect(!alive((pid_t)old), "the earlier daemon was stopped");
    cr_expect_neq(m.daemon, (pid_t)old);
    ds_mps_stop(&m);
}

Test(mps, off_hides_every_daemon_from_the_executors)
{
    struct ds_mps m;
    char want[300];
    struct stat st;

    cr_assert_eq(ds_mps_start(&m, DS_MPS_OFF, 0, dir), 0);
    cr_expect_eq(m.daemon, 0);
    snprintf(want, sizeof(want), "%s/none", dir);
    cr_expect_str_eq(getenv("CUDA_MPS_PIPE_DIRECTORY"), want);
    cr_expect_eq(stat(want, &st), 0);
    ds_mps_stop(&m);
}

/* Under MPS a client's default connections serialise independent streams (measured on an
 * H100); executors get the driver's non-MPS default unless the operator chose. */
Test(mps, executors_under_mps_get_the_native_number_of_connections)
{
    struct ds_mps m;

    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    cr_assert_eq(ds_mps_start(&m, DS_MPS_OFF, 0, dir), 0);
    cr_expect_null(getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "without MPS nothing changes");
    ds_mps_stop(&m);
    cr_assert_eq(ds_mps_start(&m, DS_MPS_EXTERNAL, 0, dir), 0);
    cr_expect_str_eq(getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "8");
    ds_mps_stop(&m);
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4", 1);
    cr_assert_eq(ds_mps_start(&m, DS_MPS_EXTERNAL, 0, dir), 0);
    cr_expect_str_eq(getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "4", "the operator's setting wins");
    ds_mps_stop(&m);
}

/* A named group's daemon runs beside the server's, with pipes of its own, takes clients
 * some time after it is started (the control process waits for it without blocking),
 * and quits when asked. */
Test(mps, a_group_gets_a_daemon_of_its_own_beside_the_servers)
{
    struct ds_mps m;
    struct ds_mps_group g;
    char want[300];
    pid_t pid;
    int ready = 0;

    cr_assert_eq(ds_mps_start(&m, DS_MPS_START, 0, dir), 0);
    cr_assert_eq(ds_mps_group_start(&g, dir, "g1"), 0);
    pid = g.daemon;
    cr_assert_gt(pid, 0);
    cr_expect_neq(pid, m.daemon);
    snprintf(want, sizeof(want), "%s/group-g1/pipe", dir);
    cr_expect_str_eq(g.pipe, want);
    for (int i = 0; i < 500 && !(ready = ds_mps_group_ready(&g)); i++)
        usleep(10000);
    cr_assert(ready, "the group's daemon never took clients");
    cr_expect(alive(m.daemon), "the server's daemon runs beside it");
    ds_mps_group_stop(&g);
    cr_expect_eq(g.daemon, 0);
    cr_expect(!alive(pid), "the group's daemon is gone after stop");
    cr_expect(alive(m.daemon), "the server's daemon is not");
    ds_mps_stop(&m);
}

/* A group's daemon left by a killed server is stopped when the next server starts, before
 * any tenant could wait for it. */
Test(mps, a_group_daemon_left_by_a_killed_server_is_stopped_at_the_next_start)
{
    struct ds_mps m;
    struct ds_mps_group g;
    pid_t old;

    cr_assert_eq(ds_mps_start(&m, DS_MPS_START, 0, dir), 0);
    cr_assert_eq(ds_mps_group_start(&g, dir, "g1"), 0);
    old = g.daemon;
    for (int i = 0; i < 500 && !ds_mps_group_ready(&g); i++)
        usleep(10000);
    /* As if the server had died: its lock goes, its daemons stay. */
    close(m.lock_fd);
    m.lock_fd = -1;
    cr_assert_eq(ds_mps_start(&m, DS_MPS_START, 0, dir), 0);
    for (int i = 0; i < 500 && alive(old) && waitpid(old, NULL, WNOHANG) == 0; i++)
        usleep(10000);
    cr_expect(!alive(old), "the earlier group daemon was stopped");
    ds_mps_stop(&m);
}
