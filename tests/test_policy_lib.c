/* Policies from shared objects (sched/policy.h): loaded by path at start or at run time,
 * placing tenants as they say, switched to again by name, and refused with a reason when
 * the file is missing or speaks another ABI. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct ds_test_server srv;

static int beta(void *arg)
{
    (void)arg;
    setenv("DETSHARE_TENANT", "beta", 1);
    return ds_test_connect() == CUDA_SUCCESS ? 0 : 1;
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
    char args[1024], out[16384], obj[2048];
    struct ds_test_peer peer;

    DS_SIM_ONLY(); /* the sim's 16 groups of 8 SMs */
    snprintf(args, sizeof(args), "--policy %s", DS_POLICY_SO);
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
    cr_expect(ds_test_log_has(&srv, "cannot load policy /nonexistent/policy.so"));
    snprintf(args, sizeof(args), "policy %s", DS_OLD_POLICY_SO);
    cr_assert_neq(ds_test_ctl(&srv, args, out, sizeof(out)), 0, "%s", out);
    cr_expect(ds_test_log_has(&srv, "does not speak this server's policy ABI"));
    cr_assert_eq(ds_test_ctl(&srv, "policy", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "policy: first-half"), "still in force after the refusals: %s", out);

    ds_test_peer_leave(&peer);
    ds_test_server_stop(&srv);
}
