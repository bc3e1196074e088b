/* SM partitions: the static policy gives tenants disjoint SM groups, executors move a
 * tenant's work there at its next kernel, and a tenant that leaves gives its groups
 * back.  On the sim a kernel's modelled time follows its partition's SMs; on a GPU, a
 * chain of kernels checks that a move loses and reorders nothing. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;

static CUmodule load(void)
{
    char path[512];
    CUmodule m;
    FILE *fp;
    char *buf;
    long n;

    snprintf(path, sizeof(path), "%s/launch.fatbin", DS_KERNEL_DIR);
    fp = fopen(path, "rb");
    cr_assert_not_null(fp, "%s", path);
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    buf = malloc((size_t)n);
    cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    CU_OK(cuModuleLoadData(&m, buf));
    free(buf);
    return m;
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
        CU_OK(cuLaunchKernel(fill, 132 * 2 * 500, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
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

/* A second tenant, forked before the test connects (a forked child of a connected
 * tenant has no connection): joins when `go` closes, runs a kernel, says so on `up`,
 * leaves when `down` closes. */
static int neighbour(int go, int up, int down)
{
    CUcontext ctx;
    CUmodule m;
    CUfunction fill;
    CUdeviceptr d;
    int v = 2, n = 1;
    void *params[] = { &d, &v, &n };
    char c;

    if (read(go, &c, 1) != 0)
        return 5;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuMemAlloc(&d, 64) != CUDA_SUCCESS)
        return 1;
    m = load();
    if (cuModuleGetFunction(&fill, m, "fill") != CUDA_SUCCESS ||
        cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
        cuCtxSynchronize() != CUDA_SUCCESS)
        return 2;
    if (write(up, "r", 1) != 1)
        return 3;
    return read(down, &c, 1) == 0 ? 0 : 4;
}

struct neighbour {
    pid_t pid;
    int go, up, down; /* our ends */
};

static void neighbour_fork(struct neighbour *nb)
{
    int go[2], up[2], down[2];

    cr_assert(pipe(go) == 0 && pipe(up) == 0 && pipe(down) == 0);
    nb->pid = fork();
    cr_assert(nb->pid >= 0);
    if (nb->pid == 0) {
        close(go[1]);
        close(up[0]);
        close(down[1]);
        _exit(neighbour(go[0], up[1], down[0]));
    }
    close(go[0]);
    close(up[1]);
    close(down[0]);
    nb->go = go[1];
    nb->up = up[0];
    nb->down = down[1];
}

/* Let it join and wait until it has run its kernel. */
static void neighbour_join(struct neighbour *nb)
{
    char c;

    close(nb->go);
    cr_assert_eq(read(nb->up, &c, 1), 1, "the second tenant did not start");
}

static void neighbour_leave(struct neighbour *nb)
{
    int status;

    close(nb->down);
    cr_assert_eq(waitpid(nb->pid, &status, 0), nb->pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "second tenant: 0x%x", status);
    close(nb->up);
}

static int log_count(const char *needle)
{
    char line[1024];
    FILE *f = fopen(srv.log, "r");
    int n = 0;

    cr_assert_not_null(f);
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* Wait until the server has logged `needle` more than `before` times. */
static void wait_log_after(int before, const char *needle)
{
    for (int i = 0; i < 500 && log_count(needle) <= before; i++)
        usleep(10000);
    cr_assert_gt(log_count(needle), before, "the server never logged \"%s\"", needle);
}

static void wait_log(const char *needle)
{
    wait_log_after(0, needle);
}

Test(partition, static_partitions_are_disjoint_moved_at_a_kernel_and_given_back)
{
    struct neighbour nb;
    float alone, shared, again;
    CUfunction fill, step;
    CUdeviceptr d, chain_x;
    CUmodule m;
    int x, whole;

    ds_test_server_start(&srv, 0, "--policy static");
    neighbour_fork(&nb);
    ds_test_ctx();
    m = load();
    CU_OK(cuModuleGetFunction(&fill, m, "fill"));
    CU_OK(cuModuleGetFunction(&step, m, "step"));
    CU_OK(cuMemAlloc(&d, 4096));
    CU_OK(cuMemAlloc(&chain_x, sizeof(int)));
    CU_OK(cuMemsetD32(chain_x, 0, 1));
    chain(step, chain_x, 0, 100);
    alone = wide_kernels_ms(fill, d);

    neighbour_join(&nb);
    /* The first tenant joined first: the lower half, from its next kernel on; the
     * second one ran its first kernel on the upper half already. */
    chain(step, chain_x, 100, 100);
    shared = wide_kernels_ms(fill, d);
    /* The sim has 16 groups of 8 SMs; an H100's driver makes 15 of its 132 SMs. */
    if (ds_test_on_sim()) {
        wait_log("now runs on SM groups 0-7 (64 SMs)");
        wait_log("now runs on SM groups 8-15 (64 SMs)");
    } else {
        wait_log("now runs on SM groups 0-6 (56 SMs)");
        wait_log("now runs on SM groups 7-13 (56 SMs)");
    }

    whole = log_count("runs on the whole device");
    neighbour_leave(&nb);
    /* The first tenant alone again (the server's own probes of the socket, which are
     * tenants for a moment, may have said so before). */
    wait_log_after(whole, "runs on the whole device");
    chain(step, chain_x, 200, 100);
    again = wide_kernels_ms(fill, d);
    wait_log("now runs on the whole device");
    CU_OK(cuMemcpyDtoH(&x, chain_x, sizeof(x)));
    if (ds_test_on_sim()) {
        /* 132 SMs, then 64, then 132 again: twice the waves on half the SMs. */
        cr_expect(shared > 1.8f * alone && shared < 2.2f * alone, "alone %.4f ms, on half %.4f",
                  (double)alone, (double)shared);
        cr_expect(again < 1.1f * alone, "alone %.4f ms, after %.4f", (double)alone, (double)again);
    } else {
        cr_expect_eq(x, 300, "the chain of kernels across two moves ended at %d", x);
    }
    ds_test_server_stop(&srv);
}

Test(partition, the_shared_policy_leaves_everyone_on_every_sm)
{
    struct neighbour nb;

    ds_test_server_start(&srv, 0, NULL);
    cr_assert(ds_test_log_has(&srv, "policy shared"));
    neighbour_fork(&nb);
    ds_test_ctx();
    neighbour_join(&nb);
    neighbour_leave(&nb);
    cr_assert_not(ds_test_log_has(&srv, "runs on SM groups"));
    ds_test_server_stop(&srv);
}
