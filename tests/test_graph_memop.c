/* Batch memory operation graph nodes (cuGraphAddBatchMemOpNode and its get and set
 * calls): a node's writes land in the graph's order at each launch, a wait node holds
 * the launching stream until the word changes, new operations take effect in the graph
 * and in an instance, and addresses that are not the tenant's own are refused. */
#include "ds_test.h"

#include <string.h>
#include <unistd.h>

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

TestSuite(graph_memop, .init = start, .fini = stop);

static CUstreamBatchMemOpParams write32(CUdeviceptr at, uint32_t v)
{
    CUstreamBatchMemOpParams p;

    memset(&p, 0, sizeof(p));
    p.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    p.writeValue.address = at;
    p.writeValue.value = v;
    return p;
}

static CUstreamBatchMemOpParams write64(CUdeviceptr at, uint64_t v)
{
    CUstreamBatchMemOpParams p;

    memset(&p, 0, sizeof(p));
    p.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    p.writeValue.address = at;
    p.writeValue.value64 = v;
    return p;
}

static CUDA_BATCH_MEM_OP_NODE_PARAMS batch(CUstreamBatchMemOpParams *ops, unsigned n)
{
    CUDA_BATCH_MEM_OP_NODE_PARAMS p = { .count = n, .paramArray = ops };

    CU_OK(cuCtxGetCurrent(&p.ctx));
    return p;
}

static CUgraphNode fill_node(CUgraph g, CUdeviceptr at, uint32_t v, size_t words,
                             const CUgraphNode *deps, size_t ndeps)
{
    CUDA_MEMSET_NODE_PARAMS m = { .dst = at, .value = v, .elementSize = 4, .width = words,
                                  .height = 1 };
    CUcontext ctx;
    CUgraphNode n;

    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuGraphAddMemsetNode(&n, g, deps, ndeps, &m, ctx));
    return n;
}

static CUgraphNode copy_node(CUgraph g, CUdeviceptr dst, CUdeviceptr src, size_t n,
                             const CUgraphNode *deps, size_t ndeps)
{
    CUDA_MEMCPY3D c = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
                        .WidthInBytes = n, .Height = 1, .Depth = 1 };
    CUcontext ctx;
    CUgraphNode node;

    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuGraphAddMemcpyNode(&node, g, deps, ndeps, &c, ctx));
    return node;
}

static void launch(CUgraphExec x, CUstream s)
{
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
}

/* fill w with 0, write two words of it, copy w to out: out holds the writes. */
Test(graph_memop, writes_run_in_graph_order_and_take_new_operations)
{
    CUstreamBatchMemOpParams ops[2];
    CUDA_BATCH_MEM_OP_NODE_PARAMS p, got;
    CUdeviceptr w, out;
    CUgraphNode fill, mo;
    CUgraphNodeType type;
    CUgraphExec x;
    uint64_t host[2];
    CUstream s;
    CUgraph g;

    CU_OK(cuMemAlloc(&w, 16));
    CU_OK(cuMemAlloc(&out, 16));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    fill = fill_node(g, w, 0, 4, NULL, 0);
    ops[0] = write32(w, 0xabcdu);
    ops[1] = write64(w + 8, 0x1122334455667788ull);
    p = batch(ops, 2);
    CU_OK(cuGraphAddBatchMemOpNode(&mo, g, &fill, 1, &p));
    copy_node(g, out, w, 16, &mo, 1);
    CU_OK(cuGraphNodeGetType(mo, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
    CU_OK(cuGraphBatchMemOpNodeGetParams(mo, &got));
    cr_assert_eq(got.count, 2);
    cr_assert_eq(got.paramArray[1].writeValue.address, w + 8);
    cr_assert_eq(got.paramArray[1].writeValue.value64, 0x1122334455667788ull);

    CU_OK(cuGraphInstantiate(&x, g, 0));
    launch(x, s);
    CU_OK(cuMemcpyDtoH(host, out, sizeof(host)));
    cr_assert_eq(host[0], 0xabcdu);
    cr_assert_eq(host[1], 0x1122334455667788ull);

    /* New values in the instance only: the graph keeps its own. */
    ops[0] = write32(w, 0x77u);
    ops[1] = write64(w + 8, 0x99ull);
    CU_OK(cuGraphExecBatchMemOpNodeSetParams(x, mo, &p));
    launch(x, s);
    CU_OK(cuMemcpyDtoH(host, out, sizeof(host)));
    cr_assert_eq(host[0], 0x77u);
    cr_assert_eq(host[1], 0x99ull);
    CU_OK(cuGraphBatchMemOpNodeGetParams(mo, &got));
    cr_assert_eq(got.paramArray[0].writeValue.value, 0xabcdu);

    /* In the graph: a new instance takes them. */
    ops[0] = write32(w + 4, 0x55u);
    p.count = 1;
    CU_OK(cuGraphBatchMemOpNodeSetParams(mo, &p));
    CU_OK(cuGraphBatchMemOpNodeGetParams(mo, &got));
    cr_assert_eq(got.count, 1);
    cr_assert_eq(got.paramArray[0].writeValue.address, w + 4);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphInstantiate(&x, g, 0));
    launch(x, s);
    CU_OK(cuMemcpyDtoH(host, out, sizeof(host)));
    cr_assert_eq(host[0], 0x55ull << 32);
    cr_assert_eq(host[1], 0);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(w));
    CU_OK(cuMemFree(out));
}

