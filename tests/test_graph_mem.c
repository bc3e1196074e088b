/* Memory allocation and free nodes: an allocation node's memory has its address when the
 * node is added, nodes after it use it at every launch, and it is the tenant's graph
 * memory (counted, reported by the graph memory attributes) until the node and every
 * instance of its graph are gone. */
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

TestSuite(graph_mem, .init = start, .fini = stop, .timeout = 120);

static int read_at(CUdeviceptr p, int i)
{
    int v;

    CU_OK(cuMemcpyDtoH(&v, p + (CUdeviceptr)i * sizeof(int), sizeof(v)));
    return v;
}

static cuuint64_t used(void)
{
    cuuint64_t v = 1;

    CU_OK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v));
    return v;
}

/* alloc -> fill it with v -> copy it to out -> free it. */
struct chain {
    CUgraph g;
    CUgraphNode alloc, fill, copy, free;
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    CUdeviceptr out;
};

static void build(struct chain *c, unsigned v)
{
    CUDA_MEMSET_NODE_PARAMS ms = { .value = v, .elementSize = 4, .width = N, .height = 1 };
    CUDA_MEMCPY3D cp = { .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                         .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };

    memset(c, 0, sizeof(*c));
    CU_OK(cuMemAlloc(&c->out, N * sizeof(int)));
    c->ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    c->ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    c->ap.bytesize = N * sizeof(int);
    CU_OK(cuGraphCreate(&c->g, 0));
    CU_OK(cuGraphAddMemAllocNode(&c->alloc, c->g, NULL, 0, &c->ap));
    cr_assert_neq(c->ap.dptr, 0);
    ms.dst = c->ap.dptr;
    CU_OK(cuGraphAddMemsetNode(&c->fill, c->g, &c->alloc, 1, &ms, NULL));
    cp.srcDevice = c->ap.dptr;
    cp.dstDevice = c->out;
    CU_OK(cuGraphAddMemcpyNode(&c->copy, c->g, &c->fill, 1, &cp, NULL));
    CU_OK(cuGraphAddMemFreeNode(&c->free, c->g, &c->copy, 1, c->ap.dptr));
}

static int run(CUgraphExec e, CUdeviceptr out)
{
    CU_OK(cuMemsetD32(out, 0, N));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    return read_at(out, N - 1);
}

Test(graph_mem, nodes_use_the_allocation_at_every_launch)
{
    struct chain c;
    CUDA_MEM_ALLOC_NODE_PARAMS got;
    CUgraphNodeType type;
    CUdeviceptr freed;
    CUgraphExec e;

    build(&c, 17);
    CU_OK(cuGraphNodeGetType(c.alloc, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    CU_OK(cuGraphNodeGetType(c.free, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_MEM_FREE);
    CU_OK(cuGraphMemAllocNodeGetParams(c.alloc, &got));
    cr_assert_eq(got.dptr, c.ap.dptr);
    cr_assert_eq(got.bytesize, N * sizeof(int));
    CU_OK(cuGraphMemFreeNodeGetParams(c.free, &freed));
    cr_assert_eq(freed, c.ap.dptr);
    CU_OK(cuGraphInstantiate(&e, c.g, 0));
    for (int launch = 0; launch < 3; launch++)
        cr_assert_eq(run(e, c.out), 17);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(c.g));
    CU_OK(cuMemFree(c.out));
}

Test(graph_mem, graph_memory_is_counted_until_its_last_holder_goes)
{
    struct chain c;
    CUgraphExec e;
    cuuint64_t high = 0, zero = 0;

    cr_assert_eq(used(), 0);
    build(&c, 5);
    cr_assert_eq(used(), N * sizeof(int));
    CU_OK(cuGraphInstantiate(&e, c.g, 0));
    CU_OK(cuGraphDestroy(c.g));
    cr_assert_eq(used(), N * sizeof(int), "the instance holds it");
    CU_OK(cuMemFree(c.ap.dptr));
    cr_assert_eq(run(e, c.out), 5, "cuMemFree leaves the node's memory to it");
    CU_OK(cuGraphExecDestroy(e));
    cr_assert_eq(used(), 0);
    CU_OK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &high));
    cr_assert_geq(high, N * sizeof(int));
    CU_OK(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
    CU_OK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &high));
    cr_assert_eq(high, 0);
    high = 5;
    CU_IS(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &high),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuMemFree(c.out));
}

