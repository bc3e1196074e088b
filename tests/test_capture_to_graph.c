/* Capture into an existing graph (cuStreamBeginCaptureToGraph) and the dependencies of a
 * capture in progress (cuStreamUpdateCaptureDependencies): captured work joins the
 * tenant's own graph after the nodes it names, cuStreamEndCapture answers with that
 * graph, and what cannot be named or held is refused. */
#include "ds_test.h"

#include <string.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
    ds_test_ctx();
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(capture_to_graph, .init = start, .fini = stop);

static CUgraphNode fill_node(CUgraph g, CUdeviceptr at, uint32_t v, size_t words)
{
    CUDA_MEMSET_NODE_PARAMS m = { .dst = at, .value = v, .elementSize = 4, .width = words,
                                  .height = 1 };
    CUcontext ctx;
    CUgraphNode n;

    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuGraphAddMemsetNode(&n, g, NULL, 0, &m, ctx));
    return n;
}

static size_t count_nodes(CUgraph g)
{
    size_t n = 0;

    CU_OK(cuGraphGetNodes(g, NULL, &n));
    return n;
}

static void run(CUgraph g, CUstream s)
{
    CUgraphExec x;

    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(x));
}

static void expect_words(CUdeviceptr p, uint32_t v, size_t words)
{
    uint32_t got[64];

    cr_assert_leq(words, 64);
    CU_OK(cuMemcpyDtoH(got, p, words * 4));
    for (size_t i = 0; i < words; i++)
        cr_assert_eq(got[i], v, "word %zu: %#x, not %#x", i, got[i], v);
}

