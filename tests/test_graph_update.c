/* Changing a built graph and its instances: memcpy and memset nodes read and set in the
 * graph and in an instance (the generic forms too), the flags an instance was made with,
 * and the DOT description written by the tenant's own process. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 64

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

TestSuite(graph_update, .init = start, .fini = stop, .timeout = 120);

static int read_at(CUdeviceptr p, int i)
{
    int v;

    CU_OK(cuMemcpyDtoH(&v, p + (CUdeviceptr)i * sizeof(int), sizeof(v)));
    return v;
}

static CUDA_MEMCPY3D dcopy(CUdeviceptr dst, CUdeviceptr src)
{
    return (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
                            .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
                            .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
}

static CUDA_MEMSET_NODE_PARAMS dfill(CUdeviceptr dst, unsigned v)
{
    return (CUDA_MEMSET_NODE_PARAMS){ .dst = dst, .value = v, .elementSize = 4, .width = N,
                                      .height = 1 };
}

/* fill a -> copy a to b, launched, then b's last word. */
static int run(CUgraphExec e, CUdeviceptr b)
{
    CU_OK(cuMemsetD32(b, 0, N));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    return read_at(b, N - 1);
}

struct pair {
    CUdeviceptr a, b, c;
    CUgraph g;
    CUgraphNode fill, copy;
};

static void build(struct pair *p, unsigned v)
{
    CUDA_MEMSET_NODE_PARAMS ms;
    CUDA_MEMCPY3D cp;

    CU_OK(cuMemAlloc(&p->a, N * sizeof(int)));
    CU_OK(cuMemAlloc(&p->b, N * sizeof(int)));
    CU_OK(cuMemAlloc(&p->c, N * sizeof(int)));
    ms = dfill(p->a, v);
    cp = dcopy(p->b, p->a);
    CU_OK(cuGraphCreate(&p->g, 0));
    CU_OK(cuGraphAddMemsetNode(&p->fill, p->g, NULL, 0, &ms, NULL));
    CU_OK(cuGraphAddMemcpyNode(&p->copy, p->g, &p->fill, 1, &cp, NULL));
}

static void unbuild(struct pair *p)
{
    CU_OK(cuGraphDestroy(p->g));
    CU_OK(cuMemFree(p->a));
    CU_OK(cuMemFree(p->b));
    CU_OK(cuMemFree(p->c));
}

Test(graph_update, memset_and_memcpy_nodes_are_read_back_as_set)
{
    struct pair p;
    CUDA_MEMSET_NODE_PARAMS ms;
    CUDA_MEMCPY3D cp;

    build(&p, 3);
    CU_OK(cuGraphMemsetNodeGetParams(p.fill, &ms));
    cr_assert_eq(ms.dst, p.a);
    cr_assert_eq(ms.value, 3);
    cr_assert_eq(ms.elementSize, 4);
    cr_assert_eq(ms.width, N);
    CU_OK(cuGraphMemcpyNodeGetParams(p.copy, &cp));
    cr_assert_eq(cp.srcDevice, p.a);
    cr_assert_eq(cp.dstDevice, p.b);
    cr_assert_eq(cp.WidthInBytes * cp.Height * cp.Depth, N * sizeof(int));
    CU_IS(cuGraphMemsetNodeGetParams(p.copy, &ms), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphMemcpyNodeGetParams(p.fill, &cp), CUDA_ERROR_INVALID_VALUE);
    unbuild(&p);
}

Test(graph_update, a_graph_change_reaches_new_instances_only)
{
    struct pair p;
    CUDA_MEMSET_NODE_PARAMS ms;
    CUgraphExec old, fresh;

    build(&p, 3);
    CU_OK(cuGraphInstantiate(&old, p.g, 0));
    ms = dfill(p.a, 4);
    CU_OK(cuGraphMemsetNodeSetParams(p.fill, &ms));
    CU_OK(cuGraphInstantiate(&fresh, p.g, 0));
    cr_assert_eq(run(old, p.b), 3);
    cr_assert_eq(run(fresh, p.b), 4);
    CU_OK(cuGraphExecDestroy(old));
    CU_OK(cuGraphExecDestroy(fresh));
    unbuild(&p);
}

