/* Conditional nodes: a handle's value decides whether an IF node's body (or its else
 * body) runs, which SWITCH body runs, and whether a WHILE body runs; bodies are graphs
 * the tenant fills after adding the node, and they run in the node's place.  On the sim
 * kernels set no value, so only the value a handle starts with is exercised here; the
 * runtime examples set it from kernels on the GPU. */
#include "ds_test.h"

#include <stdlib.h>
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

TestSuite(graph_cond, .init = start, .fini = stop, .timeout = 120);

static int read_at(CUdeviceptr p, int i)
{
    int v;

    CU_OK(cuMemcpyDtoH(&v, p + (CUdeviceptr)i * sizeof(int), sizeof(v)));
    return v;
}

static void fill(CUgraph g, CUdeviceptr dst, unsigned v)
{
    CUDA_MEMSET_NODE_PARAMS ms = { .dst = dst, .value = v, .elementSize = 4, .width = N,
                                   .height = 1 };
    CUgraphNode n;

    CU_OK(cuGraphAddMemsetNode(&n, g, NULL, 0, &ms, NULL));
}

/* A graph: a conditional node of `type` with `size` bodies, body i filling buf with
 * 10 + i, then a copy of buf into out after the node.  The handle starts at dflt at
 * every launch. */
struct cond {
    CUgraph g, bodies[3];
    CUgraphNode node;
    CUgraphConditionalHandle h;
    CUdeviceptr buf, out;
};

