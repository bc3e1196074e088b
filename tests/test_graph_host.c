/* Host nodes: the function runs in the tenant's process at each launch, after the nodes
 * it depends on and before those that depend on it, with the parameters it has in the
 * graph or in the instance; a graph with host nodes clones, and is refused as a child
 * graph and on a capturing stream. */
#include "ds_test.h"

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

TestSuite(graph_host, .init = start, .fini = stop, .timeout = 120);

/* What a host node saw and did: the first word of `in` when it ran, written (plus one)
 * to every word of `out`; calls counts runs, tag says which function ran last. */
struct probe {
    int *in, *out;
    int seen;
    int calls;
    int tag;
};

static void look(void *arg)
{
    struct probe *p = arg;

    p->seen = p->in[0];
    for (int i = 0; i < N; i++)
        p->out[i] = p->seen + 1;
    p->calls++;
    p->tag = 1;
}

static void look_again(void *arg)
{
    struct probe *p = arg;

    look(p);
    p->tag = 2;
}

static int read_at(CUdeviceptr p, int i)
{
    int v;

    CU_OK(cuMemcpyDtoH(&v, p + (CUdeviceptr)i * sizeof(int), sizeof(v)));
    return v;
}

static CUDA_MEMCPY3D copy(CUmemorytype st, const void *sh, CUdeviceptr sd, CUmemorytype dt,
                          void *dh, CUdeviceptr dd)
{
    return (CUDA_MEMCPY3D){ .srcMemoryType = st, .srcHost = sh, .srcDevice = sd,
                            .dstMemoryType = dt, .dstHost = dh, .dstDevice = dd,
                            .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
}

/* fill (a = v) -> copy a to page-locked in -> host node (out = in[0] + 1) -> copy out
 * to b: the host node sees the fill's bytes, and the last copy sees the host node's. */
struct chain {
    CUgraph g;
    CUgraphNode fill, down, host, up;
    CUdeviceptr a, b;
    int *in, *out;
    struct probe p;
};

static void build_chain(struct chain *c, int v)
{
    CUDA_MEMSET_NODE_PARAMS ms = { .value = (unsigned)v, .elementSize = 4, .width = N,
                                   .height = 1 };
    CUDA_HOST_NODE_PARAMS hp = { .fn = look, .userData = &c->p };
    CUDA_MEMCPY3D down, up;

    memset(c, 0, sizeof(*c));
    CU_OK(cuMemAlloc(&c->a, N * sizeof(int)));
    CU_OK(cuMemAlloc(&c->b, N * sizeof(int)));
    CU_OK(cuMemAllocHost((void **)&c->in, N * sizeof(int)));
    CU_OK(cuMemAllocHost((void **)&c->out, N * sizeof(int)));
    c->p.in = c->in;
    c->p.out = c->out;
    hp.userData = &c->p;
    ms.dst = c->a;
    down = copy(CU_MEMORYTYPE_DEVICE, NULL, c->a, CU_MEMORYTYPE_HOST, c->in, 0);
    up = copy(CU_MEMORYTYPE_HOST, c->out, 0, CU_MEMORYTYPE_DEVICE, NULL, c->b);
    CU_OK(cuGraphCreate(&c->g, 0));
    /* Added out of order: the edges alone decide when each runs. */
    CU_OK(cuGraphAddMemcpyNode(&c->up, c->g, NULL, 0, &up, NULL));
    CU_OK(cuGraphAddHostNode(&c->host, c->g, NULL, 0, &hp));
    CU_OK(cuGraphAddMemsetNode(&c->fill, c->g, NULL, 0, &ms, NULL));
    CU_OK(cuGraphAddMemcpyNode(&c->down, c->g, &c->fill, 1, &down, NULL));
    CU_OK(cuGraphAddDependencies(c->g, &c->down, &c->host, NULL, 1));
    CU_OK(cuGraphAddDependencies(c->g, &c->host, &c->up, NULL, 1));
}

static void free_chain(struct chain *c)
{
    CU_OK(cuGraphDestroy(c->g));
    CU_OK(cuMemFreeHost(c->in));
    CU_OK(cuMemFreeHost(c->out));
    CU_OK(cuMemFree(c->a));
    CU_OK(cuMemFree(c->b));
}

Test(graph_host, a_host_node_runs_here_between_its_dependencies_and_its_dependents)
{
    struct chain c;
    CUgraphExec e;
    CUgraphNodeType type;

    build_chain(&c, 41);
    CU_OK(cuGraphNodeGetType(c.host, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_HOST);
    CU_OK(cuGraphInstantiate(&e, c.g, 0));
    for (int launch = 1; launch <= 3; launch++) {
        c.in[0] = -1;
        CU_OK(cuMemsetD32(c.b, 0, N));
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        cr_assert_eq(c.p.calls, launch, "the function runs once per launch");
        cr_assert_eq(c.p.seen, 41, "it ran after the fill and the copy down");
        cr_assert_eq(read_at(c.b, N - 1), 42, "the copy up ran after it");
    }
    CU_OK(cuGraphExecDestroy(e));
    free_chain(&c);
}

Test(graph_host, parameters_are_read_and_set_in_the_graph_and_in_an_instance)
{
    struct chain c;
    struct probe other = { 0 };
    CUDA_HOST_NODE_PARAMS hp;
    CUgraphExec e;

    build_chain(&c, 5);
    CU_OK(cuGraphHostNodeGetParams(c.host, &hp));
    cr_assert_eq((void *)hp.fn, (void *)look);
    cr_assert_eq(hp.userData, &c.p);
    CU_OK(cuGraphInstantiate(&e, c.g, 0));

    /* In the instance only: the graph keeps its function. */
    other.in = c.in;
    other.out = c.out;
    hp = (CUDA_HOST_NODE_PARAMS){ .fn = look_again, .userData = &other };
    CU_OK(cuGraphExecHostNodeSetParams(e, c.host, &hp));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(other.calls, 1);
    cr_assert_eq(other.tag, 2);
    cr_assert_eq(c.p.calls, 0);
    CU_OK(cuGraphHostNodeGetParams(c.host, &hp));
    cr_assert_eq((void *)hp.fn, (void *)look);

    /* In the graph: a new instance has it. */
    hp = (CUDA_HOST_NODE_PARAMS){ .fn = look_again, .userData = &c.p };
    CU_OK(cuGraphHostNodeSetParams(c.host, &hp));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphInstantiate(&e, c.g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(c.p.tag, 2);
    cr_assert_eq(c.p.seen, 5);
    CU_IS(cuGraphAddHostNode(&c.host, c.g, NULL, 0, &(CUDA_HOST_NODE_PARAMS){ 0 }),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphExecDestroy(e));
    free_chain(&c);
}

/* Two host nodes in a row and one beside them: each runs once, the second after the
 * first (it sees what the first wrote), and the generic cuGraphAddNode adds one too. */
Test(graph_host, host_nodes_after_host_nodes_run_in_order)
{
    int buf[N], out2[N];
    struct probe first = { .in = buf, .out = buf }, second = { .in = buf, .out = out2 };
    struct probe beside = { .in = out2, .out = out2 };
    CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_HOST };
    CUDA_HOST_NODE_PARAMS hp = { .fn = look, .userData = &first };
    CUgraphNode a, b, c;
    CUgraphExec e;
    CUgraph g;

    memset(buf, 0, sizeof(buf));
    memset(out2, 0, sizeof(out2));
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddHostNode(&a, g, NULL, 0, &hp));
    np.host.fn = look;
    np.host.userData = &second;
    CU_OK(cuGraphAddNode(&b, g, &a, NULL, 1, &np));
    hp.userData = &beside;
    CU_OK(cuGraphAddHostNode(&c, g, NULL, 0, &hp));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(first.calls, 1);
    cr_assert_eq(second.calls, 1);
    cr_assert_eq(beside.calls, 1);
    cr_assert_eq(second.seen, 1, "the second saw the first's write");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
}

Test(graph_host, a_clone_calls_the_same_function)
{
    struct chain c;
    CUgraph clone;
    CUgraphNode copy;
    CUgraphExec e;
    CUDA_HOST_NODE_PARAMS hp;

    build_chain(&c, 9);
    CU_OK(cuGraphClone(&clone, c.g));
    CU_OK(cuGraphNodeFindInClone(&copy, c.host, clone));
    cr_assert_neq(copy, c.host);
    CU_OK(cuGraphHostNodeGetParams(copy, &hp));
    cr_assert_eq(hp.userData, &c.p);
    CU_OK(cuGraphInstantiate(&e, clone, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(c.p.calls, 1);
    cr_assert_eq(c.p.seen, 9);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(clone));
    free_chain(&c);
}

Test(graph_host, refused_as_a_child_graph_and_on_a_capturing_stream)
{
    struct chain c;
    CUgraph parent, captured;
    CUgraphNode n;
    CUgraphExec e;
    CUstream cs;

    build_chain(&c, 1);
    CU_OK(cuGraphCreate(&parent, 0));
    CU_IS(cuGraphAddChildGraphNode(&n, parent, NULL, 0, c.g), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphInstantiate(&e, c.g, 0));
    CU_OK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_IS(cuGraphLaunch(e, cs), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_IS(cuStreamEndCapture(cs, &captured), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_eq(c.p.calls, 0);
    CU_OK(cuStreamDestroy(cs));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(parent));
    free_chain(&c);
}

/* The tenant leaves with a staged instance alive: the executor frees its stages (the
 * fixture's stop fails on any leak the sanitizer sees). */
Test(graph_host, a_tenant_leaving_frees_staged_instances)
{
    struct chain c;
    CUgraphExec e;

    build_chain(&c, 3);
    CU_OK(cuGraphInstantiate(&e, c.g, 0));
    CU_OK(cuGraphLaunch(e, s));
}
