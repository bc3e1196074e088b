/* Host functions on a capturing stream (cuLaunchHostFunc): as CUDA, the function is not
 * called at capture but becomes a host node of the captured graph, after the work
 * captured before it and before the work captured after it, and each launch calls it
 * there; a plain capture's graph then lists the host node with its function and data.
 * Copies of pageable memory around it, a clone, a capture into a graph, a stream that
 * joined the capture and stream-ordered allocations across it are served too; a stream
 * not being captured calls it as before.  On a GPU, support/capture_hostfn_cases.c is
 * compared with the real driver's answers. */
#include "capture_hostfn_cases.h"
#include "ds_test.h"

#include <stdio.h>
#include <string.h>

#define N 64

static struct ds_test_server srv;
static CUstream s;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(capture_hostfn, .init = start, .fini = stop, .timeout = 120);

/* What a host function saw: the word the fills write (h[0]) and the kernels' counter
 * (h[1]) when it ran, and how often it ran. */
struct probe {
    volatile int *h;
    int seen, seen_steps, calls;
};

static void CUDA_CB look(void *arg)
{
    struct probe *p = arg;

    p->seen = p->h[0];
    p->seen_steps = p->h[1];
    p->calls++;
}

/* Page-locked memory the device writes (d is its device address). */
static void setup(struct probe *p, CUdeviceptr *d)
{
    int *h;

    memset(p, 0, sizeof(*p));
    CU_OK(cuMemHostAlloc((void **)&h, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    memset(h, 0, 4096);
    p->h = h;
    CU_OK(cuMemHostGetDevicePointer(d, h, 0));
}

/* step(x, k) turns *x from k into k + 1 (tests/kernels/launch.cu); the sim runs no
 * kernel code, so the fills carry what the sim checks. */
static void step_on(CUstream on, CUdeviceptr x, int k)
{
    static CUfunction f;
    void *params[] = { &x, &k };

    if (f == NULL)
        CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "step"));
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, on, params, NULL));
}

/* The host nodes of g: how many, and the last one's parameters in *hp. */
static size_t host_nodes(CUgraph g, CUDA_HOST_NODE_PARAMS *hp)
{
    CUgraphNode nodes[16];
    size_t n = 16, hosts = 0;

    CU_OK(cuGraphGetNodes(g, nodes, &n));
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType type;

        CU_OK(cuGraphNodeGetType(nodes[i], &type));
        if (type == CU_GRAPH_NODE_TYPE_HOST) {
            CU_OK(cuGraphHostNodeGetParams(nodes[i], hp));
            hosts++;
        }
    }
    return hosts;
}

/* fill 7 and step 0 -> look -> fill 9 and step 1, captured on s in `mode`. */
static CUgraph capture_around(CUstreamCaptureMode mode, struct probe *p, CUdeviceptr d)
{
    CUstreamCaptureStatus status;
    CUgraph g;

    CU_OK(cuStreamBeginCapture(s, mode));
    CU_OK(cuMemsetD32Async(d, 7, 1, s));
    step_on(s, d + sizeof(int), 0);
    CU_OK(cuLaunchHostFunc(s, look, p));
    CU_OK(cuStreamIsCapturing(s, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE, "the capture goes on after it");
    CU_OK(cuMemsetD32Async(d, 9, 1, s));
    step_on(s, d + sizeof(int), 1);
    CU_OK(cuStreamEndCapture(s, &g));
    cr_assert_eq(p->calls, 0, "the function is not called at capture");
    return g;
}

/* Launch e: the function ran after the earlier work was done and before the later. */
static void launch_and_check(CUgraphExec e, struct probe *p, int launch)
{
    p->h[0] = p->h[1] = 0;
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(p->calls, launch, "launch %d called it %d times", launch, p->calls);
    cr_assert_eq(p->seen, 7, "launch %d: the function saw %d", launch, p->seen);
    cr_assert_eq(p->h[0], 9, "the work after it ran after it");
    if (!ds_test_on_sim()) {
        cr_assert_eq(p->seen_steps, 1, "the first kernel was done before the function");
        cr_assert_eq(p->h[1], 2, "the second kernel ran after it");
    }
}

static void around_kernels(CUstreamCaptureMode mode)
{
    CUDA_HOST_NODE_PARAMS hp;
    struct probe p;
    CUgraphExec e;
    CUdeviceptr d;
    CUgraph g;

    setup(&p, &d);
    g = capture_around(mode, &p, d);
    cr_assert_eq(host_nodes(g, &hp), 1, "the graph has one host node");
    cr_assert_eq(hp.fn, look);
    cr_assert_eq(hp.userData, &p);
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphDestroy(g));
    launch_and_check(e, &p, 1);
    launch_and_check(e, &p, 2);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuMemFreeHost((void *)p.h));
}

