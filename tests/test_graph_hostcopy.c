/* Graph copies between host and device memory, whatever the host memory: page-locked,
 * registered and managed memory is read and written by the graph itself at each launch;
 * pageable memory is copied by the tenant at the node's turn; and an asynchronous copy
 * of memory the device reaches, made on a capturing stream, becomes part of the graph.
 * The sim moves real bytes, so each test checks the bytes that came back. */
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

TestSuite(graph_hostcopy, .init = start, .fini = stop, .timeout = 120);

static CUDA_MEMCPY3D htod(const void *src, CUdeviceptr dst)
{
    return (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src,
                            .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
                            .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
}

static CUDA_MEMCPY3D dtoh(CUdeviceptr src, void *dst)
{
    return (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
                            .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = dst,
                            .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
}

/* A graph that copies in -> device -> out, and its two copy nodes. */
struct trip {
    CUgraph g;
    CUgraphNode up, down;
    CUdeviceptr buf;
};

static void build(struct trip *t, const int *in, int *out)
{
    CUDA_MEMCPY3D u = htod(in, 0), d = dtoh(0, out);

    CU_OK(cuMemAlloc(&t->buf, N * sizeof(int)));
    u.dstDevice = d.srcDevice = t->buf;
    CU_OK(cuGraphCreate(&t->g, 0));
    CU_OK(cuGraphAddMemcpyNode(&t->up, t->g, NULL, 0, &u, NULL));
    CU_OK(cuGraphAddMemcpyNode(&t->down, t->g, &t->up, 1, &d, NULL));
}

static void unbuild(struct trip *t)
{
    CU_OK(cuGraphDestroy(t->g));
    CU_OK(cuMemFree(t->buf));
}

/* Launch e with in[i] = v + i; out must come back the same. */
static void round_trip(CUgraphExec e, int *in, int *out, int v)
{
    for (int i = 0; i < N; i++) {
        in[i] = v + i;
        out[i] = -1;
    }
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    for (int i = 0; i < N; i++)
        cr_assert_eq(out[i], v + i, "launch with %d: word %d came back as %d", v, i, out[i]);
}

Test(graph_hostcopy, pageable_memory_is_copied_at_each_launch)
{
    int in[N], *out = malloc(N * sizeof(int));
    CUDA_MEMCPY3D cp;
    struct trip t;
    CUgraphExec e;

    cr_assert_not_null(out);
    build(&t, in, out);
    CU_OK(cuGraphMemcpyNodeGetParams(t.up, &cp));
    cr_assert_eq(cp.srcMemoryType, CU_MEMORYTYPE_HOST);
    cr_assert_eq(cp.srcHost, (const void *)in);
    cr_assert_eq(cp.dstDevice, t.buf);
    CU_OK(cuGraphMemcpyNodeGetParams(t.down, &cp));
    cr_assert_eq(cp.dstMemoryType, CU_MEMORYTYPE_HOST);
    cr_assert_eq(cp.dstHost, (void *)out);
    CU_OK(cuGraphInstantiate(&e, t.g, 0));
    for (int v = 100; v <= 300; v += 100)
        round_trip(e, in, out, v);
    CU_OK(cuGraphExecDestroy(e));
    unbuild(&t);
    free(out);
}

Test(graph_hostcopy, registered_and_managed_memory_is_copied_by_the_graph)
{
    int *in = aligned_alloc(4096, 4096);
    CUdeviceptr managed;
    struct trip t;
    CUgraphExec e;

    cr_assert_not_null(in);
    CU_OK(cuMemHostRegister(in, 4096, 0));
    CU_OK(cuMemAllocManaged(&managed, N * sizeof(int), CU_MEM_ATTACH_GLOBAL));
    build(&t, in, (int *)(uintptr_t)managed);
    CU_OK(cuGraphInstantiate(&e, t.g, 0));
    for (int v = 7; v <= 9; v++)
        round_trip(e, in, (int *)(uintptr_t)managed, v);
    CU_OK(cuGraphExecDestroy(e));
    unbuild(&t);
    CU_OK(cuMemFree(managed));
    CU_OK(cuMemHostUnregister(in));
    free(in);
}

Test(graph_hostcopy, an_instance_takes_new_pageable_buffers_but_not_a_change_of_kind)
{
    int in[N] = { 0 }, out[N], other[N];
    CUDA_MEMCPY3D cp;
    struct trip t;
    CUgraphExec e;
    CUdeviceptr dev;

    build(&t, in, out);
    CU_OK(cuMemAlloc(&dev, N * sizeof(int)));
    CU_OK(cuGraphInstantiate(&e, t.g, 0));
    cp = dtoh(t.buf, other);
    CU_OK(cuGraphExecMemcpyNodeSetParams(e, t.down, &cp, NULL));
    round_trip(e, in, other, 40);
    cp = (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = t.buf,
                          .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dev,
                          .WidthInBytes = N * sizeof(int), .Height = 1, .Depth = 1 };
    CU_IS(cuGraphExecMemcpyNodeSetParams(e, t.down, &cp, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphMemcpyNodeSetParams(t.down, &cp), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphExecDestroy(e));
    unbuild(&t);
    CU_OK(cuMemFree(dev));
}

Test(graph_hostcopy, a_disabled_pageable_copy_is_skipped)
{
    int in[N] = { 0 }, out[N];
    struct trip t;
    CUgraphExec e;

    build(&t, in, out);
    CU_OK(cuGraphInstantiate(&e, t.g, 0));
    round_trip(e, in, out, 5);
    CU_OK(cuGraphNodeSetEnabled(e, t.down, 0));
    in[0] = 77;
    out[0] = -1;
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(out[0], -1, "the disabled copy did not run");
    CU_OK(cuGraphNodeSetEnabled(e, t.down, 1));
    round_trip(e, in, out, 6);
    CU_OK(cuGraphExecDestroy(e));
    unbuild(&t);
}

Test(graph_hostcopy, a_conditional_body_refuses_pageable_memory)
{
    int in[N];
    CUgraphNodeParams np;
    CUgraphConditionalHandle h;
    CUDA_MEMCPY3D cp;
    CUgraph g, clone;
    CUgraphNode n;
    CUdeviceptr buf;

    CU_OK(cuMemAlloc(&buf, N * sizeof(int)));
    cp = htod(in, buf);
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphConditionalHandleCreate(&h, g, NULL, 0, 0));
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = h;
    np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    np.conditional.size = 1;
    CU_OK(cuGraphAddNode(&n, g, NULL, NULL, 0, &np));
    CU_IS(cuGraphAddMemcpyNode(&n, np.conditional.phGraph_out[0], NULL, 0, &cp, NULL),
          CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphDestroy(g));
    /* Nor can a child graph hold one: the backend replays a child as one piece. */
    CU_OK(cuGraphCreate(&clone, 0));
    CU_OK(cuGraphAddMemcpyNode(&n, clone, NULL, 0, &cp, NULL));
    CU_OK(cuGraphCreate(&g, 0));
    CU_IS(cuGraphAddChildGraphNode(&n, g, NULL, 0, clone), CUDA_ERROR_NOT_SUPPORTED);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuGraphDestroy(clone));
    CU_OK(cuMemFree(buf));
}

/* A capture of in -> buf -> out with cuMemcpyHtoDAsync and cuMemcpyDtoHAsync. */
static CUgraphExec capture_trip(const int *in, CUdeviceptr buf, int *out)
{
    CUgraph g;
    CUgraphExec e;

    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemcpyHtoDAsync(buf, in, N * sizeof(int), s));
    CU_OK(cuMemcpyDtoHAsync(out, buf, N * sizeof(int), s));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphDestroy(g));
    return e;
}