Test(graph_mem, bad_sizes_pointers_and_copies_are_refused)
{
    struct chain c;
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    CUgraphNode n;
    CUgraph clone;

    build(&c, 1);
    ap = c.ap;
    ap.bytesize = 0;
    CU_IS(cuGraphAddMemAllocNode(&n, c.g, NULL, 0, &ap), CUDA_ERROR_INVALID_VALUE);
    ap.bytesize = 64;
    ap.poolProps.location.id = 3;
    CU_IS(cuGraphAddMemAllocNode(&n, c.g, NULL, 0, &ap), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphAddMemFreeNode(&n, c.g, NULL, 0, c.out), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphAddMemFreeNode(&n, c.g, NULL, 0, c.ap.dptr + 4), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphClone(&clone, c.g), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphDestroyNode(c.free));
    CU_OK(cuGraphDestroyNode(c.alloc));
    cr_assert_eq(used(), 0, "the node's memory went with it");
    CU_OK(cuGraphDestroy(c.g));
    CU_OK(cuMemFree(c.out));
}

/* The tenant leaves with graph memory held by a graph and an instance (the fixture's
 * stop fails on any leak the sanitizer sees). */
Test(graph_mem, a_tenant_leaving_frees_graph_memory)
{
    struct chain c;
    CUgraphExec e;

    build(&c, 2);
    CU_OK(cuGraphInstantiate(&e, c.g, 0));
}

/* cuMemAllocAsync and cuMemFreeAsync in a capture: the allocation is the captured
 * graph's, there at every launch, until the graph and its instances are gone. */
Test(graph_mem, stream_ordered_allocation_is_captured_into_the_graph)
{
    CUdeviceptr p, out;
    CUstream cs;
    CUgraph g;
    CUgraphExec e;

    CU_OK(cuMemAlloc(&out, N * sizeof(int)));
    CU_OK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&p, N * sizeof(int), cs));
    CU_OK(cuMemsetD32Async(p, 23, N, cs));
    CU_OK(cuMemcpyDtoDAsync(out, p, N * sizeof(int), cs));
    CU_OK(cuMemFreeAsync(p, cs));
    CU_OK(cuStreamEndCapture(cs, &g));
    cr_assert_eq(used(), N * sizeof(int));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphDestroy(g));
    cr_assert_eq(run(e, out), 23);
    cr_assert_eq(run(e, out), 23);
    CU_OK(cuGraphExecDestroy(e));
    cr_assert_eq(used(), 0);
    CU_OK(cuStreamDestroy(cs));
    CU_OK(cuMemFree(out));
}

/* As the CUDA sample graphMemoryNodes builds its graph by hand: allocations and frees
 * around device work, with copies of pageable memory in and out, which make the instance
 * run in stages (ops_gstage.c).  The sim runs no kernel code, so device copies stand for
 * the sample's kernels: "square" copies in to sq, "negate" sq to neg.
 *
 *   alloc in -> alloc sq -> copy hin to in -> square -> copy sq to hsq --------.
 *                                               `-> free in -> alloc neg -> negate -> free sq
 *                                                                    `-> copy neg to hneg [-> free neg]
 */
struct negsq {
    CUgraph g;
    CUdeviceptr in, sq, neg;
    int hin[N], hsq[N], hneg[N];
};

static CUgraphNode alloc_node(CUgraph g, const CUgraphNode *after, CUdeviceptr *at)
{
    CUDA_MEM_ALLOC_NODE_PARAMS ap = { .bytesize = N * sizeof(int) };
    CUgraphNode n;

    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CU_OK(cuGraphAddMemAllocNode(&n, g, after, after != NULL, &ap));
    *at = ap.dptr;
    return n;
}

static CUgraphNode copy_node(CUgraph g, const CUgraphNode *after, size_t nafter,
                             CUmemorytype st, const void *sh, CUdeviceptr sd, CUmemorytype dt,
                             void *dh, CUdeviceptr dd)
{
    CUDA_MEMCPY3D c = { .srcMemoryType = st, .srcHost = sh, .srcDevice = sd,
                        .dstMemoryType = dt, .dstHost = dh, .dstDevice = dd,
                        .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
    CUcontext ctx;
    CUgraphNode n;

    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuGraphAddMemcpyNode(&n, g, after, nafter, &c, ctx));
    return n;
}

