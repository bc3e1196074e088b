/* SM partitions: the static policy gives tenants disjoint SM groups, executors move a
 * tenant's work there at its next kernel, and a tenant that leaves gives its groups
 * back.  On the sim a kernel's modelled time follows its partition's SMs; on a GPU, a
 * chain of kernels checks that a move loses and reorders nothing. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct ds_test_server srv;

static CUmodule load(void)
{
    return ds_test_module(DS_KERNEL_DIR "/launch.fatbin");
}

/* Milliseconds four wide kernels take (modelled, on the sim).  Timed from the end of a
 * first one, so the queue is never empty and the host's own delays do not count. */
static float wide_kernels_ms(CUfunction fill, CUdeviceptr d)
{
    int v = 1, n = 0;
    void *params[] = { &d, &v, &n };
    CUevent a, b;
    float ms;

    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, 0));
    for (int i = 0; i < 5; i++) {
        CU_OK(cuLaunchKernel(fill, 132 * 2 * 5000, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        if (i == 0)
            CU_OK(cuEventRecord(a, NULL));
    }
    CU_OK(cuEventRecord(b, NULL));
    CU_OK(cuEventSynchronize(b));
    CU_OK(cuEventElapsedTime(&ms, a, b));
    cuEventDestroy(a);
    cuEventDestroy(b);
    return ms;
}

/* `count` links of the chain, starting at link k. */
static void chain(CUfunction step, CUdeviceptr x, int k, int count)
{
    for (int i = k; i < k + count; i++) {
        void *params[] = { &x, &i };

        CU_OK(cuLaunchKernel(step, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    }
}

/* Links of the chain from *k on, ten at a time, until the server has logged `needle`
 * more than `before` times (a move happens at a kernel once its context is made). */
static void chain_until(CUfunction step, CUdeviceptr x, int *k, int before, const char *needle)
{
    for (int i = 0; i < 500 && ds_test_log_count(&srv, needle) <= before; i++) {
        chain(step, x, *k, 10);
        *k += 10;
        CU_OK(cuCtxSynchronize());
    }
}

/* The second tenant: joins and runs kernels for a while. */
static int neighbour(void *arg)
{
    CUfunction fill;
    CUdeviceptr d;
    int v = 2, n = 1;
    void *params[] = { &d, &v, &n };

    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 64) != CUDA_SUCCESS)
        return 1;
    if (cuModuleGetFunction(&fill, load(), "fill") != CUDA_SUCCESS)
        return 2;
    /* Kernels for a while: on a GPU its partition's context takes milliseconds to make,
     * and it moves at a kernel after that. */
    for (int i = 0; i < 100; i++) {
        if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
            cuCtxSynchronize() != CUDA_SUCCESS)
            return 3;
        usleep(1000);
    }
    return 0;
}

/* Wait until the server has logged `needle` more than `before` times. */
static void wait_log_after(int before, const char *needle)
{
    for (int i = 0; i < 500 && ds_test_log_count(&srv, needle) <= before; i++)
        usleep(10000);
    cr_assert_gt(ds_test_log_count(&srv, needle), before, "the server never logged \"%s\"",
                 needle);
}

static void wait_log(const char *needle)
{
    wait_log_after(0, needle);
}