Test(graph_hostcopy, captured_copies_of_page_locked_registered_and_managed_memory)
{
    int *pinned, *reg = aligned_alloc(4096, 4096);
    CUdeviceptr buf, managed;
    CUgraphExec e;

    cr_assert_not_null(reg);
    CU_OK(cuMemAlloc(&buf, N * sizeof(int)));
    CU_OK(cuMemAllocHost((void **)&pinned, N * sizeof(int)));
    CU_OK(cuMemHostRegister(reg, 4096, 0));
    CU_OK(cuMemAllocManaged(&managed, N * sizeof(int), CU_MEM_ATTACH_GLOBAL));
    e = capture_trip(pinned, buf, reg);
    for (int v = 1; v <= 2; v++)
        round_trip(e, pinned, reg, v * 1000);
    CU_OK(cuGraphExecDestroy(e));
    e = capture_trip(reg, buf, (int *)(uintptr_t)managed);
    round_trip(e, reg, (int *)(uintptr_t)managed, 3000);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuMemFree(managed));
    CU_OK(cuMemHostUnregister(reg));
    CU_OK(cuMemFreeHost(pinned));
    CU_OK(cuMemFree(buf));
    free(reg);
}

/* step(x, k) turns *x from k into k + 1 (tests/kernels/launch.cu), on a GPU; the sim runs
 * no kernel code, so x is checked on a GPU only. */