static void build_negsq(struct negsq *x, int free_neg)
{
    const CUmemorytype H = CU_MEMORYTYPE_HOST, D = CU_MEMORYTYPE_DEVICE;
    CUgraphNode a_in, a_sq, c_in, square, c_sq, f_in, a_neg, negate, c_neg, f, two[2];

    CU_OK(cuGraphCreate(&x->g, 0));
    a_in = alloc_node(x->g, NULL, &x->in);
    a_sq = alloc_node(x->g, &a_in, &x->sq);
    c_in = copy_node(x->g, &a_sq, 1, H, x->hin, 0, D, NULL, x->in);
    square = copy_node(x->g, &c_in, 1, D, NULL, x->in, D, NULL, x->sq);
    c_sq = copy_node(x->g, &square, 1, D, NULL, x->sq, H, x->hsq, 0);
    CU_OK(cuGraphAddMemFreeNode(&f_in, x->g, &square, 1, x->in));
    a_neg = alloc_node(x->g, &f_in, &x->neg);
    negate = copy_node(x->g, &a_neg, 1, D, NULL, x->sq, D, NULL, x->neg);
    two[0] = c_sq;
    two[1] = negate;
    CU_OK(cuGraphAddMemFreeNode(&f, x->g, two, 2, x->sq));
    c_neg = copy_node(x->g, &negate, 1, D, NULL, x->neg, H, x->hneg, 0);
    if (free_neg)
        CU_OK(cuGraphAddMemFreeNode(&f, x->g, &c_neg, 1, x->neg));
}

/* Launch e with hin[i] = v + i: both copies out come back with it. */
static void run_negsq(CUgraphExec e, struct negsq *x, int v)
{
    for (int i = 0; i < N; i++) {
        x->hin[i] = v + i;
        x->hsq[i] = x->hneg[i] = -1;
    }
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    for (int i = 0; i < N; i++) {
        cr_assert_eq(x->hsq[i], v + i, "launch with %d: sq word %d is %d", v, i, x->hsq[i]);
        cr_assert_eq(x->hneg[i], v + i, "launch with %d: neg word %d is %d", v, i, x->hneg[i]);
    }
}

Test(graph_mem, memory_nodes_in_a_graph_that_runs_in_stages)
{
    struct negsq x;
    CUgraphExec e;

    build_negsq(&x, 1);
    CU_OK(cuGraphInstantiate(&e, x.g, 0));
    CU_OK(cuGraphDestroy(x.g));
    run_negsq(e, &x, 100);
    run_negsq(e, &x, 200);
    CU_OK(cuGraphExecDestroy(e));
    cr_assert_eq(used(), 0);
}

/* The allocation the graph does not free is used after it, then freed by cuMemFree, by
 * cuMemFreeAsync and by a graph of one free node, and each launch allocates it again at
 * the same address, as CUDA does. */
Test(graph_mem, memory_of_a_staged_graph_freed_after_it)
{
    CUgraphExec e, free_e;
    CUgraphNode f;
    struct negsq x;
    CUgraph fg;
    int got[N];

    build_negsq(&x, 0);
    CU_OK(cuGraphInstantiate(&e, x.g, 0));
    CU_OK(cuGraphDestroy(x.g));
    run_negsq(e, &x, 10);
    CU_OK(cuMemcpyDtoH(got, x.neg, sizeof(got)));
    cr_assert_eq(got[N - 1], 10 + N - 1, "the memory outlives the launch");
    CU_OK(cuMemFree(x.neg));
    run_negsq(e, &x, 20);
    CU_OK(cuMemcpyDtoHAsync(got, x.neg, sizeof(got), s));
    CU_OK(cuMemFreeAsync(x.neg, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(got[0], 20);
    CU_OK(cuGraphCreate(&fg, 0));
    CU_OK(cuGraphAddMemFreeNode(&f, fg, NULL, 0, x.neg));
    CU_OK(cuGraphInstantiate(&free_e, fg, 0));
    CU_OK(cuGraphDestroy(fg));
    run_negsq(e, &x, 30);
    CU_OK(cuGraphLaunch(free_e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(free_e));
    CU_OK(cuGraphExecDestroy(e));
    cr_assert_eq(used(), 0);
}
