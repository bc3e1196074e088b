/* Child graph nodes: the node runs a copy of the graph made when it was added (later
 * changes to the original do not reach it), in its place among the parent's edges; the
 * copy is reported and cannot be edited or destroyed on its own; an instance takes a new
 * graph of the same shape; clones copy it again. */
#include "ds_test.h"

#include <stdio.h>

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

TestSuite(graph_child, .init = start, .fini = stop, .timeout = 120);

static int read_at(CUdeviceptr p, int i)
{
    int v;

    CU_OK(cuMemcpyDtoH(&v, p + (CUdeviceptr)i * sizeof(int), sizeof(v)));
    return v;
}

/* A graph of one fill of `dst` with v, and its node in *node. */
static CUgraph fill_graph(CUdeviceptr dst, unsigned v, CUgraphNode *node)
{
    CUDA_MEMSET_NODE_PARAMS ms = { .dst = dst, .value = v, .elementSize = 4, .width = N,
                                   .height = 1 };
    CUgraph g;

    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddMemsetNode(node, g, NULL, 0, &ms, NULL));
    return g;
}

static CUgraphNode add_copy(CUgraph g, CUdeviceptr dst, CUdeviceptr src, CUgraphNode *deps,
                            size_t ndeps)
{
    CUDA_MEMCPY3D cp = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
                         .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
    CUgraphNode n;

    CU_OK(cuGraphAddMemcpyNode(&n, g, deps, ndeps, &cp, NULL));
    return n;
}

/* parent: child (fill a with 5) -> copy a to b. */
Test(graph_child, the_child_runs_in_its_place_as_it_was_when_added)
{
    CUdeviceptr a, b;
    CUgraphNode fill, child, n;
    CUgraph inner, parent, copy;
    CUgraphExec e;
    CUgraphNodeType type;
    CUDA_MEMSET_NODE_PARAMS ms;
    size_t count = 0;

    CU_OK(cuMemAlloc(&a, N * sizeof(int)));
    CU_OK(cuMemAlloc(&b, N * sizeof(int)));
    inner = fill_graph(a, 5, &fill);
    CU_OK(cuGraphCreate(&parent, 0));
    CU_OK(cuGraphAddChildGraphNode(&child, parent, NULL, 0, inner));
    add_copy(parent, b, a, &child, 1);
    /* Changed after the node copied it: the node keeps 5. */
    ms = (CUDA_MEMSET_NODE_PARAMS){ .dst = a, .value = 6, .elementSize = 4, .width = N,
                                    .height = 1 };
    CU_OK(cuGraphMemsetNodeSetParams(fill, &ms));
    CU_OK(cuGraphDestroy(inner));

    CU_OK(cuGraphNodeGetType(child, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_GRAPH);
    CU_OK(cuGraphChildGraphNodeGetGraph(child, &copy));
    CU_OK(cuGraphGetNodes(copy, NULL, &count));
    cr_assert_eq(count, 1);
    CU_OK(cuGraphGetNodes(copy, &n, &count));
    CU_OK(cuGraphMemsetNodeGetParams(n, &ms));
    cr_assert_eq(ms.value, 5);
    CU_IS(cuGraphAddEmptyNode(&n, copy, NULL, 0), CUDA_ERROR_NOT_SUPPORTED);
    CU_IS(cuGraphDestroy(copy), CUDA_ERROR_INVALID_VALUE);

    CU_OK(cuMemsetD32(b, 0, N));
    CU_OK(cuGraphInstantiate(&e, parent, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read_at(b, N - 1), 5);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(parent));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
}

Test(graph_child, an_instance_takes_a_new_graph_of_the_same_shape)
{
    CUdeviceptr a, b;
    CUgraphNode fill, child, other;
    CUgraph inner, inner2, wrong, parent;
    CUgraphExec e;

    CU_OK(cuMemAlloc(&a, N * sizeof(int)));
    CU_OK(cuMemAlloc(&b, N * sizeof(int)));
    inner = fill_graph(a, 1, &fill);
    inner2 = fill_graph(b, 2, &fill);
    wrong = fill_graph(b, 3, &fill);
    add_copy(wrong, a, b, &fill, 1);
    CU_OK(cuGraphCreate(&parent, 0));
    CU_OK(cuGraphAddChildGraphNode(&child, parent, NULL, 0, inner));
    CU_OK(cuGraphInstantiate(&e, parent, 0));
    CU_OK(cuGraphExecChildGraphNodeSetParams(e, child, inner2));
    /* What the driver answers (H100, run 80). */
    CU_IS(cuGraphExecChildGraphNodeSetParams(e, child, wrong),
          CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CU_OK(cuMemsetD32(a, 0, N));
    CU_OK(cuMemsetD32(b, 0, N));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read_at(a, 0), 0, "the old child graph no longer runs");
    cr_assert_eq(read_at(b, 0), 2, "the new one does");
    CU_IS(cuGraphAddChildGraphNode(&other, parent, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(parent));
    CU_OK(cuGraphDestroy(inner));
    CU_OK(cuGraphDestroy(inner2));
    CU_OK(cuGraphDestroy(wrong));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
}

/* A child inside a child, cloned: the clone runs, and its child graph is its own. */
Test(graph_child, nested_children_clone_and_run)
{
    CUdeviceptr a, b;
    CUgraphNode fill, mid_node, top_node, cloned;
    CUgraph inner, mid, top, clone, g1, g2;
    CUgraphExec e;

    CU_OK(cuMemAlloc(&a, N * sizeof(int)));
    CU_OK(cuMemAlloc(&b, N * sizeof(int)));
    inner = fill_graph(a, 7, &fill);
    CU_OK(cuGraphCreate(&mid, 0));
    CU_OK(cuGraphAddChildGraphNode(&mid_node, mid, NULL, 0, inner));
    add_copy(mid, b, a, &mid_node, 1);
    CU_OK(cuGraphCreate(&top, 0));
    CU_OK(cuGraphAddChildGraphNode(&top_node, top, NULL, 0, mid));
    CU_OK(cuGraphClone(&clone, top));
    CU_OK(cuGraphNodeFindInClone(&cloned, top_node, clone));
    CU_OK(cuGraphChildGraphNodeGetGraph(top_node, &g1));
    CU_OK(cuGraphChildGraphNodeGetGraph(cloned, &g2));
    cr_assert_neq(g1, g2);
    CU_OK(cuGraphDestroy(top));
    CU_OK(cuMemsetD32(b, 0, N));
    CU_OK(cuGraphInstantiate(&e, clone, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read_at(b, N - 1), 7);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(clone));
    CU_OK(cuGraphDestroy(mid));
    CU_OK(cuGraphDestroy(inner));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
}

/* The tenant leaves with parents, children and an instance alive (the fixture's stop
 * fails on any leak the sanitizer sees). */
Test(graph_child, a_tenant_leaving_frees_child_graphs)
{
    CUdeviceptr a;
    CUgraphNode fill, child;
    CUgraph inner, parent;
    CUgraphExec e;

    CU_OK(cuMemAlloc(&a, N * sizeof(int)));
    inner = fill_graph(a, 1, &fill);
    CU_OK(cuGraphCreate(&parent, 0));
    CU_OK(cuGraphAddChildGraphNode(&child, parent, NULL, 0, inner));
    CU_OK(cuGraphInstantiate(&e, parent, 0));
}
