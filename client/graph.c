/*
 * Stream capture and graphs.  The executor captures on the real stream (or the sim's
 * model of it); graphs and instantiated graphs are executor handles.  Capture status is
 * asked of the executor only while some stream of this process is capturing: libraries
 * such as PyTorch ask before every allocation, and the answer is otherwise "none".
 */
#include "cuda_api.h"
#include "graph.h"

#include "rpc.h"
#include "stream.h"

#include <pthread.h>
#include <stdatomic.h>

#define MAX_CAPTURES 64

/* Streams of this process between begin and end, and whether something the capture
 * cannot hold invalidated it. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    ds_handle stream;
    int invalidated;
} captures[MAX_CAPTURES];
static atomic_int capturing;
static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static ds_handle hv(const void *p)
{
    return (ds_handle)(uintptr_t)p;
}

/* Index of stream h in captures[], or -1; called with the lock held. */
static int find(ds_handle h)
{
    for (int i = 0; i < MAX_CAPTURES; i++)
        if (captures[i].stream == h && h != 0)
            return i;
    return -1;
}

CUresult ds__graph_refuse_host_work(CUstream s)
{
    CUresult rc = CUDA_SUCCESS;
    int i;

    if (atomic_load(&capturing) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    i = find(ds__stream_of(s));
    if (i >= 0) {
        captures[i].invalidated = 1;
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    ds_capture_args a = { .stream = ds__stream_of(s), .mode = mode };
    ds_void_res r;
    CUresult rc;
    int i;

    DS_NEED_INIT();
    pthread_mutex_lock(&lock);
    i = find(0);
    for (int j = 0; i < 0 && j < MAX_CAPTURES; j++)
        if (captures[j].stream == 0)
            i = j;
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rc = ds_rpc_capture_begin(&a, &r);
    if (rc == CUDA_SUCCESS) {
        captures[i].stream = a.stream;
        captures[i].invalidated = 0;
        atomic_fetch_add(&capturing, 1);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* The pre-10.1 entry point: the mode was always global. */
CUresult cuStreamBeginCapture(CUstream s)
{
    return cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *graph)
{
    ds_handle h = ds__stream_of(s);
    ds_handle_res r;
    ds_void_res vr;
    CUresult rc;
    int i, invalidated = 0;

    DS_NEED_INIT();
    if (graph == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    i = find(h);
    rc = ds_rpc_capture_end(&h, &r);
    if (i >= 0) {
        invalidated = captures[i].invalidated;
        captures[i].stream = 0;
        atomic_fetch_sub(&capturing, 1);
    }
    pthread_mutex_unlock(&lock);
    if (rc == CUDA_SUCCESS && invalidated) {
        /* As CUDA: a capture that met something it cannot hold ends without a graph. */
        ds_rpc_graph_destroy(&r.ds_handle_res_u.handle, &vr);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    if (rc == CUDA_SUCCESS)
        *graph = (CUgraph)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

static CUresult capture_info(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id)
{
    ds_handle h = ds__stream_of(s);
    ds_capture_info_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (status == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (atomic_load(&capturing) == 0) {
        *status = CU_STREAM_CAPTURE_STATUS_NONE;
        if (id != NULL)
            *id = 0;
        return CUDA_SUCCESS;
    }
    rc = ds_rpc_capture_info(&h, &r);
    if (rc == CUDA_SUCCESS) {
        *status = (CUstreamCaptureStatus)r.ds_capture_info_res_u.info.status;
        if (id != NULL)
            *id = r.ds_capture_info_res_u.info.id;
    }
    return rc;
}

CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
    return capture_info(s, status, NULL);
}

CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id)
{
    return capture_info(s, status, id);
}

/* The graph and its dependency set being built are the driver's; none are reported, which
 * leaves callers that would edit a capture in progress without a handle to do it with. */
CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                                   CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
    if (graph != NULL)
        *graph = NULL;
    if (deps != NULL)
        *deps = NULL;
    if (ndeps != NULL)
        *ndeps = 0;
    return capture_info(s, status, id);
}

CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                                   CUgraph *graph, const CUgraphNode **deps,
                                   const CUgraphEdgeData **edges, size_t *ndeps)
{
    if (edges != NULL)
        *edges = NULL;
    return cuStreamGetCaptureInfo_v2(s, status, id, graph, deps, ndeps);
}

/* Which calls a capture forbids is decided by the driver on the executor side; the client
 * keeps each thread's mode and sends it with the calls it governs (allocations). */
CUstreamCaptureMode ds__graph_thread_mode(void)
{
    return thread_mode;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    CUstreamCaptureMode old;

    if (mode == NULL || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags)
{
    ds_instantiate_args a = { .graph = hv(graph), .flags = flags };
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_graph_instantiate(&a, &r);
    if (rc == CUDA_SUCCESS)
        *exec = (CUgraphExec)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

/* The older signature: error node and log are filled only on failure, and detshare has
 * no node to name. */
CUresult cuGraphInstantiate_v2(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node,
                               char *log, size_t log_size)
{
    if (error_node != NULL)
        *error_node = NULL;
    if (log != NULL && log_size > 0)
        log[0] = '\0';
    return cuGraphInstantiateWithFlags(exec, graph, 0);
}

CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node, char *log,
                            size_t log_size)
{
    return cuGraphInstantiate_v2(exec, graph, error_node, log, log_size);
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream s)
{
    ds_graph_launch_args a = { .exec = hv(exec), .stream = ds__stream_of(s) };

    DS_NEED_INIT();
    return ds_rpc_graph_launch(&a);
}

/* Uploading prepares a launch; the executor's launch does the whole of it. */
CUresult cuGraphUpload(CUgraphExec exec, CUstream s)
{
    DS_NEED_INIT();
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    (void)s;
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph graph)
{
    ds_handle h = hv(graph);
    ds_void_res r;

    DS_NEED_INIT();
    return ds_rpc_graph_destroy(&h, &r);
}

CUresult cuGraphExecDestroy(CUgraphExec exec)
{
    ds_handle h = hv(exec);
    ds_void_res r;

    DS_NEED_INIT();
    return ds_rpc_graph_exec_destroy(&h, &r);
}