Test(partition, static_partitions_are_disjoint_moved_at_a_kernel_and_given_back)
{
    struct ds_test_peer nb;
    float alone, shared, again;
    CUfunction fill, step;
    CUdeviceptr d, chain_x;
    CUmodule m;
    const char *lower;
    int x, k, whole;

    ds_test_server_start(&srv, 0, "--policy static");
    ds_test_peer_fork(&nb, neighbour, NULL);
    ds_test_ctx();
    m = load();
    CU_OK(cuModuleGetFunction(&fill, m, "fill"));
    CU_OK(cuModuleGetFunction(&step, m, "step"));
    CU_OK(cuMemAlloc(&d, 4096));
    CU_OK(cuMemAlloc(&chain_x, sizeof(int)));
    CU_OK(cuMemsetD32(chain_x, 0, 1));
    chain(step, chain_x, 0, 100);
    k = 100;
    alone = wide_kernels_ms(fill, d);

    ds_test_peer_join(&nb);
    /* The first tenant joined first: the lower half, from a kernel soon after; the
     * second one moved to the upper half while it ran.  The sim has 16 groups of 8 SMs;
     * an H100's driver makes 15 of its 132 SMs. */
    lower = ds_test_on_sim() ? "now runs on SM groups 0-7 (64 SMs)"
                             : "now runs on SM groups 0-6 (56 SMs)";
    chain_until(step, chain_x, &k, 0, lower);
    shared = wide_kernels_ms(fill, d);
    wait_log(lower);
    wait_log(ds_test_on_sim() ? "now runs on SM groups 8-15 (64 SMs)"
                              : "now runs on SM groups 7-13 (56 SMs)");

    whole = ds_test_log_count(&srv, "runs on the whole device");
    ds_test_peer_leave(&nb);
    /* The first tenant alone again (the server's own probes of the socket, which are
     * tenants for a moment, may have said so before). */
    wait_log_after(whole, "runs on the whole device");
    whole = ds_test_log_count(&srv, "now runs on the whole device");
    chain_until(step, chain_x, &k, whole, "now runs on the whole device");
    again = wide_kernels_ms(fill, d);
    wait_log_after(whole, "now runs on the whole device");
    CU_OK(cuMemcpyDtoH(&x, chain_x, sizeof(x)));
    if (ds_test_on_sim()) {
        /* 132 SMs, then 64, then 132 again: twice the waves on half the SMs. */
        cr_expect(shared > 1.8f * alone && shared < 2.2f * alone, "alone %.4f ms, on half %.4f",
                  (double)alone, (double)shared);
        cr_expect(again < 1.1f * alone, "alone %.4f ms, after %.4f", (double)alone, (double)again);
    } else {
        cr_expect_eq(x, k, "the chain of %d kernels across two moves ended at %d", k, x);
    }
    ds_test_server_stop(&srv);
}

Test(partition, the_shared_policy_leaves_everyone_on_every_sm)
{
    struct ds_test_peer nb;

    ds_test_server_start(&srv, 0, "--policy shared");
    cr_assert(ds_test_log_has(&srv, "policy shared"));
    ds_test_peer_fork(&nb, neighbour, NULL);
    ds_test_ctx();
    ds_test_peer_join(&nb);
    ds_test_peer_leave(&nb);
    cr_assert_not(ds_test_log_has(&srv, "runs on SM groups"));
    ds_test_server_stop(&srv);
}

/* A second tenant that keeps its SMs busy for a while: wide kernels queued, no wait. */
static int busy_neighbour(void *arg)
{
    CUfunction fill;
    CUdeviceptr d;
    int v = 2, n = 0;
    void *params[] = { &d, &v, &n };

    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 64) != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, load(), "fill") != CUDA_SUCCESS)
        return 1;
    for (int i = 0; i < 400; i++)
        if (cuLaunchKernel(fill, 132 * 2 * 5000, 1, 1, 256, 1, 1, 0, NULL, params, NULL) !=
            CUDA_SUCCESS)
            return 2;
    return cuStreamQuery(NULL) == CUDA_ERROR_NOT_READY ? 0 : 3;
}

/* The sim's contention: beside another tenant's kernels on the same SMs a kernel gets
 * half of them. */
Test(partition, tenants_on_the_same_sms_slow_each_other_on_the_sim)
{
    struct ds_test_peer nb;
    float alone, contended;
    CUfunction fill;
    CUdeviceptr d;

    DS_SIM_ONLY();
    ds_test_server_start(&srv, 0, NULL);
    ds_test_peer_fork(&nb, busy_neighbour, NULL);
    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, load(), "fill"));
    CU_OK(cuMemAlloc(&d, 4096));
    alone = wide_kernels_ms(fill, d);
    ds_test_peer_join(&nb);
    contended = wide_kernels_ms(fill, d);
    cr_expect(contended > 1.6f * alone && contended < 2.4f * alone,
              "alone %.3f ms, beside a busy tenant on the same SMs %.3f", (double)alone,
              (double)contended);
    ds_test_peer_leave(&nb);
    ds_test_server_stop(&srv);
}

/* On disjoint partitions a busy neighbour costs nothing: half the SMs, half the speed. */
Test(partition, disjoint_partitions_do_not_slow_each_other_on_the_sim)
{
    struct ds_test_peer nb;
    float alone, half;
    CUfunction fill, step;
    CUdeviceptr d, x;
    CUmodule m;
    int k = 0;

    DS_SIM_ONLY();
    ds_test_server_start(&srv, 0, "--policy static");
    ds_test_peer_fork(&nb, busy_neighbour, NULL);
    ds_test_ctx();
    m = load();
    CU_OK(cuModuleGetFunction(&fill, m, "fill"));
    CU_OK(cuModuleGetFunction(&step, m, "step"));
    CU_OK(cuMemAlloc(&d, 4096));
    CU_OK(cuMemAlloc(&x, sizeof(int)));
    CU_OK(cuMemsetD32(x, 0, 1));
    alone = wide_kernels_ms(fill, d);
    ds_test_peer_join(&nb);
    chain_until(step, x, &k, 0, "now runs on SM groups 0-7 (64 SMs)");
    half = wide_kernels_ms(fill, d);
    cr_expect(half > 1.8f * alone && half < 2.2f * alone,
              "alone %.3f ms, on half the SMs beside a busy tenant on the other half %.3f",
              (double)alone, (double)half);
    ds_test_peer_leave(&nb);
    ds_test_server_stop(&srv);
}

