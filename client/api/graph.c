/*
 * Stream capture and graphs.  The executor captures on the real stream (or the sim's
 * model of it); graphs and instantiated graphs are executor handles.  Capture status is
 * asked of the executor only while some stream of this process is capturing: libraries
 * such as PyTorch ask before every allocation, and the answer is otherwise "none".
 *
 * An instantiated graph with host nodes runs in stages (server/exec/ops_gstage.c): each
 * launch of it launches the stages one after another and, after each stage that ends in
 * host functions, waits for the stream and calls them here, as cuLaunchHostFunc does.
 */
#include "cuda_api.h"
#include "graph.h"

#include "gkernel.h"
#include "gnode.h"
#include "rpc.h"
#include "stream.h"
#include "unsupported.h"
#include "userobj.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CAPTURES 64

/* Streams of this process between begin and end, whether something the capture cannot
 * hold invalidated it, and whether it captures into a graph of the caller's. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    ds_handle stream;
    int invalidated;
    int into;
} captures[MAX_CAPTURES];
static atomic_int capturing;
/* Instantiated graphs of this process that run in stages, and how many stages each has. */
static struct staged {
    ds_handle exec;
    unsigned stages;
} *staged;
static size_t nstaged;
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

int ds__graph_capturing_any(void)
{
    return atomic_load(&capturing) > 0;
}

/* Begin capturing stream h as send(a) asks the executor, and track it here. */
static CUresult begin(ds_handle h, int into, CUresult (*send)(void *a), void *a)
{
    CUresult rc;
    int i;

    pthread_mutex_lock(&lock);
    i = find(0);
    for (int j = 0; i < 0 && j < MAX_CAPTURES; j++)
        if (captures[j].stream == 0)
            i = j;
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rc = send(a);
    if (rc == CUDA_SUCCESS) {
        captures[i].stream = h;
        captures[i].invalidated = 0;
        captures[i].into = into;
        atomic_fetch_add(&capturing, 1);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static CUresult send_begin(void *a)
{
    ds_void_res r;

    return ds_rpc_capture_begin(a, &r);
}

CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    ds_capture_args a = { .stream = ds__stream_of(s), .mode = mode };

    DS_NEED_INIT();
    return begin(a.stream, 0, send_begin, &a);
}

/* Node handles of deps (n of them), with edge data other than the default refused, as
 * graph edges are (gnode.c); *out is the caller's to free. */
static CUresult node_handles(const CUgraphNode *deps, const CUgraphEdgeData *data, size_t n,
                             ds_handle **out)
{
    static atomic_int once;

    *out = NULL;
    if (n > 0 && deps == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (n > DS_GRAPH_DEPS_MAX)
        return CUDA_ERROR_NOT_SUPPORTED;
    for (size_t i = 0; data != NULL && i < n; i++)
        if (data[i].from_port != 0 || data[i].to_port != 0 || data[i].type != 0)
            return ds__unsupported("graph edges with edge data", &once);
    if ((*out = calloc(n > 0 ? n : 1, sizeof(**out))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++)
        (*out)[i] = hv(deps[i]);
    return CUDA_SUCCESS;
}

static CUresult send_to_graph(void *a)
{
    ds_void_res r;

    return ds_rpc_capture_to_graph(a, &r);
}

CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph graph, const CUgraphNode *deps,
                                     const CUgraphEdgeData *data, size_t ndeps,
                                     CUstreamCaptureMode mode)
{
    ds_capture_to_graph_args a = { .stream = ds__stream_of(s), .graph = hv(graph),
                                   .mode = mode };
    ds_handle *d;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = node_handles(deps, data, ndeps, &d)) != CUDA_SUCCESS)
        return rc;
    a.deps.deps_len = (u_int)ndeps;
    a.deps.deps_val = d;
    rc = begin(a.stream, 1, send_to_graph, &a);
    free(d);
    return rc;
}

