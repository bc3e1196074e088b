/* Gates: while the control process holds a tenant's gate closed, its launches and
 * everything after them that could see their effects wait in the executor, in order;
 * calls that cannot (allocations, queries) are still answered; opening the gate runs
 * what waited, in the order it came; a tenant that leaves with held work frees it.  The
 * policy (tests/support/policy_hold.c) holds best-effort tenants while a latency-critical
 * one is connected. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct ds_test_server srv;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Whether `detshare-ctl status --json` shows tenant `name` held, within 5 s of asking. */
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

/* The gated_ms that status shows for tenant `name`, or -1. */
static long gated_ms(const char *name)
{
    char out[16384], obj[4096];
    const char *p;

    if (ds_test_ctl(&srv, "status --json", out, sizeof(out)) != 0 ||
        ds_test_tenant_json(out, name, obj, sizeof(obj)) == NULL ||
        (p = strstr(obj, "\"gated_ms\":")) == NULL)
        return -1;
    return strtol(p + strlen("\"gated_ms\":"), NULL, 10);
}

static int connect_and_stay(void *arg)
{
    (void)arg;
    return ds_test_connect() == CUDA_SUCCESS ? 0 : 1;
}

/* A latency-critical tenant in a child process, which connects at ds_test_peer_join and
 * stays until ds_test_peer_leave; forked before this process connects (ds_test.h). */
static void fork_latency_peer(struct ds_test_peer *peer)
{
    setenv("DETSHARE_CLASS", "latency", 1);
    setenv("DETSHARE_TENANT", "urgent", 1);
    ds_test_peer_fork(peer, connect_and_stay, NULL);
    unsetenv("DETSHARE_CLASS");
    setenv("DETSHARE_TENANT", "held", 1);
}

static void launch_fill(CUfunction fill, CUdeviceptr d)
{
    int v = 3, n = 1;
    void *params[] = { &d, &v, &n };

    CU_OK(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
}

Test(gate, held_work_keeps_its_order_and_other_calls_are_answered, .timeout = 120)
{
    struct ds_test_peer peer;
    CUfunction fill;
    CUdeviceptr d, more;
    size_t free_b, total_b;
    unsigned nine = 9, got[4];
    double t0, ahead;

    ds_test_server_start(&srv, 0, "--policy " DS_HOLD_POLICY_SO);
    fork_latency_peer(&peer);
    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuMemAlloc(&d, sizeof(got)));
    CU_OK(cuMemsetD32(d, 0, 4));
    ds_test_peer_join(&peer);
    cr_assert(shown_held("held", 1), "the best-effort tenant was never held");

    /* Held: the launch, and the copies and fills after it, in this order. */
    launch_fill(fill, d + 12);
    CU_OK(cuMemsetD32Async(d, 7, 4, NULL));
    CU_OK(cuMemcpyHtoDAsync(d + 4, &nine, sizeof(nine), NULL));
    CU_OK(cuMemsetD32Async(d + 8, 5, 2, NULL));
    /* Not held: a blocked executor would answer none of these until the gate opens. */
    t0 = now_ms();
    CU_OK(cuMemAlloc(&more, 4096));
    CU_OK(cuMemGetInfo(&free_b, &total_b));
    ahead = now_ms() - t0;
    usleep(100 * 1000);
    cr_expect(shown_held("held", 1), "the gate opened while the latency tenant was there");
    cr_expect_lt(ahead, 1000, "allocating took %.1f ms while held", ahead);

    ds_test_peer_leave(&peer);
    CU_OK(cuMemcpyDtoH(got, d, sizeof(got)));
    cr_expect(got[0] == 7 && got[1] == 9 && got[2] == 5 && got[3] == 5,
              "held work ran out of order: %u %u %u %u", got[0], got[1], got[2], got[3]);
    cr_expect(shown_held("held", 0), "the gate did not open");
    cr_expect_geq(gated_ms("held"), 90, "status shows %ld ms held", gated_ms("held"));
    CU_OK(cuMemFree(more));
    CU_OK(cuMemFree(d));
    ds_test_server_stop(&srv);
}

/* A best-effort tenant in a child process that launches and fills while held, then
 * leaves with all of it still waiting. */
static int launch_while_held(void *arg)
{
    CUfunction fill;
    CUdeviceptr d;

    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS || !shown_held("leaver", 1) ||
        cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS ||
        cuMemAlloc(&d, 1 << 20) != CUDA_SUCCESS)
        return 1;
    for (int i = 0; i < 100; i++) {
        int v = i, n = 256;
        void *params[] = { &d, &v, &n };

        if (cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
            cuMemsetD8Async(d, (unsigned char)i, 1 << 20, NULL) != CUDA_SUCCESS)
            return 2;
    }
    return 0;
}

Test(gate, a_tenant_that_leaves_with_held_work_frees_it, .timeout = 120)
{
    struct ds_test_peer peer;
    CUdeviceptr d;

    ds_test_server_start(&srv, 0, "--policy " DS_HOLD_POLICY_SO);
    setenv("DETSHARE_TENANT", "leaver", 1);
    ds_test_peer_fork(&peer, launch_while_held, NULL);
    setenv("DETSHARE_CLASS", "latency", 1);
    setenv("DETSHARE_TENANT", "urgent", 1);
    ds_test_ctx();
    ds_test_peer_join(&peer);
    ds_test_peer_leave(&peer);
    /* The server goes on serving: this tenant still allocates and synchronises. */
    CU_OK(cuMemAlloc(&d, 4096));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemFree(d));
    unsetenv("DETSHARE_CLASS");
    ds_test_server_stop(&srv);
}