/* A tenant told to give SMs up waits for its partition's context at its next kernel,
 * even when it takes long to make: kernels launched right after the decision run on the
 * half, never on the neighbour's SMs (the sim takes DETSHARE_SIM_PCTX_MS to make one; an
 * H100 took up to 170 ms). */
Test(partition, a_tenant_giving_sms_up_waits_for_its_new_context)
{
    struct ds_test_peer nb;
    float alone, half;
    CUfunction fill;
    CUdeviceptr d;

    DS_SIM_ONLY();
    setenv("DETSHARE_SIM_PCTX_MS", "300", 1);
    ds_test_server_start(&srv, 0, "--policy static");
    unsetenv("DETSHARE_SIM_PCTX_MS");
    ds_test_peer_fork(&nb, neighbour, NULL);
    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, load(), "fill"));
    CU_OK(cuMemAlloc(&d, 4096));
    alone = wide_kernels_ms(fill, d);
    ds_test_peer_go(&nb);
    /* The control process's decision, logged before any executor moves. */
    wait_log("runs on SM groups 0-7 (64 SMs)");
    half = wide_kernels_ms(fill, d);
    cr_expect(ds_test_log_has(&srv, "now runs on SM groups 0-7 (64 SMs)"),
              "the tenant launched before it moved");
    cr_expect(half > 1.8f * alone && half < 2.2f * alone,
              "alone %.3f ms, right after being told to give half the SMs up %.3f",
              (double)alone, (double)half);
    ds_test_peer_join(&nb);
    ds_test_peer_leave(&nb);
    ds_test_server_stop(&srv);
}

/* How long the last move logged with `needle` took, in microseconds (-1: none). */
static long last_move_us(const char *needle)
{
    char line[1024];
    FILE *f = fopen(srv.log, "r");
    long us = -1;

    cr_assert_not_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *m = strstr(line, needle);

        if (m != NULL && (m = strstr(m, "(moved in ")) != NULL)
            us = strtol(m + strlen("(moved in "), NULL, 10);
    }
    fclose(f);
    return us;
}

Test(partition, a_warm_executor_makes_the_contexts_of_groups_used_before)
{
    const char *upper = "now runs on SM groups 8-15 (64 SMs)";
    struct ds_test_peer nb, late;
    CUfunction step;
    CUdeviceptr x;
    int k = 0, left;
    long first, second;

    DS_SIM_ONLY();
    setenv("DETSHARE_SIM_PCTX_MS", "300", 1);
    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 0, "--policy static --warm 1");
    unsetenv("DETSHARE_SIM_PCTX_MS");
    unsetenv("DETSHARE_LOG");
    ds_test_peer_fork(&nb, neighbour, NULL);
    ds_test_peer_fork(&late, neighbour, NULL);
    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&step, load(), "step"));
    CU_OK(cuMemAlloc(&x, sizeof(int)));
    CU_OK(cuMemsetD32(x, 0, 1));
    /* The first neighbour's executor makes the upper half's context when it is told to
     * go there (300 ms on this sim); the executor started after it, while both halves
     * were in use, makes them ahead of its tenant. */
    ds_test_peer_join(&nb);
    chain_until(step, x, &k, 0, "now runs on SM groups 0-7 (64 SMs)");
    wait_log(upper);
    first = last_move_us(upper);
    left = ds_test_log_count(&srv, ") left: ");
    ds_test_peer_leave(&nb);
    /* Once the server has seen it go: a late tenant that comes before splits the GPU in
     * three, into groups nobody made ahead. */
    wait_log_after(left, ") left: ");
    wait_log("SM groups 8-15 (64 SMs) made ahead of the tenant");
    ds_test_peer_join(&late);
    wait_log_after(1, upper);
    second = last_move_us(upper);
    cr_expect(first >= 100000, "the first move to the upper half took %ld us", first);
    cr_expect(second >= 0 && second < 100000,
              "a move to a context made ahead took %ld us (the first: %ld us)", second, first);
    ds_test_peer_leave(&late);
    /* Each executor makes a context ahead once, not at every look (every 200 ms). */
    usleep(1200000);
    cr_expect_leq(ds_test_log_count(&srv, "SM groups 8-15 (64 SMs) made ahead"),
                  ds_test_log_count(&srv, "started ahead"), "made again and again");
    ds_test_server_stop(&srv);
}