/* Only a capture into a graph has nodes the tenant can name (ops_gcapture.c). */
CUresult cuStreamUpdateCaptureDependencies_v2(CUstream s, CUgraphNode *deps,
                                              const CUgraphEdgeData *data, size_t ndeps,
                                              unsigned flags)
{
    ds_capture_deps_args a = { .stream = ds__stream_of(s), .flags = flags };
    ds_void_res r;
    ds_handle *d;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = node_handles(deps, data, ndeps, &d)) != CUDA_SUCCESS)
        return rc;
    a.deps.deps_len = (u_int)ndeps;
    a.deps.deps_val = d;
    rc = ds_rpc_capture_deps(&a, &r);
    free(d);
    return rc;
}

CUresult cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode *deps, size_t ndeps,
                                           unsigned flags)
{
    return cuStreamUpdateCaptureDependencies_v2(s, deps, NULL, ndeps, flags);
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
    int i, invalidated = 0, into = 0;

    DS_NEED_INIT();
    pthread_mutex_lock(&lock);
    i = find(h);
    /* A capture into a graph the caller holds may leave out where to return it (the
     * CUDA sample graphConditionalNodes ends its capture into a WHILE body so). */
    if (graph == NULL && (i < 0 || !captures[i].into)) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    rc = ds_rpc_capture_end(&h, &r);
    if (i >= 0) {
        invalidated = captures[i].invalidated;
        into = captures[i].into;
        captures[i].stream = 0;
        atomic_fetch_sub(&capturing, 1);
    }
    pthread_mutex_unlock(&lock);
    if (rc == CUDA_SUCCESS && invalidated) {
        /* As CUDA: a capture that met something it cannot hold ends without a graph.  A
         * graph captured into is the caller's, and stays (with what was captured). */
        if (!into)
            ds_rpc_graph_destroy(&r.ds_handle_res_u.handle, &vr);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    if (rc == CUDA_SUCCESS && graph != NULL)
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

static CUresult exec_info(ds_handle exec, ds_gexec_info *out)
{
    ds_gexec_info_res r;
    CUresult rc = ds_rpc_graph_exec_info(&exec, &r);

    if (rc == CUDA_SUCCESS)
        *out = r.ds_gexec_info_res_u.info;
    return rc;
}

/* Remember that exec runs in `stages` stages. */
static CUresult remember_staged(ds_handle exec, unsigned stages)
{
    struct staged *grown;
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;

    pthread_mutex_lock(&lock);
    if ((grown = realloc(staged, (nstaged + 1) * sizeof(*grown))) != NULL) {
        staged = grown;
        staged[nstaged++] = (struct staged){ .exec = exec, .stages = stages };
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* How many stages exec runs in, 0 when it is launched as one piece; forgotten when
 * `forget`. */
static unsigned stages_of(ds_handle exec, int forget)
{
    unsigned n = 0;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nstaged; i++) {
        if (staged[i].exec == exec) {
            n = staged[i].stages;
            if (forget)
                staged[i] = staged[--nstaged];
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return n;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags)
{
    ds_instantiate_args a = { .graph = hv(graph), .flags = flags };
    ds_handle_res r;
    ds_gexec_info info;
    ds_void_res vr;
    CUresult rc;

    DS_NEED_INIT();
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds_rpc_graph_instantiate(&a, &r)) != CUDA_SUCCESS)
        return rc;
    rc = exec_info(r.ds_handle_res_u.handle, &info);
    if (rc == CUDA_SUCCESS && info.stages > 0)
        rc = remember_staged(r.ds_handle_res_u.handle, info.stages);
    if (rc == CUDA_SUCCESS)
        rc = ds__userobj_share(a.graph, r.ds_handle_res_u.handle);
    if (rc != CUDA_SUCCESS) {
        stages_of(r.ds_handle_res_u.handle, 1);
        ds__userobj_drop(r.ds_handle_res_u.handle, 0);
        ds_rpc_graph_exec_destroy(&r.ds_handle_res_u.handle, &vr);
        return rc;
    }
    *exec = (CUgraphExec)(uintptr_t)r.ds_handle_res_u.handle;
    return CUDA_SUCCESS;
}

/* The upload stream is not needed: the executor's launch prepares everything. */
CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph graph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    CUresult rc;

    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = cuGraphInstantiateWithFlags(exec, graph, p->flags);
    p->hErrNode_out = NULL;
    p->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                                       : CUDA_GRAPH_INSTANTIATE_ERROR;
    return rc;
}

CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info)
{
    ds_exec_update_args a = { .exec = hv(exec), .graph = hv(graph) };
    ds_exec_update_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (info == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(info, 0, sizeof(*info));
    if ((rc = ds_rpc_graph_exec_update(&a, &r)) != CUDA_SUCCESS) {
        info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
        return rc;
    }
    info->result = (CUgraphExecUpdateResult)r.ds_exec_update_res_u.result;
    return info->result == CU_GRAPH_EXEC_UPDATE_SUCCESS ? CUDA_SUCCESS
                                                        : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}

/* The CUDA 10.2 form: the same, with the error node (never named here) and the result
 * apart. */
CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphNode *error_node,
                           CUgraphExecUpdateResult *result)
{
    CUgraphExecUpdateResultInfo info;
    CUresult rc;

    if (error_node == NULL || result == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = cuGraphExecUpdate_v2(exec, graph, &info);
    *error_node = info.errorNode;
    *result = info.result;
    return rc;
}

CUresult cuGraphExecGetFlags(CUgraphExec exec, cuuint64_t *flags)
{
    ds_gexec_info info;
    CUresult rc;

    DS_NEED_INIT();
    if (flags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = exec_info(hv(exec), &info)) == CUDA_SUCCESS)
        *flags = info.flags;
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

/* One stage of a staged launch: its device part launched, then, once the stream has
 * reached its end, its host functions called and its copies of this process's own
 * memory done, in order. */
static CUresult run_stage(CUstream s, ds_stage_args *a)
{
    ds_stage_res r;
    const ds_stage_calls *c = &r.ds_stage_res_u.stage;
    CUresult rc;

    memset(&r, 0, sizeof(r));
    if ((rc = ds_rpc_graph_launch_stage(a, &r)) != CUDA_SUCCESS)
        return rc;
    if (c->calls.calls_len > 0)
        rc = cuStreamSynchronize(s);
    for (u_int i = 0; rc == CUDA_SUCCESS && i < c->calls.calls_len; i++) {
        const ds_stage_call *call = &c->calls.calls_val[i];

        if (call->kind == DS_NODE_MEMCPY)
            rc = ds__gnode_copy_here(&call->ds_stage_call_u.copy, s);
        else
            ((CUhostFn)(uintptr_t)call->ds_stage_call_u.host.fn)(
                (void *)(uintptr_t)call->ds_stage_call_u.host.data);
    }
    xdr_free((xdrproc_t)xdr_ds_stage_res, (char *)&r);
    return rc;
}

/* A graph with host nodes cannot be captured: its functions run here, now. */
static CUresult launch_staged(CUgraphExec exec, CUstream s, unsigned stages)
{
    ds_stage_args a = { .exec = hv(exec), .stream = ds__stream_of(s) };
    CUresult rc;

    if ((rc = ds__graph_refuse_host_work(s)) != CUDA_SUCCESS)
        return rc;
    for (a.stage = 0; a.stage < stages && rc == CUDA_SUCCESS; a.stage++)
        rc = run_stage(s, &a);
    return rc;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream s)
{
    ds_graph_launch_args a = { .exec = hv(exec), .stream = ds__stream_of(s) };
    unsigned stages;

    DS_NEED_INIT();
    if ((stages = stages_of(a.exec, 0)) > 0)
        return launch_staged(exec, s, stages);
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
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds_rpc_graph_destroy(&h, &r)) == CUDA_SUCCESS) {
        ds__userobj_drop(h, 0);
        ds__gkernel_graph_gone(h);
    }
    return rc;
}

CUresult cuGraphExecDestroy(CUgraphExec exec)
{
    ds_handle h = hv(exec);
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds_rpc_graph_exec_destroy(&h, &r)) == CUDA_SUCCESS) {
        stages_of(h, 1);
        ds__userobj_drop(h, 1);
    }
    return rc;
}
