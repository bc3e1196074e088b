/* Graph copies between host and device memory, whatever the host memory: page-locked,
 * registered and managed memory is read and written by the graph itself at each launch;
 * pageable memory is copied by the tenant at the node's turn; and an asynchronous copy
 * of host memory, made on a capturing stream, becomes part of the graph, pageable memory
 * included.  The sim moves real bytes, so each test checks the bytes that came back. */
#include "capture_copy_cases.h"
#include "ds_test.h"

#include <stdio.h>
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
static void step_on(CUstream on, CUfunction f, CUdeviceptr x, int k)
{
    void *params[] = { &x, &k };

    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, on, params, NULL));
}

/* Copies of pageable memory made on a stream captured in `mode`, between kernels: as
 * CUDA, the capture records them, nothing is copied at capture, and each launch reads
 * `in` and writes `out` as they are then. */
static void pageable_copies_between_kernels(CUstreamCaptureMode mode)
{
    int *in = malloc(N * sizeof(int)), *out = malloc(N * sizeof(int)), zero[N] = { 0 }, steps;
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
    CU_OK(cuMemsetD32(buf, 0, N));
    for (int i = 0; i < N; i++)
        in[i] = out[i] = -7;
    CU_OK(cuStreamBeginCapture(s, mode));
    step_on(s, step, x, 0);
    CU_OK(cuMemcpyHtoDAsync(buf, in, N * sizeof(int), s));
    step_on(s, step, x, 1);
    CU_OK(cuMemcpyDtoDAsync(buf2, buf, N * sizeof(int), s));
    CU_OK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)out, buf2, N * sizeof(int), s));
    step_on(s, step, x, 2);
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphGetNodes(g, NULL, &n));
    cr_assert_geq(n, 3, "the copies are nodes of the graph");
    cr_assert_eq(out[0], -7, "nothing is copied to the host at capture");
    CU_OK(cuMemcpyDtoH(zero, buf, sizeof(zero)));
    cr_assert_eq(zero[0], 0, "nothing is copied to the device at capture");
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

Test(graph_hostcopy, captured_copies_of_pageable_memory_happen_at_each_launch)
{
    pageable_copies_between_kernels(CU_STREAM_CAPTURE_MODE_GLOBAL);
}

Test(graph_hostcopy, captured_copies_of_pageable_memory_in_relaxed_mode)
{
    pageable_copies_between_kernels(CU_STREAM_CAPTURE_MODE_RELAXED);
}

/* Several copies of one capture, to and from different buffers, each launch's in its
 * own order: in -> a and in2 -> b, then a -> out and b -> out2. */
Test(graph_hostcopy, several_captured_pageable_copies)
{
    int in[N], in2[N], out[N], out2[N];
    CUdeviceptr a, b;
    CUgraph g;
    CUgraphExec e;

    CU_OK(cuMemAlloc(&a, sizeof(in)));
    CU_OK(cuMemAlloc(&b, sizeof(in)));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemcpyHtoDAsync(a, in, sizeof(in), s));
    CU_OK(cuMemcpyHtoDAsync(b, in2, sizeof(in2), s));
    CU_OK(cuMemcpyDtoHAsync(out, a, sizeof(out), s));
    CU_OK(cuMemcpyDtoHAsync(out2, b, sizeof(out2), s));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    for (int v = 1; v <= 3; v++) {
        for (int i = 0; i < N; i++) {
            in[i] = v * 10 + i;
            in2[i] = -v * 10 - i;
            out[i] = out2[i] = 0;
        }
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        for (int i = 0; i < N; i++) {
            cr_assert_eq(out[i], v * 10 + i, "launch %d: out[%d] is %d", v, i, out[i]);
            cr_assert_eq(out2[i], -v * 10 - i, "launch %d: out2[%d] is %d", v, i, out2[i]);
        }
    }
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(a));
}

/* A copy on a stream that joined the capture by waiting for an event of it: the fork's
 * copy to the device, joined back, and the origin's copy to the host.  The sim captures
 * one stream, so this runs on a GPU. */