static void build(struct cond *c, CUgraphConditionalNodeType type, unsigned size,
                  unsigned dflt)
{
    CUgraphNodeParams np;
    CUDA_MEMCPY3D cp = { .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                         .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
    CUgraphNode copy;

    memset(c, 0, sizeof(*c));
    CU_OK(cuMemAlloc(&c->buf, N * sizeof(int)));
    CU_OK(cuMemAlloc(&c->out, N * sizeof(int)));
    CU_OK(cuGraphCreate(&c->g, 0));
    CU_OK(cuGraphConditionalHandleCreate(&c->h, c->g, NULL, dflt,
                                         CU_GRAPH_COND_ASSIGN_DEFAULT));
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = c->h;
    np.conditional.type = type;
    np.conditional.size = size;
    CU_OK(cuGraphAddNode(&c->node, c->g, NULL, NULL, 0, &np));
    /* The array is the node's, as the driver's is. */
    cr_assert_not_null(np.conditional.phGraph_out);
    for (unsigned i = 0; i < size; i++) {
        c->bodies[i] = np.conditional.phGraph_out[i];
        cr_assert_not_null(c->bodies[i]);
        fill(c->bodies[i], c->buf, 10 + i);
    }
    cp.srcDevice = c->buf;
    cp.dstDevice = c->out;
    CU_OK(cuGraphAddMemcpyNode(&copy, c->g, &c->node, 1, &cp, NULL));
}

/* Launch c's graph with buf and out zeroed; what out holds after. */
static int run(struct cond *c)
{
    CUgraphExec e;

    CU_OK(cuMemsetD32(c->buf, 0, N));
    CU_OK(cuMemsetD32(c->out, 0, N));
    CU_OK(cuGraphInstantiate(&e, c->g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    return read_at(c->out, N - 1);
}

static void unbuild(struct cond *c)
{
    CU_OK(cuGraphDestroy(c->g));
    CU_OK(cuMemFree(c->buf));
    CU_OK(cuMemFree(c->out));
}

Test(graph_cond, an_if_body_runs_when_its_value_is_not_zero)
{
    struct cond c;
    CUgraphNodeType type;

    build(&c, CU_GRAPH_COND_TYPE_IF, 1, 1);
    CU_OK(cuGraphNodeGetType(c.node, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_CONDITIONAL);
    cr_assert_eq(run(&c), 10);
    unbuild(&c);
    build(&c, CU_GRAPH_COND_TYPE_IF, 1, 0);
    cr_assert_eq(run(&c), 0);
    unbuild(&c);
}

Test(graph_cond, an_if_else_runs_its_second_body_when_zero)
{
    struct cond c;

    build(&c, CU_GRAPH_COND_TYPE_IF, 2, 0);
    cr_assert_eq(run(&c), 11);
    unbuild(&c);
}

Test(graph_cond, a_switch_runs_the_body_its_value_names)
{
    struct cond c;

    build(&c, CU_GRAPH_COND_TYPE_SWITCH, 3, 2);
    cr_assert_eq(run(&c), 12);
    unbuild(&c);
    build(&c, CU_GRAPH_COND_TYPE_SWITCH, 3, 7);
    cr_assert_eq(run(&c), 0, "no body for 7");
    unbuild(&c);
}

Test(graph_cond, a_while_loop_that_starts_false_never_runs)
{
    struct cond c;

    build(&c, CU_GRAPH_COND_TYPE_WHILE, 1, 0);
    cr_assert_eq(run(&c), 0);
    unbuild(&c);
}

/* Without a kernel to end it, the sim cannot run a loop that starts true. */
Test(graph_cond, the_sim_refuses_a_while_loop_it_could_not_end)
{
    struct cond c;
    CUgraphExec e;

    DS_SIM_ONLY();
    build(&c, CU_GRAPH_COND_TYPE_WHILE, 1, 1);
    CU_OK(cuGraphInstantiate(&e, c.g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphExecDestroy(e));
    unbuild(&c);
}

Test(graph_cond, bad_handles_types_and_copies_are_refused)
{
    struct cond c;
    CUgraphNodeParams np;
    CUgraph other, clone;
    CUgraphConditionalHandle h;
    CUgraphNode n;
    CUDA_HOST_NODE_PARAMS hp = { .fn = (CUhostFn)free, .userData = NULL };

    build(&c, CU_GRAPH_COND_TYPE_IF, 1, 1);
    CU_OK(cuGraphCreate(&other, 0));
    CU_OK(cuGraphConditionalHandleCreate(&h, other, NULL, 0, 0));
    CU_IS(cuGraphConditionalHandleCreate(&h, other, NULL, 0, 0x80), CUDA_ERROR_INVALID_VALUE);
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = h;
    np.conditional.type = CU_GRAPH_COND_TYPE_IF;
    np.conditional.size = 1;
    CU_IS(cuGraphAddNode(&n, c.g, NULL, NULL, 0, &np), CUDA_ERROR_INVALID_VALUE);
    np.conditional.handle = c.h;
    np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    np.conditional.size = 2;
    CU_IS(cuGraphAddNode(&n, c.g, NULL, NULL, 0, &np), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphAddHostNode(&n, c.bodies[0], NULL, 0, &hp), CUDA_ERROR_NOT_SUPPORTED);
    CU_IS(cuGraphDestroy(c.bodies[0]), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphClone(&clone, c.g), CUDA_ERROR_NOT_SUPPORTED);
    CU_IS(cuGraphAddChildGraphNode(&n, other, NULL, 0, c.g), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphDestroy(other));
    unbuild(&c);
}

/* An instance runs the bodies as they were when it was made, after the node is gone;
 * the tenant leaves with a conditional graph and an instance alive (the fixture's stop
 * fails on any leak). */
Test(graph_cond, bodies_go_with_their_node_and_the_tenant)
{
    struct cond c;
    CUgraphExec e;
    CUgraphNode n;
    CUevent ev;

    build(&c, CU_GRAPH_COND_TYPE_IF, 1, 1);
    CU_OK(cuEventCreate(&ev, 0));
    CU_IS(cuGraphAddEventRecordNode(&n, c.bodies[0], NULL, 0, ev), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphInstantiate(&e, c.g, 0));
    CU_OK(cuGraphDestroyNode(c.node));
    CU_OK(cuMemsetD32(c.out, 0, N));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read_at(c.out, 0), 10);
    CU_OK(cuEventDestroy(ev));
}

/* A body is the usual target of cuStreamBeginCaptureToGraph: what the capture records
 * runs where the body runs, after the body's nodes it was told to follow. */
Test(graph_cond, a_capture_fills_a_body)
{
    struct cond c;
    CUgraphNode first;
    CUgraph g;
    CUdeviceptr p;
    size_t n = 1;

    build(&c, CU_GRAPH_COND_TYPE_IF, 1, 1);
    CU_OK(cuGraphGetNodes(c.bodies[0], &first, &n));
    CU_OK(cuStreamBeginCaptureToGraph(s, c.bodies[0], &first, NULL, 1,
                                      CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD32Async(c.buf, 20, N, s));
    CU_OK(cuStreamEndCapture(s, &g));
    cr_assert_eq(g, c.bodies[0]);
    cr_assert_eq(run(&c), 20, "the captured fill ran after the body's own");
    unbuild(&c);
    build(&c, CU_GRAPH_COND_TYPE_WHILE, 1, 0);
    CU_OK(cuStreamBeginCaptureToGraph(s, c.bodies[0], NULL, NULL, 0,
                                      CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD32Async(c.buf, 30, N, s));
    /* Into a graph the caller holds, where to return it may be left out (the CUDA sample
     * graphConditionalNodes does); a plain capture must say. */
    CU_OK(cuStreamEndCapture(s, NULL));
    cr_assert_eq(run(&c), 0, "a loop that starts false runs nothing it captured");
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(cuStreamEndCapture(s, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    /* A body runs any number of times: it cannot own graph memory. */
    CU_OK(cuStreamBeginCaptureToGraph(s, c.bodies[0], NULL, NULL, 0,
                                      CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&p, 256, s));
    CU_OK(cuMemsetD8Async(p, 1, 256, s));
    CU_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_NOT_SUPPORTED);
    unbuild(&c);
}
