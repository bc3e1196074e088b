/* Policies from shared objects (sched/policy.h): loaded by path at start or at run time
 * (from the --policy-dir directory), placing tenants as they say, switched to again by
 * name, and refused with a reason when the file is missing or speaks another ABI; one
 * written for the ABI before still loads, and every policy sees the SLO as its ABI says.
 * tests/test_policy_dir.c checks which files may be loaded at run time. */
#include "ds_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct ds_test_server srv;

static int beta(void *arg)
{
    (void)arg;
    setenv("DETSHARE_TENANT", "beta", 1);
    return ds_test_connect() == CUDA_SUCCESS ? 0 : 1;
}

/* A policy directory holding a copy of the library at `from`, as `name`, in dir. */
static void policy_dir_with(char *dir, size_t len, const char *from, const char *name)
{
    char path[256], buf[65536];
    int in = open(from, O_RDONLY), out;
    ssize_t n;

    snprintf(dir, len, "/tmp/dspolicylib.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(chmod(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(in, 0, "%s: %s", from, strerror(errno));
    cr_assert_geq(out, 0, "%s: %s", path, strerror(errno));
    while ((n = read(in, buf, sizeof(buf))) > 0)
        cr_assert_eq(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
}

static void launch_some(void)
{
    CUfunction f;
    CUdeviceptr d;
    int v = 1, n = 1;
    void *params[] = { &d, &v, &n };

    CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuMemAlloc(&d, 64));
    for (int i = 0; i < 3; i++)
        CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuCtxSynchronize());
}

Test(policy_lib, a_loaded_policy_places_tenants_and_bad_ones_are_refused)
{
    char args[1024], out[16384], obj[2048], dir[64];
    struct ds_test_peer peer;

    DS_SIM_ONLY(); /* the sim's 16 groups of 8 SMs */
    policy_dir_with(dir, sizeof(dir), DS_OLD_POLICY_SO, "old.so");
    /* At start, a file anywhere: the operator's own command line. */
    snprintf(args, sizeof(args), "--policy %s --policy-dir %s", DS_POLICY_SO, dir);
    ds_test_server_start(&srv, 0, args);
    cr_assert(ds_test_log_has(&srv, "policy first-half loaded from"));
    /* Forked before this process initialises: a child cannot use its parent's session. */
    ds_test_peer_fork(&peer, beta, NULL);
    setenv("DETSHARE_TENANT", "alpha", 1);
    ds_test_ctx();
    ds_test_peer_join(&peer);
    launch_some();

    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "\"policy\":\"first-half\""), "%s", out);
    ds_test_tenant_json(out, "alpha", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"sms\":64,\"sm_groups\":[0,1,2,3,4,5,6,7]"), "%s", obj);

    /* Switched away and back by its name: it was loaded once. */
    cr_assert_eq(ds_test_ctl(&srv, "policy shared", out, sizeof(out)), 0, "%s", out);
    cr_assert_eq(ds_test_ctl(&srv, "policy first-half", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "policy: first-half"), "%s", out);
    cr_expect_eq(ds_test_log_count(&srv, "policy first-half loaded from"), 1);

    cr_assert_neq(ds_test_ctl(&srv, "policy /nonexistent/policy.so", out, sizeof(out)), 0,
                  "%s", out);
    cr_expect(ds_test_log_has(&srv, "policy /nonexistent/policy.so refused"));
    snprintf(args, sizeof(args), "policy %s/old.so", dir);
    cr_assert_neq(ds_test_ctl(&srv, args, out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "does not speak this server's policy ABI"), "%s", out);
    cr_expect(ds_test_log_has(&srv, "does not speak this server's policy ABI"));
    cr_assert_eq(ds_test_ctl(&srv, "policy", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "policy: first-half"), "still in force after the refusals: %s", out);

    ds_test_peer_leave(&peer);
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

/* Until alpha's decision in status is `want` (for up to 5 s). */
static void wait_decision(const char *want)
{
    char out[16384], obj[2048], field[128];

    snprintf(field, sizeof(field), "\"decision\":\"%s\"", want);
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
        ds_test_tenant_json(out, "alpha", obj, sizeof(obj));
        if (strstr(obj, field))
            return;
        usleep(50000);
    }
    cr_assert_fail("expected %s in %s", field, obj);
}

/* ABI 4 added slo_us, to the microsecond, where ABI 3 had padding: a policy written for
 * ABI 3 still loads and reads slo_ms, rounded up so that a 0.5 ms SLO is not none; one
 * of ABI 4 reads both. */
Test(policy_lib, policies_see_the_slo_their_abi_speaks_of)
{
    char args[1024], out[4096], dir[64];

    policy_dir_with(dir, sizeof(dir), DS_SLO_POLICY_SO, "slo.so");
    snprintf(args, sizeof(args), "--policy %s --policy-dir %s", DS_ABI3_POLICY_SO, dir);
    ds_test_server_start(&srv, 0, args);
    cr_assert(ds_test_log_has(&srv, "policy slo-seen-abi3 loaded from"));
    cr_expect(ds_test_log_has(&srv, "(ABI 3)"));
    setenv("DETSHARE_TENANT", "alpha", 1);
    ds_test_ctx();

    cr_assert_eq(ds_test_ctl(&srv, "tenant alpha class latency slo 0.5", out, sizeof(out)), 0,
                 "%s", out);
    wait_decision("slo_ms 1");
    snprintf(args, sizeof(args), "policy %s/slo.so", dir);
    cr_assert_eq(ds_test_ctl(&srv, args, out, sizeof(out)), 0, "%s", out);
    cr_expect(ds_test_log_has(&srv, "policy slo-seen loaded from"));
    cr_expect(ds_test_log_has(&srv, "(ABI 4)"));
    wait_decision("slo_us 500, slo_ms 1");
    cr_assert_eq(ds_test_ctl(&srv, "tenant alpha class latency slo 4.05", out, sizeof(out)), 0,
                 "%s", out);
    wait_decision("slo_us 4050, slo_ms 5");

    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}
