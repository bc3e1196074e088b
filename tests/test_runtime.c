/* nvcc-built CUDA runtime programs (the .cu files of examples/, static and shared cudart) through a
 * server: cudart starts on detshare's libcuda, memory round trips are exact and every
 * launch succeeds.  On a GPU, bench/run-on-gpu.sh also compares their output with
 * native runs byte for byte. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(runtime, .init = start, .fini = stop, .timeout = 300);

/* Run an example through the fixture's server; its stdout into out. */
static int run_example(const char *name, char *out, size_t len)
{
    char cmd[1024];
    FILE *p;
    size_t n;
    int status;

    snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH=%s:%s:$LD_LIBRARY_PATH %s/%s", DS_CLIENT_DIR,
             DS_CUDART_DIR, DS_EXAMPLE_DIR, name);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void check(const char *name, const char *must)
{
    char out[8192], shared[64];

    cr_assert_eq(run_example(name, out, sizeof(out)), 0, "%s failed:\n%s", name, out);
    cr_assert(strstr(out, must) != NULL, "%s:\n%s", name, out);
    snprintf(shared, sizeof(shared), "%s_shared", name);
    cr_assert_eq(run_example(shared, out, sizeof(out)), 0, "%s failed:\n%s", shared, out);
    cr_assert(strstr(out, must) != NULL, "%s:\n%s", shared, out);
}

Test(runtime, vector_add_starts_copies_exactly_and_launches)
{
    check("vector_add", "round trip of 4194304 floats: exact");
}

Test(runtime, streams_events_and_pinned_memory)
{
    check("streams", "16 chunks on 4 streams");
}

Test(runtime, a_kernel_with_odd_parameters_launches)
{
    check("params", "u=");
}

Test(runtime, cublas_creates_and_runs_gemms)
{
    check("cublas_gemm", "dgemm 512x512");
}

Test(runtime, curand_generates)
{
    check("curand_normal", "normal deviates");
}

Test(runtime, a_captured_graph_replays)
{
    check("graphs", "graph of 8 kernels, 5 replays");
}

Test(runtime, pitched_images_and_volumes)
{
    check("pitched", "round trips exact");
    check("pitched", "round trip exact");
}

Test(runtime, a_graph_built_node_by_node_runs_and_updates)
{
    check("graph_nodes", "graph built node by node: 5 nodes, 1 root, 4 launches then 1 updated");
}

Test(runtime, a_graph_with_a_host_node_and_a_child_graph_runs_in_order)
{
    check("graph_host", "graph with a host node and a child graph: 3 launches in order");
}

/* Kernels set conditional values only on a GPU (DS_TEST_DEVICE=cuda: gpu_runtime). */
Test(runtime, a_while_loop_node_runs_until_its_kernel_ends_it)
{
    if (ds_test_on_sim())
        cr_skip_test("kernels compute on a GPU only");
    check("graph_while", "while loop node ran 10 times: sum 55, if node ran its body: flag 1");
}

/* The CUDA sample graphConditionalNodes' capturedWhileGraph: a WHILE node added to a
 * plain capture in progress, through the graph and dependencies cudaStreamGetCaptureInfo
 * hands out (test_capture_info has its shape on the sim). */
Test(runtime, a_while_node_added_to_a_capture_in_progress_loops)
{
    if (ds_test_on_sim())
        cr_skip_test("kernels compute on a GPU only");
    check("graph_captured_while",
          "captured while loop: from 0 the loop kernel ran 1 time, from 10 10 times");
}

Test(runtime, mapped_host_memory)
{
    check("mapped", "written into mapped host memory");
}

/* Kernels compute only on a GPU: on the sim the copy back is what can be checked. */
Test(runtime, managed_memory_and_registered_host_memory)
{
    check("managed", "copy into registered memory exact");
}

Test(runtime, cudaMallocAsync_and_memory_pools)
{
    check("malloc_async", "6 rounds of 8 MiB, round trips exact");
}

/* A program of two devices, each one server's: cudart's first call hashes every device's
 * identity into its integrity check, and the client's buffer had room for one (a tenant
 * of two servers crashed in cudart, run 136); cudart takes each device's primary context
 * from the client's private table, which gave device 0's for device 1 (run 139); then
 * copies between the devices. */
Test(runtime, two_devices_of_two_servers)
{
    struct ds_test_server two[2];
    char out[8192];
    const char *names[] = { "two_devices", "two_devices_shared" };

    two[0] = srv;
    ds_test_server_start(&two[1], 0, ds_test_on_sim() ? "--gpu 1" : "--mps off");
    ds_test_servers_use(two, 2);
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(run_example(names[i], out, sizeof(out)), 0, "%s failed:\n%s", names[i], out);
        cr_expect(strstr(out, "devices: 2") != NULL, "%s:\n%s", names[i], out);
        cr_expect(strstr(out, "current device 1, memory on device 1") != NULL, "%s:\n%s",
                  names[i], out);
        cr_expect(strstr(out, "copy on the source's stream: exact") != NULL, "%s:\n%s",
                  names[i], out);
        cr_expect(strstr(out, "cudaMemcpyPeer: exact") != NULL, "%s:\n%s", names[i], out);
    }
    ds_test_servers_use(&srv, 1);
    ds_test_server_stop(&two[1]);
}