static void step_on(CUfunction f, CUdeviceptr x, int k)
{
    void *params[] = { &x, &k };

    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
}

/* Copies of pageable memory made on a capturing stream, between kernels: as CUDA, the
 * capture records them, and each launch reads `in` and writes `out` at the copies' turn,
 * not at capture. */
Test(graph_hostcopy, captured_copies_of_pageable_memory_happen_at_each_launch)
{
    int *in = malloc(N * sizeof(int)), *out = malloc(N * sizeof(int)), steps = 0;
    CUmodule m = ds_test_module(DS_KERNEL_DIR "/launch.fatbin");
    CUdeviceptr buf, buf2, x;
    CUfunction step;
    CUgraph g;
    CUgraphExec e;
    size_t n = 0;

    cr_assert(in != NULL && out != NULL);
    CU_OK(cuModuleGetFunction(&step, m, "step"));
    CU_OK(cuMemAlloc(&buf, N * sizeof(int)));
    CU_OK(cuMemAlloc(&buf2, N * sizeof(int)));
    CU_OK(cuMemAlloc(&x, sizeof(int)));
    for (int i = 0; i < N; i++)
        in[i] = out[i] = -7;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    step_on(step, x, 0);
    CU_OK(cuMemcpyHtoDAsync(buf, in, N * sizeof(int), s));
    step_on(step, x, 1);
    CU_OK(cuMemcpyDtoDAsync(buf2, buf, N * sizeof(int), s));
    CU_OK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)out, buf2, N * sizeof(int), s));
    step_on(step, x, 2);
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphGetNodes(g, NULL, &n));
    cr_assert_geq(n, 3, "the copies are nodes of the graph");
    cr_assert_eq(out[0], -7, "nothing is copied at capture");
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphDestroy(g));
    for (int v = 100; v <= 200; v += 100) {
        CU_OK(cuMemsetD32(x, 0, 1));
        round_trip(e, in, out, v);
        CU_OK(cuMemcpyDtoH(&steps, x, sizeof(steps)));
        if (!ds_test_on_sim())
            cr_assert_eq(steps, 3, "the kernels ran in order around the copies");
    }
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuMemFree(x));
    CU_OK(cuMemFree(buf2));
    CU_OK(cuMemFree(buf));
    free(out);
    free(in);
}

/* A capture that ends invalidated leaves no graph behind, copies or not. */
Test(graph_hostcopy, a_capture_with_pageable_copies_still_ends_as_captures_do)
{
    int *in = malloc(N * sizeof(int));
    CUdeviceptr buf;
    CUgraph g = NULL;

    cr_assert_not_null(in);
    CU_OK(cuMemAlloc(&buf, N * sizeof(int)));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemcpyHtoDAsync(buf, in, N * sizeof(int), s));
    CU_IS(cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_null(g);
    CU_OK(cuMemFree(buf));
    free(in);
}
