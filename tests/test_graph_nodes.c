/* Graphs built node by node: nodes run in dependency order at each launch, the graph's
 * shape is reported as built, kernel nodes can be given new parameters, and what the
 * executor cannot hold in a graph or does not own is refused.  On the sim kernels compute
 * nothing, so their results are checked on the GPU only. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256

static struct ds_test_server srv;
static CUstream s;
static CUfunction fill; /* fill(int *out, int v, int n): out[i] = v + i */

static void start(void)
{
    char path[512];

    ds_test_server_start(&srv, 0, NULL);
    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    snprintf(path, sizeof(path), "%s/launch.fatbin", DS_KERNEL_DIR);
    CU_OK(cuModuleGetFunction(&fill, ds_test_module(path), "fill"));
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(graph_nodes, .init = start, .fini = stop, .timeout = 120);

struct fill_args {
    CUdeviceptr out;
    int v, n;
    void *params[3];
};

static CUDA_KERNEL_NODE_PARAMS fill_node(struct fill_args *a, CUdeviceptr out, int v)
{
    CUDA_KERNEL_NODE_PARAMS p = { .func = fill, .gridDimX = N / 64, .gridDimY = 1,
                                  .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1,
                                  .blockDimZ = 1, .kernelParams = a->params };

    a->out = out;
    a->v = v;
    a->n = N;
    a->params[0] = &a->out;
    a->params[1] = &a->v;
    a->params[2] = &a->n;
    return p;
}

static int read_at(CUdeviceptr p, int i)
{
    int v;

    CU_OK(cuMemcpyDtoH(&v, p + (CUdeviceptr)i * sizeof(int), sizeof(v)));
    return v;
}

/* The diamond: a fill of a, then kernels writing b and c, then a copy of a into out.
 * The copy is added first, with no dependencies, and ordered last by edges added after. */
struct diamond {
    CUgraph g;
    CUgraphNode copy, set, k1, k2;
    CUdeviceptr a, b, c, out;
};

static void build_diamond(struct diamond *d)
{
    struct fill_args a1, a2;
    CUDA_KERNEL_NODE_PARAMS k1 = fill_node(&a1, 0, 0), k2;
    CUDA_MEMSET_NODE_PARAMS ms = { .value = 7, .elementSize = 4, .width = N, .height = 1 };
    CUDA_MEMCPY3D cp = { .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                         .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
    CUgraphNode from[2], to[2];

    CU_OK(cuMemAlloc(&d->a, N * sizeof(int)));
    CU_OK(cuMemAlloc(&d->b, N * sizeof(int)));
    CU_OK(cuMemAlloc(&d->c, N * sizeof(int)));
    CU_OK(cuMemAlloc(&d->out, N * sizeof(int)));
    k1 = fill_node(&a1, d->b, 100);
    k2 = fill_node(&a2, d->c, 200);
    ms.dst = d->a;
    cp.srcDevice = d->a;
    cp.dstDevice = d->out;
    CU_OK(cuGraphCreate(&d->g, 0));
    CU_OK(cuGraphAddMemcpyNode(&d->copy, d->g, NULL, 0, &cp, NULL));
    CU_OK(cuGraphAddMemsetNode(&d->set, d->g, NULL, 0, &ms, NULL));
    CU_OK(cuGraphAddKernelNode(&d->k1, d->g, &d->set, 1, &k1));
    CU_OK(cuGraphAddKernelNode(&d->k2, d->g, &d->set, 1, &k2));
    from[0] = d->k1;
    from[1] = d->k2;
    to[0] = to[1] = d->copy;
    CU_OK(cuGraphAddDependencies(d->g, from, to, NULL, 2));
}

static void reset(const struct diamond *d)
{
    CU_OK(cuMemsetD32(d->a, 0, N));
    CU_OK(cuMemsetD32(d->b, 0, N));
    CU_OK(cuMemsetD32(d->c, 0, N));
    CU_OK(cuMemsetD32(d->out, 1, N));
}

Test(graph_nodes, diamond_runs_in_dependency_order_at_every_launch)
{
    struct diamond d;
    CUgraphExec e;

    build_diamond(&d);
    CU_OK(cuGraphInstantiate(&e, d.g, 0));
    for (int launch = 0; launch < 3; launch++) {
        reset(&d);
        cr_assert_eq(read_at(d.out, 0), 1, "nothing runs before the launch");
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        cr_assert_eq(read_at(d.a, N - 1), 7, "launch %d: the fill ran", launch);
        cr_assert_eq(read_at(d.out, 0), 7, "launch %d: the copy ran after the fill", launch);
        cr_assert_eq(read_at(d.out, N - 1), 7);
        if (!ds_test_on_sim()) {
            cr_assert_eq(read_at(d.b, 5), 105, "launch %d: the first kernel ran", launch);
            cr_assert_eq(read_at(d.c, N - 1), 200 + N - 1, "launch %d: the second", launch);
        }
    }
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(d.g));
}

static void assert_set(const CUgraphNode *got, size_t n, const CUgraphNode *want, size_t nwant,
                       const char *what)
{
    cr_assert_eq(n, nwant, "%s: %zu nodes, expected %zu", what, n, nwant);
    for (size_t i = 0; i < nwant; i++) {
        int found = 0;

        for (size_t j = 0; j < n; j++)
            found |= got[j] == want[i];
        cr_assert(found, "%s: node %zu missing", what, i);
    }
}

Test(graph_nodes, dependencies_and_roots_are_reported_as_built)
{
    struct diamond d;
    CUgraphNode v[8], from[8], to[8];
    CUgraphNodeType type;
    size_t n;

    build_diamond(&d);
    n = 8;
    CU_OK(cuGraphGetNodes(d.g, v, &n));
    assert_set(v, n, (CUgraphNode[]){ d.copy, d.set, d.k1, d.k2 }, 4, "nodes");
    cr_assert_eq(v[0], d.copy, "in the order they were added");
    CU_OK(cuGraphGetNodes(d.g, NULL, &n));
    cr_assert_eq(n, 4);
    n = 8;
    CU_OK(cuGraphGetRootNodes(d.g, v, &n));
    assert_set(v, n, &d.set, 1, "roots");
    cr_assert_null(v[1], "entries past the roots are NULL");
    n = 8;
    CU_OK(cuGraphNodeGetDependencies(d.copy, v, NULL, &n));
    assert_set(v, n, (CUgraphNode[]){ d.k1, d.k2 }, 2, "the copy's dependencies");
    n = 8;
    CU_OK(cuGraphNodeGetDependentNodes(d.set, v, NULL, &n));
    assert_set(v, n, (CUgraphNode[]){ d.k1, d.k2 }, 2, "the fill's dependents");
    CU_OK(cuGraphGetEdges(d.g, NULL, NULL, NULL, &n));
    cr_assert_eq(n, 4, "four edges");
    n = 8;
    CU_OK(cuGraphGetEdges(d.g, from, to, NULL, &n));
    for (size_t i = 0; i < n; i++)
        cr_assert((from[i] == d.set && (to[i] == d.k1 || to[i] == d.k2)) ||
                  ((from[i] == d.k1 || from[i] == d.k2) && to[i] == d.copy), "edge %zu", i);
    CU_OK(cuGraphNodeGetType(d.copy, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_MEMCPY);
    CU_OK(cuGraphNodeGetType(d.set, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_MEMSET);
    CU_OK(cuGraphNodeGetType(d.k1, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_KERNEL);

    CU_OK(cuGraphRemoveDependencies(d.g, &d.set, &d.k1, NULL, 1));
    n = 8;
    CU_OK(cuGraphGetRootNodes(d.g, v, &n));
    assert_set(v, n, (CUgraphNode[]){ d.set, d.k1 }, 2, "roots after removing an edge");
    CU_OK(cuGraphDestroyNode(d.k2));
    n = 8;
    CU_OK(cuGraphNodeGetDependencies(d.copy, v, NULL, &n));
    assert_set(v, n, &d.k1, 1, "a destroyed node's edges go with it");
    CU_IS(cuGraphNodeGetType(d.k2, &type), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuGraphDestroy(d.g));
    CU_IS(cuGraphNodeGetType(d.k1, &type), CUDA_ERROR_INVALID_HANDLE);
}

Test(graph_nodes, a_clone_runs_like_its_original)
{
    struct diamond d;
    CUgraph c;
    CUgraphExec e;
    CUgraphNode v[8];
    size_t n = 8;

    build_diamond(&d);
    CU_OK(cuGraphClone(&c, d.g));
    CU_OK(cuGraphDestroy(d.g));
    CU_OK(cuGraphGetNodes(c, v, &n));
    cr_assert_eq(n, 4);
    n = 8;
    CU_OK(cuGraphGetRootNodes(c, v, &n));
    cr_assert_eq(n, 1, "the clone has the original's edges");
    CU_OK(cuGraphInstantiate(&e, c, 0));
    reset(&d);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read_at(d.out, 3), 7);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(c));
}

Test(graph_nodes, kernel_parameters_change_in_the_graph_and_in_an_instance)
{
    struct fill_args a;
    CUDA_KERNEL_NODE_PARAMS p;
    CUdeviceptr buf;
    CUgraph g;
    CUgraphNode k, empty;
    CUgraphExec e;

    CU_OK(cuMemAlloc(&buf, N * sizeof(int)));
    CU_OK(cuMemsetD32(buf, 0, N));
    p = fill_node(&a, buf, 1);
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddKernelNode(&k, g, NULL, 0, &p));
    CU_OK(cuGraphAddEmptyNode(&empty, g, &k, 1));
    p = fill_node(&a, buf, 2);
    CU_OK(cuGraphKernelNodeSetParams(k, &p));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    if (!ds_test_on_sim())
        cr_assert_eq(read_at(buf, 0), 2, "the graph's new parameters were instantiated");
    p = fill_node(&a, buf, 5);
    CU_OK(cuGraphExecKernelNodeSetParams(e, k, &p));
    CU_IS(cuGraphExecKernelNodeSetParams(e, empty, &p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    if (!ds_test_on_sim())
        cr_assert_eq(read_at(buf, 10), 15, "the instance's new parameters took effect");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
}

Test(graph_nodes, bad_handles_shapes_and_layouts_are_refused)
{
    struct fill_args a;
    CUDA_KERNEL_NODE_PARAMS p;
    CUDA_MEMSET_NODE_PARAMS ms = { .value = 1, .elementSize = 4, .width = N + 1, .height = 1 };
    CUdeviceptr buf;
    CUgraph g, h;
    CUgraphNode n, other;
    unsigned char small[8];
    size_t len = sizeof(small);
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, small, CU_LAUNCH_PARAM_BUFFER_SIZE, &len,
                      CU_LAUNCH_PARAM_END };

    CU_OK(cuMemAlloc(&buf, N * sizeof(int)));
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphCreate(&h, 0));
    CU_IS(cuGraphAddEmptyNode(&n, (CUgraph)(uintptr_t)0x12345, NULL, 0),
          CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuGraphAddEmptyNode(&other, h, NULL, 0));
    CU_IS(cuGraphAddEmptyNode(&n, g, &other, 1), CUDA_ERROR_INVALID_VALUE);
    p = fill_node(&a, buf, 1);
    p.kernelParams = NULL;
    p.extra = extra;
    CU_IS(cuGraphAddKernelNode(&n, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
    p = fill_node(&a, buf, 1);
    p.blockDimX = 4096;
    CU_IS(cuGraphAddKernelNode(&n, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
    ms.dst = buf;
    CU_IS(cuGraphAddMemsetNode(&n, g, NULL, 0, &ms, NULL), CUDA_ERROR_INVALID_VALUE);
    ms.width = N;
    ms.elementSize = 3;
    CU_IS(cuGraphAddMemsetNode(&n, g, NULL, 0, &ms, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphAddDependencies(g, &other, &other, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphRemoveDependencies(h, &other, &other, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuGraphDestroy(h));
}

Test(graph_nodes, a_cycle_never_runs)
{
    CUgraph g;
    CUgraphNode x, y;
    CUgraphExec e;
    CUresult rc;

    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddEmptyNode(&x, g, NULL, 0));
    CU_OK(cuGraphAddEmptyNode(&y, g, &x, 1));
    rc = cuGraphAddDependencies(g, &y, &x, NULL, 1);
    if (rc == CUDA_SUCCESS)
        cr_assert_neq(cuGraphInstantiate(&e, g, 0), CUDA_SUCCESS,
                      "a graph with a cycle is not instantiated");
    CU_IS(cuGraphAddDependencies(g, &x, &y, NULL, 1), CUDA_ERROR_INVALID_VALUE); /* already there */
    CU_OK(cuGraphDestroy(g));
}

/* A captured graph's nodes are the backend's: it takes no more (copies of pageable host
 * memory, served in built graphs, are test_graph_hostcopy's). */
Test(graph_nodes, captured_graphs_take_no_new_nodes)
{
    CUdeviceptr buf;
    CUgraph g;
    CUgraphNode n;

    CU_OK(cuMemAlloc(&buf, N * sizeof(int)));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD32Async(buf, 1, N, s));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_IS(cuGraphAddEmptyNode(&n, g, NULL, 0), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphDestroy(g));
}

Test(graph_nodes, page_locked_host_memory_is_copied_at_each_launch)
{
    CUDA_MEMCPY3D cp = { .srcMemoryType = CU_MEMORYTYPE_HOST,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                         .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
    CUdeviceptr buf;
    CUgraph g;
    CUgraphNode n;
    CUgraphExec e;
    int *host;

    CU_OK(cuMemAllocHost((void **)&host, N * sizeof(int)));
    CU_OK(cuMemAlloc(&buf, N * sizeof(int)));
    cp.srcHost = host;
    cp.dstDevice = buf;
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddMemcpyNode(&n, g, NULL, 0, &cp, NULL));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    for (int v = 1; v <= 2; v++) {
        for (int i = 0; i < N; i++)
            host[i] = v * 1000 + i;
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        cr_assert_eq(read_at(buf, N - 1), v * 1000 + N - 1, "launch %d copied the host's bytes",
                     v);
    }
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFreeHost(host));
}

/* The tenant leaves with a graph, its nodes and an instance alive: the executor frees
 * them (the fixture's stop fails on any leak the sanitizer sees). */
Test(graph_nodes, a_tenant_leaving_frees_its_graphs)
{
    struct diamond d;
    CUgraphExec e;

    build_diamond(&d);
    CU_OK(cuGraphInstantiate(&e, d.g, 0));
}
