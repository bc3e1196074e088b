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