Test(graph_update, an_instance_takes_new_fills_and_copies)
{
    struct pair p;
    CUDA_MEMSET_NODE_PARAMS ms;
    CUDA_MEMCPY3D cp;
    CUgraphExec e;

    build(&p, 3);
    CU_OK(cuGraphInstantiate(&e, p.g, 0));
    ms = dfill(p.a, 8);
    CU_OK(cuGraphExecMemsetNodeSetParams(e, p.fill, &ms, NULL));
    cr_assert_eq(run(e, p.b), 8);
    cp = dcopy(p.c, p.a);
    CU_OK(cuGraphExecMemcpyNodeSetParams(e, p.copy, &cp, NULL));
    CU_OK(cuMemsetD32(p.c, 0, N));
    cr_assert_eq(run(e, p.b), 0, "the copy no longer writes b");
    cr_assert_eq(read_at(p.c, N - 1), 8, "it writes c");
    CU_OK(cuGraphMemsetNodeGetParams(p.fill, &ms));
    cr_assert_eq(ms.value, 3, "the graph keeps its own");
    ms = dfill(p.a, 1);
    ms.elementSize = 3;
    CU_IS(cuGraphExecMemsetNodeSetParams(e, p.fill, &ms, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphExecMemcpyNodeSetParams(e, p.fill, &cp, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphExecDestroy(e));
    unbuild(&p);
}

Test(graph_update, the_generic_calls_add_and_set_every_kind_served)
{
    struct pair p;
    CUgraphNodeParams np;
    CUgraphNode n;
    CUgraphExec e;

    build(&p, 3);
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_MEMSET;
    np.memset.dst = p.c;
    np.memset.value = 11;
    np.memset.elementSize = 4;
    np.memset.width = N;
    np.memset.height = 1;
    CU_OK(cuGraphAddNode(&n, p.g, NULL, NULL, 0, &np));
    np.memset.value = 12;
    CU_OK(cuGraphNodeSetParams(n, &np));
    CU_OK(cuGraphInstantiate(&e, p.g, 0));
    np.memset.value = 13;
    CU_OK(cuGraphExecNodeSetParams(e, n, &np));
    run(e, p.b);
    cr_assert_eq(read_at(p.c, 0), 13);
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    np.memcpy.copyParams = dcopy(p.b, p.a);
    np.memcpy.copyParams.WidthInBytes = N / 2 * sizeof(int);
    CU_OK(cuGraphExecNodeSetParams(e, p.copy, &np));
    cr_assert_eq(run(e, p.b), 0, "the copy stops half way");
    cr_assert_eq(read_at(p.b, 0), 3);
    np.type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL;
    CU_IS(cuGraphAddNode(&n, p.g, NULL, NULL, 0, &np), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphExecDestroy(e));
    unbuild(&p);
}

Test(graph_update, a_disabled_node_is_skipped_until_enabled_again)
{
    struct pair p;
    CUgraphExec e, other;
    unsigned on = 9;

    build(&p, 3);
    CU_OK(cuGraphInstantiate(&e, p.g, 0));
    CU_OK(cuGraphInstantiate(&other, p.g, 0));
    CU_OK(cuGraphNodeGetEnabled(e, p.fill, &on));
    cr_assert_eq(on, 1);
    CU_OK(cuMemsetD32(p.a, 5, N));
    CU_OK(cuGraphNodeSetEnabled(e, p.fill, 0));
    CU_OK(cuGraphNodeGetEnabled(e, p.fill, &on));
    cr_assert_eq(on, 0);
    cr_assert_eq(run(e, p.b), 5, "the copy ran, the fill did not");
    CU_OK(cuGraphNodeGetEnabled(other, p.fill, &on));
    cr_assert_eq(on, 1, "another instance keeps its own");
    CU_OK(cuGraphNodeSetEnabled(e, p.fill, 1));
    cr_assert_eq(run(e, p.b), 3);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphExecDestroy(other));
    unbuild(&p);
}

Test(graph_update, instances_keep_their_flags)
{
    struct pair p;
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = { .flags = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH };
    CUgraphExec e;
    cuuint64_t flags = 99;

    build(&p, 3);
    CU_OK(cuGraphInstantiateWithParams(&e, p.g, &ip));
    cr_assert_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    CU_OK(cuGraphExecGetFlags(e, &flags));
    cr_assert_eq(flags, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    cr_assert_eq(run(e, p.b), 3);
    CU_OK(cuGraphExecDestroy(e));
    CU_IS(cuGraphExecGetFlags(e, &flags), CUDA_ERROR_INVALID_HANDLE);
    unbuild(&p);
}

/* A kernel node of fill(out, v, N) in g. */
static CUgraphNode add_fill(CUgraph g, CUdeviceptr out, int v)
{
    int n = N;
    void *params[] = { &out, &v, &n };
    CUDA_KERNEL_NODE_PARAMS kp = { .func = fill, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                   .blockDimX = N, .blockDimY = 1, .blockDimZ = 1,
                                   .kernelParams = params };
    CUgraphNode node;

    CU_OK(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
    return node;
}

Test(graph_update, kernel_nodes_read_back_their_parameters_and_attributes)
{
    struct pair p;
    CUDA_KERNEL_NODE_PARAMS kp;
    CUkernelNodeAttrValue v = { 0 }, got;
    CUgraphNode k1, k2;

    build(&p, 3);
    k1 = add_fill(p.g, p.c, 42);
    k2 = add_fill(p.g, p.b, 7);
    CU_OK(cuGraphKernelNodeGetParams(k1, &kp));
    cr_assert_eq(kp.func, fill);
    cr_assert_eq(kp.blockDimX, N);
    cr_assert_eq(*(CUdeviceptr *)kp.kernelParams[0], p.c);
    cr_assert_eq(*(int *)kp.kernelParams[1], 42);
    cr_assert_eq(*(int *)kp.kernelParams[2], N);
    CU_IS(cuGraphKernelNodeGetParams(p.fill, &kp), CUDA_ERROR_INVALID_VALUE);

    CU_OK(cuGraphKernelNodeGetAttribute(k1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &got));
    cr_assert_eq(got.priority, 0);
    v.priority = 1;
    CU_OK(cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
    CU_OK(cuGraphKernelNodeGetAttribute(k1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &got));
    cr_assert_eq(got.priority, 1);
    CU_OK(cuGraphKernelNodeCopyAttributes(k2, k1));
    CU_OK(cuGraphKernelNodeGetAttribute(k2, CU_LAUNCH_ATTRIBUTE_PRIORITY, &got));
    cr_assert_eq(got.priority, 1);
    CU_OK(cuGraphKernelNodeGetParams(k2, &kp));
    cr_assert_eq(*(int *)kp.kernelParams[1], 7, "attributes leave the parameters alone");
    unbuild(&p);
}

/* The file is the tenant's: written at its path, by its process. */
Test(graph_update, the_dot_description_names_every_node_and_edge)
{
    struct pair p;
    char path[] = "/tmp/ds_graph_dot_XXXXXX", text[4096], edge[128];
    size_t n;
    FILE *f;
    int fd;

    build(&p, 3);
    cr_assert_geq(fd = mkstemp(path), 0);
    close(fd);
    CU_OK(cuGraphDebugDotPrint(p.g, path, CU_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS));
    cr_assert_not_null(f = fopen(path, "r"));
    n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    cr_assert(strncmp(text, "digraph", 7) == 0, "%s", text);
    cr_assert(strstr(text, "memset") != NULL && strstr(text, "memcpy") != NULL, "%s", text);
    cr_assert(strstr(text, "value 0x3") != NULL, "%s", text);
    snprintf(edge, sizeof(edge), "\"n%lx\" -> \"n%lx\"", (unsigned long)(uintptr_t)p.fill,
             (unsigned long)(uintptr_t)p.copy);
    cr_assert(strstr(text, edge) != NULL, "%s", text);
    CU_IS(cuGraphDebugDotPrint(p.g, "/nonexistent/dir/x.dot", 0),
          CUDA_ERROR_OPERATING_SYSTEM);
    unbuild(&p);
}

/* A stream's capture of a fill of a with v and a copy of a into b. */
static CUgraph capture(CUdeviceptr a, CUdeviceptr b, unsigned v, int with_copy)
{
    CUstream cs;
    CUgraph g;

    CU_OK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuMemsetD32Async(a, v, N, cs));
    if (with_copy)
        CU_OK(cuMemcpyDtoDAsync(b, a, N * sizeof(int), cs));
    CU_OK(cuStreamEndCapture(cs, &g));
    CU_OK(cuStreamDestroy(cs));
    return g;
}

Test(graph_update, an_instance_takes_a_captured_graph_of_the_same_shape)
{
    CUgraphExecUpdateResultInfo info;
    CUdeviceptr a, b;
    CUgraph g1, g2, g3;
    CUgraphExec e;

    CU_OK(cuMemAlloc(&a, N * sizeof(int)));
    CU_OK(cuMemAlloc(&b, N * sizeof(int)));
    g1 = capture(a, b, 5, 1);
    CU_OK(cuGraphInstantiate(&e, g1, 0));
    cr_assert_eq(run(e, b), 5);
    g2 = capture(a, b, 9, 1);
    CU_OK(cuGraphExecUpdate(e, g2, &info));
    cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    CU_OK(cuGraphDestroy(g2));
    cr_assert_eq(run(e, b), 9);
    g3 = capture(a, b, 4, 0);
    CU_IS(cuGraphExecUpdate(e, g3, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    cr_assert_eq(run(e, b), 9, "a refused update changes nothing");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g1));
    CU_OK(cuGraphDestroy(g3));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
}

Test(graph_update, an_instance_takes_a_built_graph_of_the_same_shape)
{
    CUgraphExecUpdateResultInfo info;
    struct pair p, q;
    CUDA_MEMSET_NODE_PARAMS ms;
    CUgraphExec e;
    CUgraphNode extra;

    build(&p, 3);
    build(&q, 6);
    CU_OK(cuGraphInstantiate(&e, p.g, 0));
    CU_OK(cuGraphExecUpdate(e, q.g, &info));
    cr_assert_eq(run(e, q.b), 6, "the instance fills and copies q's buffers");
    cr_assert_eq(read_at(p.b, 0), 0);
    ms = dfill(q.c, 1);
    CU_OK(cuGraphAddMemsetNode(&extra, q.g, NULL, 0, &ms, NULL));
    CU_IS(cuGraphExecUpdate(e, q.g, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    cr_assert_neq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    CU_OK(cuGraphExecDestroy(e));
    unbuild(&p);
    unbuild(&q);
}