/* A wait node holds the launching stream, and what follows in the graph, until another
 * stream writes the word. */
Test(graph_memop, wait_node_holds_the_launching_stream)
{
    CUstreamBatchMemOpParams op;
    CUDA_BATCH_MEM_OP_NODE_PARAMS p;
    CUdeviceptr flag, src, dst;
    CUgraphNodeParams np;
    CUstream s, writer;
    CUgraphNode wait;
    CUgraphExec x;
    uint32_t got[4];
    CUgraph g;

    CU_OK(cuMemAlloc(&flag, 4));
    CU_OK(cuMemAlloc(&src, 16));
    CU_OK(cuMemAlloc(&dst, 16));
    CU_OK(cuMemsetD32(flag, 0, 1));
    CU_OK(cuMemsetD32(src, 0x5a5a5a5a, 4));
    CU_OK(cuMemsetD32(dst, 0, 4));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    memset(&op, 0, sizeof(op));
    op.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    op.waitValue.address = flag;
    op.waitValue.value = 1;
    op.waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
    p = batch(&op, 1);
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
    memcpy(&np.memOp, &p, sizeof(p));
    CU_OK(cuGraphAddNode(&wait, g, NULL, NULL, 0, &np));
    copy_node(g, dst, src, 16, &wait, 1);
    CU_OK(cuGraphInstantiate(&x, g, 0));

    CU_OK(cuGraphLaunch(x, s));
    usleep(20000);
    CU_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CU_OK(cuMemcpyDtoH(got, dst, sizeof(got)));
    cr_assert_eq(got[0], 0, "the copy behind the wait node ran early");
    CU_OK(cuStreamWriteValue32(writer, flag, 1, 0));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(got, dst, sizeof(got)));
    cr_assert_eq(got[3], 0x5a5a5a5au);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuStreamDestroy(writer));
}

Test(graph_memop, addresses_not_the_tenants_own_are_refused)
{
    CUstreamBatchMemOpParams op;
    CUDA_BATCH_MEM_OP_NODE_PARAMS p;
    CUdeviceptr w, out;
    CUgraphNode mo, bad;
    CUgraphExec x;
    uint32_t got = 0;
    CUstream s;
    CUgraph g;

    CU_OK(cuMemAlloc(&w, 16));
    CU_OK(cuMemAlloc(&out, 4));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphCreate(&g, 0));
    op = write32(w + 16, 1); /* just past the allocation */
    p = batch(&op, 1);
    CU_IS(cuGraphAddBatchMemOpNode(&bad, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
    op = write32(w + 2, 1); /* misaligned */
    CU_IS(cuGraphAddBatchMemOpNode(&bad, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
    op = write32(0x1000, 1); /* nobody's */
    CU_IS(cuGraphAddBatchMemOpNode(&bad, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
    op = write64(w + 12, 1); /* 8 bytes from 4 before the end */
    CU_IS(cuGraphAddBatchMemOpNode(&bad, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
    p.count = 0;
    CU_IS(cuGraphAddBatchMemOpNode(&bad, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);

    op = write32(w, 3);
    p = batch(&op, 1);
    CU_OK(cuGraphAddBatchMemOpNode(&mo, g, NULL, 0, &p));
    copy_node(g, out, w, 4, &mo, 1);
    CU_OK(cuGraphInstantiate(&x, g, 0));
    /* A bad set changes nothing, in the graph or in the instance. */
    op = write32(w + 64, 4);
    CU_IS(cuGraphBatchMemOpNodeSetParams(mo, &p), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphExecBatchMemOpNodeSetParams(x, mo, &p), CUDA_ERROR_INVALID_VALUE);
    launch(x, s);
    CU_OK(cuMemcpyDtoH(&got, out, sizeof(got)));
    cr_assert_eq(got, 3);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
}

/* Another tenant's allocation, its address handed over by the other tenant itself. */
static int addr_pipe[2];

static int neighbour(void *arg)
{
    CUdeviceptr p;

    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&p, 4096) != CUDA_SUCCESS)
        return 1;
    return write(addr_pipe[1], &p, sizeof(p)) == (ssize_t)sizeof(p) ? 0 : 1;
}

static void start_bare(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

TestSuite(graph_memop_peer, .init = start_bare, .fini = stop);

Test(graph_memop_peer, another_tenants_memory_is_refused)
{
    struct ds_test_peer peer;
    CUstreamBatchMemOpParams op;
    CUDA_BATCH_MEM_OP_NODE_PARAMS p;
    CUdeviceptr theirs = 0;
    CUgraphNode n;
    CUgraph g;

    cr_assert_eq(pipe(addr_pipe), 0);
    ds_test_peer_fork(&peer, neighbour, NULL);
    ds_test_ctx();
    ds_test_peer_join(&peer);
    cr_assert_eq(read(addr_pipe[0], &theirs, sizeof(theirs)), (ssize_t)sizeof(theirs));
    CU_OK(cuGraphCreate(&g, 0));
    op = write32(theirs, 1);
    p = batch(&op, 1);
    CU_IS(cuGraphAddBatchMemOpNode(&n, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphDestroy(g));
    ds_test_peer_leave(&peer);
    close(addr_pipe[0]);
    close(addr_pipe[1]);
}
