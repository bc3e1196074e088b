/* detshare-ctl trace (docs/admin.md, "Tracing a tenant"): a tenant's kernels, copies and
 * memsets with device times on its streams, its SM groups and its gate holds, as a
 * Chrome trace; one trace of a name at a time; a clear error for a name not connected.
 * The JSON is checked by tests/support/check_trace.py.  The policy
 * (tests/support/policy_hold.c) holds best-effort tenants while a latency-critical one is
 * connected. */
#include "ds_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;

/* `detshare-ctl trace NAME --seconds S` in the background, its stdout to out and its
 * stderr to err (files in the server's directory). */
static pid_t trace_in_background(const char *name, int seconds, char *out, char *err)
{
    char cmd[1024];
    pid_t pid;

    snprintf(out, 160, "%s/trace.json", srv.dir);
    snprintf(err, 160, "%s/trace.err", srv.dir);
    snprintf(cmd, sizeof(cmd), "exec %s --admin unix:%s.admin trace %s --seconds %d > %s 2> %s",
             DS_CTL_BIN, srv.sock, name, seconds, out, err);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* Not the ends of a peer's pipes (ds_test.h), which must close when it does. */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int finished(pid_t pid)
{
    int status;

    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Until the server says it traces `name` (5 s at most). */
static void wait_traced(const char *name)
{
    char line[128];

    snprintf(line, sizeof(line), "trace of %s: 1 tenant(s)", name);
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, line); i++)
        usleep(10000);
    cr_assert(ds_test_log_has(&srv, line), "the trace of %s never started", name);
}

static int shown_held(const char *name, int held)
{
    const char *want = held ? "\"gated\":true" : "\"gated\":false";
    char out[16384], obj[4096];

    for (int i = 0; i < 500; i++) {
        if (ds_test_ctl(&srv, "status --json", out, sizeof(out)) == 0 &&
            ds_test_tenant_json(out, name, obj, sizeof(obj)) != NULL && strstr(obj, want))
            return 1;
        usleep(10000);
    }
    return 0;
}

static int connect_and_stay(void *arg)
{
    (void)arg;
    return ds_test_connect() == CUDA_SUCCESS ? 0 : 1;
}

static void launch(CUfunction f, CUstream s, CUdeviceptr d, int v)
{
    int n = 256;
    void *params[] = { &d, &v, &n };

    CU_OK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params, NULL));
}

/* The checker's verdict on file `json` with `args`; its output in out. */
static int check(const char *json, const char *args, char *out, size_t len)
{
    char cmd[1024];
    FILE *p;
    size_t n;

    snprintf(cmd, sizeof(cmd), "python3 %s %s %s 2>&1", DS_TRACE_CHECK, json, args);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return WEXITSTATUS(pclose(p));
}

Test(trace, kernels_copies_and_a_gate_hold, .timeout = 120)
{
    char json[160], err[160], out[4096];
    unsigned char host[4096];
    struct ds_test_peer peer;
    CUfunction fill, step;
    CUdeviceptr d;
    CUstream s;
    pid_t ctl;

    ds_test_server_start(&srv, 0, "--policy " DS_HOLD_POLICY_SO);
    setenv("DETSHARE_CLASS", "latency", 1);
    setenv("DETSHARE_TENANT", "urgent", 1);
    ds_test_peer_fork(&peer, connect_and_stay, NULL);
    unsetenv("DETSHARE_CLASS");
    setenv("DETSHARE_TENANT", "traced", 1);
    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuModuleGetFunction(&step, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "step"));
    CU_OK(cuMemAlloc(&d, 1 << 20));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(host, 7, sizeof(host));

    ctl = trace_in_background("traced", 2, json, err);
    wait_traced("traced");
    CU_OK(cuMemcpyHtoD(d, host, sizeof(host)));
    for (int i = 0; i < 3; i++) {
        launch(fill, NULL, d, i);
        launch(step, s, d + 4096, i);
    }
    CU_OK(cuMemsetD8Async(d + 8192, 1, 12345, s));
    CU_OK(cuMemcpyDtoH(host, d, sizeof(host)));
    CU_OK(cuCtxSynchronize());
    /* A latency-critical tenant comes: the policy holds this one while it stays. */
    ds_test_peer_join(&peer);
    cr_assert(shown_held("traced", 1), "the traced tenant was never held");
    launch(fill, NULL, d, 9);
    usleep(300 * 1000);
    ds_test_peer_leave(&peer);
    CU_OK(cuCtxSynchronize());

    cr_assert_eq(finished(ctl), 0, "detshare-ctl trace failed (%s)", err);
    cr_assert_eq(check(json, "tenants=1 kernel=fill kernel=step copy=4096 copy=12345 hold_ms=200",
                       out, sizeof(out)),
                 0, "%s", out);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(d));
    ds_test_server_stop(&srv);
}

Test(trace, a_name_not_connected_is_a_clear_error, .timeout = 60)
{
    char out[1024];

    ds_test_server_start(&srv, 0, NULL);
    cr_assert_eq(ds_test_ctl(&srv, "trace nobody --seconds 1", out, sizeof(out)), 1, "%s", out);
    cr_assert_not_null(strstr(out, "no tenant called nobody is connected"), "%s", out);
    cr_assert_eq(ds_test_ctl(&srv, "trace nobody --seconds 0", out, sizeof(out)), 2, "%s", out);
    ds_test_server_stop(&srv);
}

Test(trace, a_second_trace_of_the_same_tenant_is_refused, .timeout = 60)
{
    char json[160], err[160], out[1024];
    pid_t ctl;

    ds_test_server_start(&srv, 0, NULL);
    setenv("DETSHARE_TENANT", "once", 1);
    ds_test_ctx();
    ctl = trace_in_background("once", 2, json, err);
    wait_traced("once");
    cr_assert_eq(ds_test_ctl(&srv, "trace once --seconds 1", out, sizeof(out)), 1, "%s", out);
    cr_assert_not_null(strstr(out, "a trace of once is running already"), "%s", out);
    cr_assert_eq(finished(ctl), 0, "the first trace failed");
    ds_test_server_stop(&srv);
}
