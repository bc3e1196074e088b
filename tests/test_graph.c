/* Stream capture and graphs: captured work runs only when the graph is launched, as
 * often as it is launched; what cannot be captured through detshare is refused. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

TestSuite(graph, .init = start, .fini = stop, .timeout = 120);

static unsigned read32(CUdeviceptr p)
{
    unsigned v;

    CU_OK(cuMemcpyDtoH(&v, p, sizeof(v)));
    return v;
}

Test(graph, captured_work_runs_at_launch_and_each_launch)
{
    CUdeviceptr a, b;
    CUgraph g;
    CUgraphExec e;
    CUstreamCaptureStatus st;
    cuuint64_t id;
    size_t nodes;

    CU_OK(cuMemAlloc(&a, 4096));
    CU_OK(cuMemAlloc(&b, 4096));
    CU_OK(cuMemsetD32(a, 1, 1024));
    CU_OK(cuMemsetD32(b, 2, 1024));
    CU_OK(cuStreamIsCapturing(s, &st));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cr_assert_neq(id, 0);
    CU_OK(cuMemsetD32Async(a, 7, 1024, s));
    CU_OK(cuMemcpyDtoDAsync(b, a, 4096, s));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphGetNodes(g, NULL, &nodes));
    cr_assert_eq(nodes, 2, "a fill and a copy");
    CU_OK(cuStreamIsCapturing(s, &st));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    cr_assert_eq(read32(a), 1, "capture recorded the fill without running it");
    cr_assert_eq(read32(b), 2);
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read32(a), 7);
    cr_assert_eq(read32(b), 7);
    CU_OK(cuMemsetD32(a, 3, 1024));
    CU_OK(cuMemsetD32(b, 3, 1024));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read32(b + 4092), 7, "a second launch runs it again");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_IS(cuGraphLaunch(e, s), CUDA_SUCCESS); /* batched: reported at the next sync */
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
}

static void CUDA_CB nothing(CUstream st, CUresult status, void *arg)
{
    (void)st;
    (void)status;
    (void)arg;
}

/* Copies of pageable memory (test_graph_hostcopy.c) and host functions
 * (test_capture_hostfn.c) are captured; a stream callback is not, as in CUDA. */
Test(graph, stream_callbacks_and_default_streams_cannot_be_captured)
{
    unsigned char buf[64] = { 0 };
    CUdeviceptr d;
    CUgraph g;

    CU_OK(cuMemAlloc(&d, 64));
    CU_IS(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
          CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_IS(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_ERROR_ILLEGAL_STATE);
    CU_OK(cuMemsetD8Async(d, 1, 64, s));
    CU_IS(cuStreamAddCallback(s, nothing, NULL, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    /* As in CUDA, the capture is invalidated and ends without a graph. */
    CU_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CU_OK(cuMemcpyHtoD(d, buf, 64));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD8Async(d, 1, 64, s));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuCtxSynchronize());
}

Test(graph, a_replay_after_free_is_an_illegal_address_on_the_sim)
{
    CUdeviceptr d;
    CUgraph g;
    CUgraphExec e;

    DS_SIM_ONLY(); /* on a GPU this would fault the context for good */
    CU_OK(cuMemAlloc(&d, 4096));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD8Async(d, 9, 4096, s));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuMemFree(d));
    CU_OK(cuGraphLaunch(e, s));
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
}

Test(graph, kernels_in_a_graph)
{
    CUmodule m;
    CUfunction fill;
    CUdeviceptr out;
    CUgraph g;
    CUgraphExec e;
    int v = 100, count = 256, host[256];
    void *params[] = { &out, &v, &count };

    m = ds_test_module(DS_KERNEL_DIR "/launch.fatbin");
    CU_OK(cuModuleGetFunction(&fill, m, "fill"));
    CU_OK(cuMemAlloc(&out, sizeof(host)));
    CU_OK(cuMemsetD32(out, 0, 256));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, s, params, NULL));
    v = 5; /* parameters are captured by value, at capture */
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    if (ds_test_on_sim())
        return;
    CU_OK(cuMemcpyDtoH(host, out, sizeof(host)));
    for (int i = 0; i < 256; i++)
        cr_assert_eq(host[i], 100 + i);
}
