/* Policies with a clock: the temporal baseline (tenants take turns at kernel boundaries,
 * each held while the other has its turn) and slo-aware (a running latency-critical
 * tenant fences best-effort ones onto a few SM groups, and lends them back when it
 * stops). */
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

/* Kernel and synchronize, over and over for `ms`: the longest wait for one of them. */
static double longest_wait_ms(double ms)
{
    CUfunction fill;
    CUdeviceptr d;
    int v = 1, n = 1;
    void *params[] = { &d, &v, &n };
    double end = now_ms() + ms, last = now_ms(), longest = 0;

    if (cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS ||
        cuMemAlloc(&d, 64) != CUDA_SUCCESS)
        return -1;
    while (now_ms() < end) {
        double t;

        if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
            cuCtxSynchronize() != CUDA_SUCCESS)
            return -1;
        t = now_ms();
        if (t - last > longest)
            longest = t - last;
        last = t;
    }
    return longest;
}

/* The second tenant: the same loop; it must have been held for a turn of the other. */
static int other(void *arg)
{
    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS)
        return 1;
    return longest_wait_ms(1200) >= 30 ? 0 : 2;
}

Test(policy, temporal_tenants_take_turns)
{
    struct ds_test_peer peer;
    double longest;

    ds_test_server_start(&srv, 0, "--policy temporal");
    ds_test_peer_fork(&peer, other, NULL);
    ds_test_ctx();
    ds_test_peer_go(&peer);
    /* Turns are 50 ms: each tenant waits about that long while the other runs. */
    longest = longest_wait_ms(1200);
    cr_expect_geq(longest, 30, "the longest wait was %.1f ms", longest);
    ds_test_peer_join(&peer);
    ds_test_peer_leave(&peer);
    ds_test_server_stop(&srv);
}

/* A best-effort tenant that launches a little and stays. */
static int best_effort(void *arg)
{
    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS)
        return 1;
    return longest_wait_ms(50) >= 0 ? 0 : 2;
}

static int log_has_after(int before, const char *needle)
{
    for (int i = 0; i < 300 && ds_test_log_count(&srv, needle) <= before; i++)
        usleep(10000);
    return ds_test_log_count(&srv, needle) > before;
}

/* The policy's latest decision in the server log. */
static void last_policy_line(char *line, size_t len)
{
    char buf[1024];
    FILE *f = fopen(srv.log, "r");

    cr_assert_not_null(f);
    line[0] = '\0';
    while (fgets(buf, sizeof(buf), f) != NULL)
        if (strstr(buf, "policy slo-aware: tenant") != NULL)
            snprintf(line, len, "%s", buf);
    fclose(f);
}

Test(policy, slo_aware_fences_best_effort_while_latency_work_runs)
{
    struct ds_test_peer peer;
    char line[1024];

    DS_SIM_ONLY(); /* the groups below are the sim's 16 */
    ds_test_server_start(&srv, 0, "--policy slo-aware");
    ds_test_peer_fork(&peer, best_effort, NULL);
    ds_test_peer_join(&peer);
    setenv("DETSHARE_CLASS", "latency", 1);
    ds_test_ctx();
    cr_assert_geq(longest_wait_ms(300), 0);
    cr_expect(ds_test_log_has(&srv, "runs on SM groups 0-1 (16 SMs)"),
              "best-effort work was not fenced while latency-critical work ran");
    cr_expect(log_has_after(0, "now runs on SM groups 2-15 (112 SMs)"),
              "the latency-critical tenant did not get the other groups");
    /* Idle now: everything is lent back once the hold (200 ms) has passed. */
    for (int i = 0; i < 150; i++) {
        last_policy_line(line, sizeof(line));
        if (strstr(line, "runs on the whole device"))
            break;
        usleep(10000);
    }
    cr_expect(strstr(line, "runs on the whole device"),
              "the SMs were not lent back when latency-critical work stopped: %s", line);
    ds_test_peer_leave(&peer);
    ds_test_server_stop(&srv);
}

/* A decoding service pauses between requests; a pause shorter than the hold must not drop
 * and raise the fence again, since every change moves every tenant. */
Test(policy, slo_aware_holds_the_fence_through_short_pauses)
{
    struct ds_test_peer peer;
    int before;

    DS_SIM_ONLY();
    ds_test_server_start(&srv, 0, "--policy slo-aware");
    ds_test_peer_fork(&peer, best_effort, NULL);
    ds_test_peer_join(&peer);
    setenv("DETSHARE_CLASS", "latency", 1);
    ds_test_ctx();
    cr_assert_geq(longest_wait_ms(100), 0);
    cr_assert(log_has_after(0, "now runs on SM groups 2-15 (112 SMs)"));
    before = ds_test_log_count(&srv, "policy slo-aware: tenant");
    for (int i = 0; i < 6; i++) {
        usleep(60000);
        cr_assert_geq(longest_wait_ms(20), 0);
    }
    cr_expect_eq(ds_test_log_count(&srv, "policy slo-aware: tenant"), before,
                 "the fence changed during 60 ms pauses");
    ds_test_peer_leave(&peer);
    ds_test_server_stop(&srv);
}
