/* The graph and dependencies of a capture in progress (cuStreamGetCaptureInfo_v2/_v3):
 * a plain capture asked for them becomes a capture into a graph of its own, whose
 * handle and nodes the tenant can add to (cuGraphAddNode) and name again
 * (cuStreamUpdateCaptureDependencies), as the CUDA sample graphConditionalNodes does in
 * its capturedWhileGraph part; a capture into a graph answers with that graph.  The
 * sample itself, whose kernels set the loop's condition, runs on a GPU in test_runtime
 * (examples/graph_captured_while.cu). */
#include "ds_test.h"

#include <string.h>

#define WORDS 64

/* The entry point runtimes of CUDA 11.3 to 12.2 resolve cudaStreamGetCaptureInfo to,
 * which this toolkit's cuda.h no longer declares (its cuStreamGetCaptureInfo is _v3). */
CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                                   CUgraph *graph, const CUgraphNode **deps, size_t *ndeps);

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

TestSuite(capture_info, .init = start, .fini = stop, .timeout = 120);

static CUdeviceptr zeroed(void)
{
    CUdeviceptr p;

    CU_OK(cuMemAlloc(&p, WORDS * 4));
    CU_OK(cuMemsetD32(p, 0, WORDS));
    return p;
}

static void expect_words(CUdeviceptr p, uint32_t v)
{
    uint32_t got[WORDS];

    CU_OK(cuMemcpyDtoH(got, p, sizeof(got)));
    for (size_t i = 0; i < WORDS; i++)
        cr_assert_eq(got[i], v, "word %zu: %u, not %u", i, got[i], v);
}

static void run(CUgraph g)
{
    CUgraphExec x;

    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(x));
}

/* The nodes of g in order, their number checked. */
static void nodes_of(CUgraph g, CUgraphNode *nodes, size_t want)
{
    size_t n = want + 1;

    CU_OK(cuGraphGetNodes(g, NULL, &n));
    cr_assert_eq(n, want, "%zu nodes, not %zu", n, want);
    CU_OK(cuGraphGetNodes(g, nodes, &n));
}

/* The one node `node` depends on. */
static CUgraphNode only_dep(CUgraphNode node)
{
    CUgraphNode deps[4];
    size_t n = 4;

    CU_OK(cuGraphNodeGetDependencies(node, deps, NULL, &n));
    cr_assert_eq(n, 1, "%zu dependencies, not 1", n);
    return deps[0];
}

/* A plain capture's graph, asked for half way: a copy node added after its
 * dependencies (the work captured so far) sees that work, and the capture goes on after
 * the node once told to; the graph it ends with is the one handed out, and runs in that
 * order. */
Test(capture_info, a_plain_capture_hands_out_its_graph_and_dependencies)
{
    CUdeviceptr a = zeroed(), b = zeroed(), c = zeroed();
    CUDA_MEMCPY3D cp = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = a,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = b,
                         .WidthInBytes = WORDS * 4, .Height = 1, .Depth = 1 };
    CUstreamCaptureStatus st;
    const CUgraphNode *deps;
    const CUgraphEdgeData *edges;
    CUgraphNode copy, nodes[3];
    cuuint64_t id, id2;
    CUgraph g, ended;
    CUcontext ctx;
    size_t n;

    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamGetCaptureInfo_v2(s, &st, &id, NULL, NULL, NULL));
    CU_OK(cuMemsetD32Async(a, 1, WORDS, s));
    CU_OK(cuStreamGetCaptureInfo_v2(s, &st, &id2, &g, &deps, &n));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cr_assert_eq(id2, id, "the capture keeps its id");
    cr_assert_not_null(g, "a graph the tenant can add to");
    cr_assert_eq(n, 1, "the work captured so far, as one node");
    cr_assert_not_null(deps);
    CU_OK(cuGraphAddMemcpyNode(&copy, g, deps, n, &cp, ctx));
    CU_OK(cuStreamUpdateCaptureDependencies(s, &copy, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    CU_OK(cuStreamGetCaptureInfo_v3(s, &st, &id2, &ended, &deps, &edges, &n));
    cr_assert_eq(ended, g);
    cr_assert_eq(id2, id);
    cr_assert_eq(n, 1);
    cr_assert_eq(deps[0], copy, "the capture depends on the node it was told to");
    cr_assert_not_null(edges);
    cr_assert_eq(edges[0].type, CU_GRAPH_DEPENDENCY_TYPE_DEFAULT);
    cr_assert_eq(edges[0].from_port, 0);
    CU_OK(cuMemcpyDtoDAsync(c, b, WORDS * 4, s));
    CU_OK(cuMemsetD32Async(a, 3, WORDS, s));
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(ended, g, "the capture ends with the graph it handed out");
    nodes_of(g, nodes, 3);
    cr_assert_eq(nodes[1], copy);
    cr_assert_eq(only_dep(copy), nodes[0]);
    cr_assert_eq(only_dep(nodes[2]), copy, "work captured after runs after the node");
    expect_words(b, 0);
    run(g);
    expect_words(a, 3);
    expect_words(b, 1);
    expect_words(c, 1);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(c));
}

/* Asked before anything was captured, a plain capture depends on nothing, and one into
 * a graph on the nodes it began after; the status and id alone change nothing. */
