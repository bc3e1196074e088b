/* detshare-server as an operator meets it: options, errors, start and stop. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int run(const char *args, char *out, size_t len)
{
    char cmd[1024];
    FILE *p;
    size_t n;
    int status;

    snprintf(cmd, sizeof(cmd), "%s %s 2>&1", DS_SERVER_BIN, args);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(server, help_and_bad_options)
{
    char out[8192];

    cr_assert_eq(run("--help", out, sizeof(out)), 0);
    cr_assert(strstr(out, "--listen") && strstr(out, "--sim-memory"));
    cr_assert_eq(run("--bogus", out, sizeof(out)), 2);
    cr_assert_eq(run("--listen nowhere", out, sizeof(out)), 2);
    cr_assert(strstr(out, "--listen"), "%s", out);
    cr_assert_eq(run("--sim-memory lots", out, sizeof(out)), 2);
    cr_assert_eq(run("--device quantum", out, sizeof(out)), 2);
    cr_assert(strstr(out, "expected sim, cuda or auto"), "%s", out);
}

Test(server, an_unusable_gpu_is_refused_with_the_reason)
{
    char out[4096];

    cr_assert_eq(run("--device cuda --gpu 999 --listen unix:/tmp/ds-never.sock", out,
                     sizeof(out)), 2);
    cr_assert(strstr(out, "GPU 999 cannot be used"), "%s", out);
}

Test(server, a_second_server_on_the_same_socket_is_refused)
{
    struct ds_test_server s;
    char out[4096], args[256];

    ds_test_server_start(&s, 0, NULL);
    snprintf(args, sizeof(args), "--device sim --listen unix:%s", s.sock);
    cr_assert_eq(run(args, out, sizeof(out)), 1);
    cr_assert(strstr(out, "already listening"), "%s", out);
    ds_test_server_stop(&s);
}

Test(server, a_stale_socket_file_is_replaced)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct ds_test_server s;
    int fd;

    ds_test_server_start(&s, 0, NULL);
    ds_test_server_stop(&s);
    /* Leave a socket file with nobody behind it, as a crashed server would. */
    cr_assert_eq(mkdir(s.dir, 0700), 0);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", s.sock);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    close(fd);
    cr_assert_eq(access(s.sock, F_OK), 0);
    ds_test_server_start(&s, 0, NULL);
    CU_OK(cuInit(0));
    ds_test_server_stop(&s);
}

Test(server, sigterm_closes_connected_tenants_and_exits_zero)
{
    struct ds_test_server s;
    CUdeviceptr d;

    ds_test_server_start(&s, 0, NULL);
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 1 << 20));
    ds_test_server_stop(&s); /* asserts exit status 0 */
    CU_IS(cuMemAlloc(&d, 1 << 20), CUDA_ERROR_DEVICE_UNAVAILABLE);
    CU_IS(cuCtxSynchronize(), CUDA_ERROR_DEVICE_UNAVAILABLE);
}