Test(capture_hostfn, a_host_function_runs_between_the_work_around_it_global)
{
    around_kernels(CU_STREAM_CAPTURE_MODE_GLOBAL);
}

Test(capture_hostfn, a_host_function_runs_between_the_work_around_it_thread_local)
{
    around_kernels(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}

Test(capture_hostfn, a_host_function_runs_between_the_work_around_it_relaxed)
{
    around_kernels(CU_STREAM_CAPTURE_MODE_RELAXED);
}

/* As the CUDA sample simpleCudaGraphs: the captured graph cloned, both instances call
 * the function. */
Test(capture_hostfn, a_clone_calls_it_too)
{
    CUgraphExec e, ce;
    CUgraph g, clone;
    struct probe p;
    CUdeviceptr d;

    setup(&p, &d);
    g = capture_around(CU_STREAM_CAPTURE_MODE_GLOBAL, &p, d);
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphClone(&clone, g));
    CU_OK(cuGraphInstantiate(&ce, clone, 0));
    launch_and_check(e, &p, 1);
    launch_and_check(ce, &p, 2);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    launch_and_check(ce, &p, 3);
    CU_OK(cuGraphExecDestroy(ce));
    CU_OK(cuGraphDestroy(clone));
    CU_OK(cuMemFreeHost((void *)p.h));
}

/* Pageable copies around it: the function reads what the copy before it wrote, and the
 * copy after it reads what the function wrote. */
static int in[N], out[N];

static void CUDA_CB twice(void *arg)
{
    (void)arg;
    for (int i = 0; i < N; i++)
        in[i] = out[i] * 2;
}

Test(capture_hostfn, pageable_copies_around_it_see_its_bytes)
{
    CUdeviceptr a, b;
    CUgraphExec e;
    CUgraph g;
    int got[N];

    CU_OK(cuMemAlloc(&a, sizeof(in)));
    CU_OK(cuMemAlloc(&b, sizeof(in)));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemcpyDtoHAsync(out, a, sizeof(out), s));
    CU_OK(cuLaunchHostFunc(s, twice, NULL));
    CU_OK(cuMemcpyHtoDAsync(b, in, sizeof(in), s));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphDestroy(g));
    for (int v = 5; v <= 6; v++) {
        CU_OK(cuMemsetD32(a, (unsigned)v, N));
        CU_OK(cuMemsetD32(b, 0, N));
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        CU_OK(cuMemcpyDtoH(got, b, sizeof(got)));
        for (int i = 0; i < N; i++)
            cr_assert_eq(got[i], 2 * v, "launch with %d: word %d is %d", v, i, got[i]);
    }
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(a));
}

/* A capture into a graph of the tenant's: the host node joins that graph. */
Test(capture_hostfn, a_capture_into_a_graph_gets_the_host_node)
{
    CUDA_HOST_NODE_PARAMS hp;
    CUgraph g, ended = NULL;
    struct probe p;
    CUgraphNode first;
    CUgraphExec e;
    CUdeviceptr d;
    size_t n = 0;

    setup(&p, &d);
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddEmptyNode(&first, g, NULL, 0));
    CU_OK(cuStreamBeginCaptureToGraph(s, g, &first, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD32Async(d, 7, 1, s));
    CU_OK(cuLaunchHostFunc(s, look, &p));
    CU_OK(cuMemsetD32Async(d, 9, 1, s));
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(ended, g);
    cr_assert_eq(host_nodes(g, &hp), 1);
    cr_assert_eq(hp.userData, &p);
    CU_OK(cuGraphGetRootNodes(g, NULL, &n));
    cr_assert_eq(n, 1, "everything follows the node the capture began after");
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(p.calls, 1);
    cr_assert_eq(p.seen, 7);
    cr_assert_eq(p.h[0], 9);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFreeHost((void *)p.h));
}