Test(graph_hostcopy, a_captured_pageable_copy_on_a_forked_stream)
{
    int in[N], out[N];
    CUstream fork;
    CUevent forked, joined;
    CUdeviceptr buf;
    CUgraph g;
    CUgraphExec e;

    if (ds_test_on_sim())
        cr_skip_test("the sim does not model captures across streams");
    CU_OK(cuMemAlloc(&buf, sizeof(in)));
    CU_OK(cuStreamCreate(&fork, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&forked, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&joined, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuEventRecord(forked, s));
    CU_OK(cuStreamWaitEvent(fork, forked, 0));
    CU_OK(cuMemcpyHtoDAsync(buf, in, sizeof(in), fork));
    CU_OK(cuEventRecord(joined, fork));
    CU_OK(cuStreamWaitEvent(s, joined, 0));
    CU_OK(cuMemcpyDtoHAsync(out, buf, sizeof(out), s));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    for (int v = 5; v <= 6; v++)
        round_trip(e, in, out, v * 1000);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuEventDestroy(joined));
    CU_OK(cuEventDestroy(forked));
    CU_OK(cuStreamDestroy(fork));
    CU_OK(cuMemFree(buf));
}

/* Each launch copies to the host only once the graph has run, so a copy from memory an
 * earlier copy of the same capture writes would read it too early: refused, and the
 * capture ends without a graph, as one that met unsupported work. */
Test(graph_hostcopy, a_captured_copy_from_memory_the_capture_writes_is_refused)
{
    int buf_host[N], other[N];
    CUdeviceptr buf;
    CUgraph g = NULL;

    CU_OK(cuMemAlloc(&buf, sizeof(buf_host)));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemcpyHtoDAsync(buf, buf_host, sizeof(buf_host), s));
    CU_OK(cuMemcpyDtoHAsync(buf_host + N / 2, buf, sizeof(int), s));
    CU_OK(cuMemcpyHtoDAsync(buf, other, sizeof(other), s));
    CU_IS(cuMemcpyHtoDAsync(buf, buf_host, sizeof(buf_host), s),
          CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_null(g);
    CU_OK(cuMemFree(buf));
}

/* An instance of a graph with captured pageable copies runs in stages, which
 * cuGraphExecUpdate cannot reach: refused either way, and the instance still works. */
Test(graph_hostcopy, a_graph_with_captured_pageable_copies_is_not_updated)
{
    int in[N], out[N];
    CUgraphExecUpdateResultInfo info;
    CUdeviceptr buf;
    CUgraph plain, copies;
    CUgraphExec pe, ce;

    CU_OK(cuMemAlloc(&buf, sizeof(in)));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD32Async(buf, 0, N, s));
    CU_OK(cuMemsetD32Async(buf, 0, N, s));
    CU_OK(cuStreamEndCapture(s, &plain));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemcpyHtoDAsync(buf, in, sizeof(in), s));
    CU_OK(cuMemcpyDtoHAsync(out, buf, sizeof(out), s));
    CU_OK(cuStreamEndCapture(s, &copies));
    CU_OK(cuGraphInstantiate(&pe, plain, 0));
    CU_OK(cuGraphInstantiate(&ce, copies, 0));
    CU_IS(cuGraphExecUpdate_v2(pe, copies, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CU_IS(cuGraphExecUpdate_v2(ce, plain, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    round_trip(ce, in, out, 31);
    CU_OK(cuGraphExecDestroy(ce));
    CU_OK(cuGraphExecDestroy(pe));
    CU_OK(cuGraphDestroy(copies));
    CU_OK(cuGraphDestroy(plain));
    CU_OK(cuMemFree(buf));
}

/* On a GPU: every captured copy case gives what the real driver gives, asked natively. */
Test(graph_hostcopy, captured_pageable_copies_equal_the_native_drivers)
{
    static char mine[16384], native[16384];
    size_t n;
    FILE *p;

    if (ds_test_on_sim())
        cr_skip_test("compares with the real driver");
    cr_assert_eq(ds_capture_copy_cases(DS_KERNEL_DIR "/launch.fatbin", mine, sizeof(mine)), 0,
                 "%s", mine);
    p = popen("env -u LD_LIBRARY_PATH -u LD_PRELOAD " DS_NATIVE_CAPTURE_COPIES " " DS_KERNEL_DIR
              "/launch.fatbin",
              "r");
    cr_assert_not_null(p);
    n = fread(native, 1, sizeof(native) - 1, p);
    native[n] = '\0';
    cr_assert_eq(pclose(p), 0, "native_capture_copies failed: %s", native);
    cr_assert_str_eq(mine, native);
}
