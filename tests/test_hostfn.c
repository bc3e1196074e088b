/* Host functions on streams (cuLaunchHostFunc, cuStreamAddCallback): they run in the
 * tenant's own process after the stream's earlier work and before its later work; a
 * capturing stream refuses stream callbacks. */
#include "ds_test.h"

#include <string.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(hostfn, .init = start, .fini = stop, .timeout = 60);

struct probe {
    volatile unsigned *h;
    unsigned seen;
    int calls;
    CUstream stream;
    CUresult status;
};

static void CUDA_CB look(void *arg)
{
    struct probe *p = arg;

    p->seen = p->h[0];
    p->calls++;
}

static void CUDA_CB callback(CUstream s, CUresult status, void *arg)
{
    struct probe *p = arg;

    p->stream = s;
    p->status = status;
    look(arg);
}

/* Page-locked memory the device fills, and a stream that does not wait for others. */
static void setup(struct probe *p, CUdeviceptr *d, CUstream *s)
{
    unsigned *h;

    memset(p, 0, sizeof(*p));
    ds_test_ctx();
    CU_OK(cuMemHostAlloc((void **)&h, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    h[0] = 0;
    p->h = h;
    CU_OK(cuMemHostGetDevicePointer(d, h, 0));
    CU_OK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
}

Test(hostfn, a_host_function_runs_between_earlier_and_later_work)
{
    struct probe p;
    CUdeviceptr d;
    CUstream s;

    setup(&p, &d, &s);
    CU_OK(cuMemsetD32Async(d, 7, 1, s));
    CU_OK(cuLaunchHostFunc(s, look, &p));
    CU_OK(cuMemsetD32Async(d, 9, 1, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(p.calls, 1);
    cr_assert_eq(p.seen, 7, "the function ran before the earlier fill was done");
    cr_assert_eq(p.h[0], 9);
    CU_IS(cuLaunchHostFunc(s, NULL, &p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeHost((void *)p.h));
}

Test(hostfn, a_stream_callback_learns_its_stream_and_status)
{
    struct probe p;
    CUdeviceptr d;
    CUstream s;

    setup(&p, &d, &s);
    CU_OK(cuMemsetD32Async(d, 5, 1, s));
    CU_OK(cuStreamAddCallback(s, callback, &p, 0));
    cr_assert_eq(p.calls, 1);
    cr_assert_eq(p.seen, 5);
    cr_assert_eq(p.stream, s);
    cr_assert_eq(p.status, CUDA_SUCCESS);
    CU_IS(cuStreamAddCallback(s, callback, &p, 1), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuStreamAddCallback(s, NULL, &p, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(p.calls, 1);
    CU_OK(cuMemFreeHost((void *)p.h));
}

/* As CUDA: a stream callback cannot be captured (host functions are: test_capture_hostfn). */
Test(hostfn, a_capturing_stream_refuses_stream_callbacks)
{
    struct probe p;
    CUdeviceptr d;
    CUstream s;
    CUgraph g;

    setup(&p, &d, &s);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_IS(cuStreamAddCallback(s, callback, &p, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_eq(p.calls, 0);
    CU_OK(cuMemFreeHost((void *)p.h));
}