/* A fill node, then a captured copy of what it filled: the copy runs after the fill. */
Test(capture_to_graph, captured_work_runs_after_the_nodes_it_depends_on)
{
    CUgraphNode fill, nodes[2], deps[2];
    CUdeviceptr buf, out;
    CUgraph g, ended;
    size_t n = 2;
    CUstream s;

    CU_OK(cuMemAlloc(&buf, 256));
    CU_OK(cuMemAlloc(&out, 256));
    CU_OK(cuMemsetD32(out, 0, 64));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    fill = fill_node(g, buf, 0x01020304u, 64);
    CU_OK(cuStreamBeginCaptureToGraph(s, g, &fill, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemcpyDtoDAsync(out, buf, 256, s));
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(ended, g, "cuStreamEndCapture answers with the graph captured into");
    cr_assert_eq(count_nodes(g), 2);
    CU_OK(cuGraphGetNodes(g, nodes, &n));
    n = 2;
    CU_OK(cuGraphNodeGetDependencies(nodes[1], deps, NULL, &n));
    cr_assert_eq(n, 1);
    cr_assert_eq(deps[0], fill);
    /* Nothing ran at capture. */
    expect_words(out, 0, 64);
    run(g, s);
    expect_words(out, 0x01020304u, 64);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
}

/* Updating the dependencies: SET replaces them with the nodes named, ADD keeps what the
 * capture had (its work so far) and adds them. */
Test(capture_to_graph, update_sets_or_adds_dependencies)
{
    CUgraphNode b, nodes[4], deps[4];
    CUdeviceptr buf, other, out;
    size_t n;
    CUstream s;
    CUgraph g, ended;

    CU_OK(cuMemAlloc(&buf, 64));
    CU_OK(cuMemAlloc(&other, 64));
    CU_OK(cuMemAlloc(&out, 64));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    b = fill_node(g, other, 7, 16);
    CU_OK(cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD32Async(buf, 9, 16, s));
    CU_OK(cuStreamUpdateCaptureDependencies(s, &b, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    CU_OK(cuMemcpyDtoDAsync(out, other, 64, s));
    CU_OK(cuStreamUpdateCaptureDependencies(s, &b, NULL, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
    CU_OK(cuMemcpyDtoDAsync(buf, out, 64, s));
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(ended, g);
    n = 4;
    CU_OK(cuGraphGetNodes(g, nodes, &n));
    cr_assert_eq(n, 4, "the fill, and one node per captured part");
    n = 4;
    CU_OK(cuGraphNodeGetDependencies(nodes[1], deps, NULL, &n));
    cr_assert_eq(n, 0, "the first part depends on nothing");
    n = 4;
    CU_OK(cuGraphNodeGetDependencies(nodes[2], deps, NULL, &n));
    cr_assert_eq(n, 1);
    cr_assert_eq(deps[0], b, "SET: the second part depends on the fill only");
    n = 4;
    CU_OK(cuGraphNodeGetDependencies(nodes[3], deps, NULL, &n));
    cr_assert_eq(n, 2, "ADD: the third part after the second and the fill");
    cr_assert(deps[0] == nodes[2] || deps[1] == nodes[2]);
    run(g, s);
    expect_words(out, 7, 16);
    expect_words(buf, 7, 16);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
}

Test(capture_to_graph, what_cannot_be_named_is_refused)
{
    CUgraphEdgeData edge;
    CUgraphNode mine, theirs;
    CUdeviceptr buf;
    CUgraph g, h, ended;
    CUstream s;

    CU_OK(cuMemAlloc(&buf, 64));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphCreate(&h, 0));
    mine = fill_node(g, buf, 1, 16);
    theirs = fill_node(h, buf, 2, 16);
    /* A node of another graph. */
    CU_IS(cuStreamBeginCaptureToGraph(s, g, &theirs, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL),
          CUDA_ERROR_INVALID_VALUE);
    memset(&edge, 0, sizeof(edge));
    edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    CU_IS(cuStreamBeginCaptureToGraph(s, g, &mine, &edge, 1, CU_STREAM_CAPTURE_MODE_GLOBAL),
          CUDA_ERROR_NOT_SUPPORTED);
    /* Nothing is being captured. */
    CU_IS(cuStreamUpdateCaptureDependencies(s, &mine, NULL, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES),
          CUDA_ERROR_ILLEGAL_STATE);
    /* A plain capture's nodes have no handles: naming any is refused. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamUpdateCaptureDependencies(s, NULL, NULL, 0, CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
    CU_IS(cuStreamUpdateCaptureDependencies(s, &mine, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES),
          CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuStreamEndCapture(s, &ended));
    CU_OK(cuGraphDestroy(ended));
    /* Into a graph: a bad flag, or a node of another graph. */
    CU_OK(cuStreamBeginCaptureToGraph(s, g, &mine, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL),
          CUDA_ERROR_ILLEGAL_STATE);
    CU_IS(cuStreamUpdateCaptureDependencies(s, &mine, NULL, 1, 7), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuStreamUpdateCaptureDependencies(s, &theirs, NULL, 1,
                                            CU_STREAM_ADD_CAPTURE_DEPENDENCIES),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemsetD32Async(buf, 3, 16, s));
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(count_nodes(g), 2);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuGraphDestroy(h));
    CU_OK(cuStreamDestroy(s));
}

/* The graph destroyed while work was captured into it: the capture ends without one. */
Test(capture_to_graph, a_graph_gone_during_the_capture_invalidates_it)
{
    CUdeviceptr buf;
    CUgraph g, ended;
    CUstream s;

    CU_OK(cuMemAlloc(&buf, 64));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuMemsetD32Async(buf, 3, 16, s));
    CU_OK(cuGraphDestroy(g));
    CU_IS(cuStreamEndCapture(s, &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
}

/* An empty capture adds no node. */
Test(capture_to_graph, an_empty_capture_adds_nothing)
{
    CUgraph g, ended;
    CUstream s;

    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(ended, g);
    cr_assert_eq(count_nodes(g), 0);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
}

static void CUDA_CB callback(CUstream s, CUresult status, void *arg)
{
    (void)s;
    (void)status;
    (void)arg;
}

/* Work a capture cannot hold invalidates a capture into a graph as any other; the graph
 * stays the caller's. */
Test(capture_to_graph, an_invalidated_capture_leaves_the_graph)
{
    CUgraph g, ended = NULL;
    CUdeviceptr buf;
    CUstream s;

    CU_OK(cuMemAlloc(&buf, 64));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    fill_node(g, buf, 1, 16);
    CU_OK(cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(cuStreamAddCallback(s, callback, NULL, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_IS(cuStreamEndCapture(s, &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_null(ended);
    cr_assert_eq(count_nodes(g), 1);
    run(g, s);
    expect_words(buf, 1, 16);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
}

/* Copies of pageable memory captured into a graph become copy nodes of it around the
 * captured part, which each launch does (ops_ghcopy.c): the copy out sees the fill node's
 * bytes, the copy in reads what the host holds at the launch. */
Test(capture_to_graph, pageable_copies_become_nodes_of_the_graph)
{
    static uint32_t out[16], in[16];
    CUgraph g, ended = NULL;
    CUgraphNode fill;
    CUdeviceptr a, b;
    CUstream s;
    size_t n;

    CU_OK(cuMemAlloc(&a, 64));
    CU_OK(cuMemAlloc(&b, 64));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    fill = fill_node(g, a, 5, 16);
    CU_OK(cuStreamBeginCaptureToGraph(s, g, &fill, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemcpyDtoHAsync(out, a, sizeof(out), s));
    CU_OK(cuMemcpyHtoDAsync(b, in, sizeof(in), s));
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(ended, g);
    n = count_nodes(g);
    cr_assert_eq(n, 4, "the fill, the captured part and its two copies: %zu nodes", n);
    for (int i = 0; i < 16; i++)
        in[i] = 9;
    run(g, s);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(out[i], 5, "word %d of the copy out is %u", i, out[i]);
    expect_words(b, 9, 16);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(a));
}