Test(capture_info, dependencies_before_any_work)
{
    CUDA_MEMSET_NODE_PARAMS ms = { .dst = zeroed(), .value = 4, .elementSize = 4,
                                   .width = WORDS, .height = 1 };
    CUstreamCaptureStatus st;
    const CUgraphNode *deps;
    CUgraphNode fill, nodes[2];
    CUgraph g, mine, ended;
    CUcontext ctx;
    size_t n = 9;

    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamGetCaptureInfo_v2(s, &st, NULL, &g, &deps, &n));
    cr_assert_not_null(g);
    cr_assert_eq(n, 0);
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(ended, g);
    nodes_of(g, nodes, 0);
    CU_OK(cuGraphDestroy(g));

    CU_OK(cuGraphCreate(&mine, 0));
    CU_OK(cuGraphAddMemsetNode(&fill, mine, NULL, 0, &ms, ctx));
    CU_OK(cuStreamBeginCaptureToGraph(s, mine, &fill, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamGetCaptureInfo_v2(s, &st, NULL, &g, &deps, &n));
    cr_assert_eq(g, mine, "a capture into a graph answers with that graph");
    cr_assert_eq(n, 1);
    cr_assert_eq(deps[0], fill);
    CU_OK(cuMemsetD32Async(ms.dst, 5, WORDS, s));
    CU_OK(cuStreamGetCaptureInfo_v2(s, &st, NULL, NULL, NULL, &n));
    cr_assert_eq(n, 1, "the part captured since, as one node");
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(ended, mine);
    nodes_of(mine, nodes, 2);
    cr_assert_eq(only_dep(nodes[1]), fill);
    run(mine);
    expect_words(ms.dst, 5);
    CU_OK(cuGraphDestroy(mine));
    CU_OK(cuMemFree(ms.dst));
}

/* The sample's shape, memsets standing for its kernels (which set no value on the sim):
 * a conditional handle of the graph the capture hands out, work A, a conditional node
 * after A, the capture told to go on after the node, work D, then the node's body filled
 * by a capture into it.  A body that runs fills c. */
static void sample_shape(CUgraphConditionalNodeType type, unsigned dflt)
{
    CUdeviceptr a = zeroed(), c = zeroed(), d = zeroed();
    CUgraphNodeParams np;
    CUstreamCaptureStatus st;
    const CUgraphNode *deps;
    CUgraphConditionalHandle h;
    CUgraphNode cond, nodes[3];
    CUgraph g, body, ended;
    CUcontext ctx;
    CUstream bs;
    size_t n;

    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuStreamCreate(&bs, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamGetCaptureInfo_v3(s, &st, NULL, &g, &deps, NULL, &n));
    CU_OK(cuGraphConditionalHandleCreate(&h, g, ctx, dflt, CU_GRAPH_COND_ASSIGN_DEFAULT));
    CU_OK(cuMemsetD32Async(a, 1, WORDS, s));
    CU_OK(cuStreamGetCaptureInfo_v3(s, &st, NULL, &g, &deps, NULL, &n));
    cr_assert_eq(n, 1);
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = h;
    np.conditional.type = type;
    np.conditional.size = 1;
    CU_OK(cuGraphAddNode(&cond, g, deps, NULL, n, &np));
    body = np.conditional.phGraph_out[0];
    CU_OK(cuStreamUpdateCaptureDependencies(s, &cond, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    CU_OK(cuMemsetD32Async(d, 2, WORDS, s));
    CU_OK(cuStreamEndCapture(s, &ended));
    cr_assert_eq(ended, g);
    CU_OK(cuStreamBeginCaptureToGraph(bs, body, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD32Async(c, 7, WORDS, bs));
    CU_OK(cuStreamEndCapture(bs, NULL));
    nodes_of(g, nodes, 3);
    cr_assert_eq(nodes[1], cond);
    cr_assert_eq(only_dep(cond), nodes[0]);
    cr_assert_eq(only_dep(nodes[2]), cond);
    run(g);
    expect_words(a, 1);
    expect_words(c, dflt ? 7 : 0);
    expect_words(d, 2);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(bs));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(c));
    CU_OK(cuMemFree(d));
}

/* As the sample launches it first: the loop's value 0, its body never runs. */
Test(capture_info, the_samples_while_loop_that_starts_false)
{
    sample_shape(CU_GRAPH_COND_TYPE_WHILE, 0);
}

/* The same shape with an IF node whose value is 1: the body captured into runs. */
Test(capture_info, the_samples_shape_with_a_body_that_runs)
{
    sample_shape(CU_GRAPH_COND_TYPE_IF, 1);
}

/* What no capture has, none is handed out: a stream not capturing while another does. */
Test(capture_info, a_stream_not_capturing_has_no_graph)
{
    CUstreamCaptureStatus st;
    const CUgraphNode *deps = (const CUgraphNode *)&st;
    CUgraph g = (CUgraph)&st, ended;
    CUstream other;
    size_t n = 5;

    CU_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamGetCaptureInfo_v2(other, &st, NULL, &g, &deps, &n));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    cr_assert_null(g);
    cr_assert_null(deps);
    cr_assert_eq(n, 0);
    CU_IS(cuStreamGetCaptureInfo_v3(s, &st, NULL, NULL, NULL, (const CUgraphEdgeData **)&deps,
                                    &n),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamEndCapture(s, &ended));
    CU_OK(cuGraphDestroy(ended));
    CU_OK(cuStreamDestroy(other));
}