/* A best-effort tenant that keeps the GPU busy for 3 s with wide kernels, each launched
 * while the one before still runs (so it is never idle, even when the host is slow) and
 * placed where the policy puts it then; it sets *arg once under way, and must finish
 * some. */
static int flooding_neighbour(void *arg)
{
    volatile int *running = arg;
    CUfunction fill;
    CUdeviceptr d;
    int v = 2, n = 0, done = 0;
    void *params[] = { &d, &v, &n };
    uint64_t end;
    struct timespec ts;
    CUevent ev[2];

    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 64) != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, load(), "fill") != CUDA_SUCCESS ||
        cuEventCreate(&ev[0], 0) != CUDA_SUCCESS || cuEventCreate(&ev[1], 0) != CUDA_SUCCESS)
        return 1;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    end = (uint64_t)ts.tv_sec + 3;
    for (int i = 0; (uint64_t)ts.tv_sec < end; i++) {
        if (cuLaunchKernel(fill, 132 * 2 * 5000, 1, 1, 256, 1, 1, 0, NULL, params, NULL) !=
                CUDA_SUCCESS ||
            cuEventRecord(ev[i % 2], NULL) != CUDA_SUCCESS ||
            (i > 0 && cuEventSynchronize(ev[(i - 1) % 2]) != CUDA_SUCCESS))
            return 2;
        if (i > 0)
            *running = ++done;
        clock_gettime(CLOCK_MONOTONIC, &ts);
    }
    if (cuCtxSynchronize() != CUDA_SUCCESS)
        return 2;
    return done >= 3 ? 0 : 3;
}

/* A latency-critical tenant's kernel time beside the flooding one, over its time alone. */
static float latency_ratio(const char *policy, const char *fenced)
{
    volatile int *running = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct ds_test_peer be;
    CUfunction fill;
    CUdeviceptr d;
    float alone, beside;

    cr_assert(running != MAP_FAILED);
    ds_test_server_start(&srv, 0, policy);
    ds_test_peer_fork(&be, flooding_neighbour, (void *)running);
    setenv("DETSHARE_CLASS", "latency", 1);
    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, load(), "fill"));
    CU_OK(cuMemAlloc(&d, 4096));
    /* The first kernels teach slo-aware's predictor their speed alone. */
    wide_kernels_ms(fill, d);
    alone = wide_kernels_ms(fill, d);
    ds_test_peer_go(&be);
    for (int i = 0; i < 1000 && *running < 2; i++)
        usleep(2000);
    cr_assert_geq(*running, 2, "the best-effort tenant did not start");
    /* slo-aware shrinks the flood only once it sees latency work slowed down by it. */
    for (int i = 0; fenced != NULL && i < 60 && !ds_test_log_has(&srv, fenced); i++)
        wide_kernels_ms(fill, d);
    if (fenced != NULL)
        wait_log(fenced);
    beside = wide_kernels_ms(fill, d);
    ds_test_peer_join(&be);
    ds_test_peer_leave(&be);
    ds_test_server_stop(&srv);
    munmap((void *)running, sizeof(int));
    cr_log_info("%s: alone %.2f ms, beside a flooding best-effort tenant %.2f ms", policy,
                (double)alone, (double)beside);
    return beside / alone;
}

/* Issue 9's contention check on the sim's model: sharing every SM with a best-effort flood
 * halves a latency-critical tenant's SMs; slo-aware, seeing its kernels slowed down,
 * shrinks the flood to three quarters of the SMs (as far as it goes without an SLO), and
 * the best-effort tenant still gets work done on the groups it keeps. */
Test(partition, under_shared_a_flood_slows_latency_work_on_the_sim)
{
    float r;

    DS_SIM_ONLY();
    r = latency_ratio("--policy shared", NULL);
    cr_expect(r > 1.6f, "beside the flood, latency work took %.2fx its time alone", (double)r);
}

/* On the sim's model the latency-critical tenant then has the quarter of the SMs the
 * flood left alone and half of the rest: 84 of 132 SMs, 1.57x its time alone, against
 * 1.94x under shared (the test above).  (One server per test: a tenant process connects
 * once.) */
Test(partition, slo_aware_keeps_latency_work_near_its_alone_speed_on_the_sim)
{
    float r;

    DS_SIM_ONLY();
    r = latency_ratio("--policy slo-aware", "runs on SM groups 0-11 (96 SMs)");
    cr_expect(r < 1.75f, "beside the flood, latency work took %.2fx its time alone", (double)r);
}