/* One tenant in a child process: 0 when it got a context and memory. */
static int tenant_status(void)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        CUdeviceptr d;

        _exit(ds_test_connect() == CUDA_SUCCESS && cuMemAlloc(&d, 4096) == CUDA_SUCCESS ? 0 : 1);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The executor of a tenant was started before it connected, and the pool is refilled
 * for the next one (the fixture's own probes of the socket are connections too). */
Test(server, tenants_get_executors_started_ahead)
{
    struct ds_test_server s;

    ds_test_server_start(&s, 0, "--warm 1");
    cr_assert_eq(tenant_status(), 0);
    cr_assert_eq(tenant_status(), 0);
    cr_assert_geq(ds_test_log_count(&s, "started ahead"), 2);
    cr_assert_eq(ds_test_log_count(&s, "started for it"), 0);
    ds_test_server_stop(&s);
}

Test(server, without_a_pool_each_executor_starts_at_its_connection)
{
    struct ds_test_server s;

    ds_test_server_start(&s, 0, "--warm 0");
    cr_assert_eq(tenant_status(), 0);
    cr_assert_geq(ds_test_log_count(&s, "started for it"), 1);
    cr_assert_eq(ds_test_log_count(&s, "started ahead"), 0);
    ds_test_server_stop(&s);
}

Test(server, a_dead_warm_executor_is_reported_and_the_next_tenant_still_served)
{
    struct ds_test_server s;
    pid_t victim;

    ds_test_server_start(&s, 0, "--warm 1");
    victim = ds_test_warm_executor(&s);
    cr_assert_gt(victim, 0, "no executor waits in the pool");
    cr_assert_eq(kill(victim, SIGKILL), 0);
    for (int i = 0; i < 200 && !ds_test_log_has(&s, "exited before any tenant came"); i++)
        usleep(10000);
    cr_assert(ds_test_log_has(&s, "exited before any tenant came: executor killed by signal 9"));
    cr_assert_eq(tenant_status(), 0);
    cr_assert(ds_test_log_has(&s, "started for it"));
    ds_test_server_stop(&s);
}

/* A warm executor whose context is no MPS client (the sim made to say so) leaves, and
 * the server starts another a second later; once contexts are MPS clients again, the
 * pool stays full and tenants are served. */
Test(server, a_warm_executor_without_mps_is_replaced)
{
    const char *said = "came up as no MPS client";
    char flag[] = "/tmp/ds-nomps.XXXXXX";
    struct ds_test_server s;
    int fd = mkstemp(flag), n;

    cr_assert_geq(fd, 0);
    close(fd);
    setenv("DETSHARE_SIM_NO_MPS", flag, 1);
    ds_test_server_start(&s, 0, "--warm 1");
    unsetenv("DETSHARE_SIM_NO_MPS");
    for (int i = 0; i < 500 && ds_test_log_count(&s, said) < 2; i++)
        usleep(10000);
    cr_assert_geq(ds_test_log_count(&s, said), 2, "a warm executor was not started again");
    unlink(flag);
    /* One may have been opening its context as the file went. */
    usleep(1500000);
    n = ds_test_log_count(&s, said);
    usleep(1500000);
    cr_expect_eq(ds_test_log_count(&s, said), n, "warm executors still left with MPS back");
    cr_assert_gt(ds_test_warm_executor(&s), 0, "no executor waits in the pool");
    cr_assert_eq(tenant_status(), 0);
    cr_expect(!ds_test_log_has(&s, "warm executors in a row were no MPS clients"));
    ds_test_server_stop(&s);
}

/* A tenant that comes while a warm executor leaves for want of MPS (here while its
 * context closes, which takes 2 s: under a loaded CI machine the tenant took longer than
 * 500 ms to come) goes to another executor, not down with it. */
Test(server, a_tenant_handed_to_a_leaving_executor_is_served_by_another)
{
    const char *leaving = "leaving for an executor that is an MPS client";
    char flag[] = "/tmp/ds-nomps.XXXXXX";
    struct ds_test_server s;
    int fd = mkstemp(flag);

    cr_assert_geq(fd, 0);
    close(fd);
    setenv("DETSHARE_SIM_NO_MPS", flag, 1);
    setenv("DETSHARE_SIM_CLOSE_MS", "2000", 1);
    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&s, 0, "--warm 1");
    unsetenv("DETSHARE_SIM_NO_MPS");
    unsetenv("DETSHARE_SIM_CLOSE_MS");
    unsetenv("DETSHARE_LOG");
    for (int i = 0; i < 500 && !ds_test_log_has(&s, leaving); i++)
        usleep(10000);
    cr_assert(ds_test_log_has(&s, leaving), "no warm executor left");
    cr_assert_eq(tenant_status(), 0, "the tenant went down with the leaving executor");
    cr_expect(ds_test_log_has(&s, "its executor was leaving; executor pid"));
    unlink(flag);
    ds_test_server_stop(&s);
}

Test(server, an_executor_started_by_hand_refuses_to_run)
{
    char out[4096];

    cr_assert_eq(run("--executor 0 3</dev/null", out, sizeof(out)), 1);
    cr_assert(strstr(out, "without a valid control block"), "%s", out);
}