/* A stream not being captured calls the function as before, while another captures. */
Test(capture_hostfn, a_stream_not_captured_calls_it_at_once)
{
    struct probe p;
    CUdeviceptr d;
    CUstream other;
    CUgraph g;

    setup(&p, &d);
    CU_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuMemsetD32Async(d, 7, 1, s));
    CU_OK(cuMemsetD32Async(d, 3, 1, other));
    CU_OK(cuLaunchHostFunc(other, look, &p));
    cr_assert_eq(p.calls, 1);
    cr_assert_eq(p.seen, 3);
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(other));
    CU_OK(cuMemFreeHost((void *)p.h));
}

/* No function: refused as CUDA refuses it, and the capture goes on. */
Test(capture_hostfn, no_function_is_refused)
{
    struct probe p;
    CUdeviceptr d;
    CUgraph g;

    setup(&p, &d);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD32Async(d, 7, 1, s));
    CU_IS(cuLaunchHostFunc(s, NULL, &p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFreeHost((void *)p.h));
}

/* A stream forked from the capture by an event: the function on it runs after the
 * forked work and before what follows it there.  The sim refuses events on a capturing
 * stream, so this runs on a GPU. */
Test(capture_hostfn, on_a_stream_that_joined_the_capture)
{
    CUstreamCaptureStatus status;
    CUevent fork, join;
    CUstream side;
    struct probe p;
    CUgraphExec e;
    CUdeviceptr d;
    CUgraph g;

    if (ds_test_on_sim())
        cr_skip_test("the sim does not model forks of a capture");
    setup(&p, &d);
    CU_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuEventRecord(fork, s));
    CU_OK(cuStreamWaitEvent(side, fork, 0));
    CU_OK(cuStreamIsCapturing(side, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE, "a forked stream is in the capture");
    CU_OK(cuMemsetD32Async(d, 7, 1, side));
    step_on(side, d + sizeof(int), 0);
    CU_OK(cuLaunchHostFunc(side, look, &p));
    CU_OK(cuMemsetD32Async(d, 9, 1, side));
    step_on(side, d + sizeof(int), 1);
    CU_OK(cuEventRecord(join, side));
    CU_OK(cuStreamWaitEvent(s, join, 0));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphDestroy(g));
    launch_and_check(e, &p, 1);
    launch_and_check(e, &p, 2);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuEventDestroy(join));
    CU_OK(cuEventDestroy(fork));
    CU_OK(cuStreamDestroy(side));
    CU_OK(cuMemFreeHost((void *)p.h));
}

/* Stream-ordered allocation across it: allocated before the function and freed after it,
 * in a graph that runs in stages. */
Test(capture_hostfn, memory_allocated_before_it_and_freed_after_it)
{
    CUdeviceptr a, res, d;
    struct probe p;
    CUgraphExec e;
    CUgraph g;
    int got[N];

    setup(&p, &d);
    CU_OK(cuMemAlloc(&res, N * sizeof(int)));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&a, N * sizeof(int), s));
    CU_OK(cuMemsetD32Async(a, 4, N, s));
    CU_OK(cuLaunchHostFunc(s, look, &p));
    CU_OK(cuMemcpyDtoDAsync(res, a, N * sizeof(int), s));
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphDestroy(g));
    for (int launch = 1; launch <= 2; launch++) {
        CU_OK(cuMemsetD32(res, 0, N));
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        CU_OK(cuMemcpyDtoH(got, res, sizeof(got)));
        cr_assert_eq(got[N - 1], 4);
        cr_assert_eq(p.calls, launch);
    }
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuMemFree(res));
    CU_OK(cuMemFreeHost((void *)p.h));
}

/* On a GPU, the cases of support/capture_hostfn_cases.c give the real driver's answers. */
Test(capture_hostfn, the_same_as_the_real_driver)
{
    static char mine[16384], native[16384];
    size_t n;
    FILE *f;

    if (ds_test_on_sim())
        cr_skip_test("compares with the real driver");
    cr_assert_eq(ds_capture_hostfn_cases(DS_KERNEL_DIR "/launch.fatbin", mine, sizeof(mine)), 0,
                 "%s", mine);
    f = popen("env -u LD_LIBRARY_PATH -u LD_PRELOAD " DS_NATIVE_CAPTURE_HOSTFN " " DS_KERNEL_DIR
              "/launch.fatbin",
              "r");
    cr_assert_not_null(f);
    n = fread(native, 1, sizeof(native) - 1, f);
    native[n] = '\0';
    cr_assert_eq(pclose(f), 0, "native_capture_hostfn failed: %s", native);
    cr_assert_str_eq(mine, native);
}
