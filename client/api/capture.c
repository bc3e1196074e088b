/*
 * Stream capture.  The executor captures on the real stream (or the sim's model of it).
 * Capture status is asked of the executor only while some stream of this process is
 * capturing: libraries such as PyTorch ask before every allocation, and the answer is
 * otherwise "none".
 */
#include "cuda_api.h"
#include "capture.h"

#include "rpc.h"
#include "stream.h"
#include "unsupported.h"

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
static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* The dependency arrays cuStreamGetCaptureInfo_v2/_v3 handed out, one per stream: CUDA
 * keeps its array valid until the next call on the stream or the capture's end; these
 * stay until the next such answer for the stream, or until no stream captures.  The edge
 * data are all default (the executor refuses any other), zeroed as CUDA reports them. */
static struct {
    ds_handle stream;
    CUgraphNode *deps;
    CUgraphEdgeData *edges;
} handed[MAX_CAPTURES];

/* Forget every array handed out; called with the lock held. */
static void drop_handed(void)
{
    for (int i = 0; i < MAX_CAPTURES; i++) {
        free(handed[i].deps);
        free(handed[i].edges);
        handed[i].stream = 0;
        handed[i].deps = NULL;
        handed[i].edges = NULL;
    }
}

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

CUresult ds__capture_refuse_host_work(CUstream s)
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

CUresult ds__capture_host_fn(CUstream s, CUhostFn fn, void *data, int *taken)
{
    ds_capture_host_fn_args a = { .stream = ds__stream_of(s),
                                  .host = { .fn = (uint64_t)(uintptr_t)fn,
                                            .data = (uint64_t)(uintptr_t)data } };
    ds_int_res r;
    CUresult rc;

    *taken = 0;
    if (atomic_load(&capturing) == 0)
        return CUDA_SUCCESS;
    rc = ds_rpc_capture_host_fn(&a, &r);
    if (rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        ds__capture_refuse_host_work(s);
    *taken = rc == CUDA_SUCCESS && r.ds_int_res_u.value == 1;
    return rc;
}

int ds__capture_capturing_any(void)
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
        if (atomic_fetch_sub(&capturing, 1) == 1)
            drop_handed();
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

/* Stream h's slot in handed[] (a free one the first time), or -1 when all are taken;
 * called with the lock held. */
static int handed_slot(ds_handle h)
{
    int free_slot = -1;

    for (int i = 0; i < MAX_CAPTURES; i++) {
        if (handed[i].stream == h)
            return i;
        if (handed[i].stream == 0 && free_slot < 0)
            free_slot = i;
    }
    return free_slot;
}

/* The n node handles v as nodes (and as many default edges) in stream h's slot: the
 * arrays into *deps_out and *edges_out. */
static CUresult keep_deps(ds_handle h, const ds_handle *v, size_t n,
                          const CUgraphNode **deps_out, const CUgraphEdgeData **edges_out)
{
    CUgraphNode *deps = calloc(n > 0 ? n : 1, sizeof(*deps));
    CUgraphEdgeData *edges = calloc(n > 0 ? n : 1, sizeof(*edges));
    int i;

    pthread_mutex_lock(&lock);
    i = handed_slot(h);
    if (deps == NULL || edges == NULL || i < 0) {
        pthread_mutex_unlock(&lock);
        free(deps);
        free(edges);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t k = 0; k < n; k++)
        deps[k] = (CUgraphNode)(uintptr_t)v[k];
    free(handed[i].deps);
    free(handed[i].edges);
    handed[i].stream = h;
    handed[i].deps = deps;
    handed[i].edges = edges;
    *deps_out = deps;
    *edges_out = edges;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* What the executor answered is checked before use: a graph and nodes only for an
 * active capture, and never a null handle among them. */
static int answer_valid(const ds_capture_graph *c)
{
    if (c->status < CU_STREAM_CAPTURE_STATUS_NONE ||
        c->status > CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        return 0;
    if (c->status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return c->graph == 0 && c->deps.deps_len == 0;
    if (c->graph == 0 || c->deps.deps_len > DS_GRAPH_DEPS_MAX)
        return 0;
    for (u_int i = 0; i < c->deps.deps_len; i++)
        if (c->deps.deps_val[i] == 0)
            return 0;
    return 1;
}

/* The graph a capture builds and the nodes its next work depends on, which the executor
 * makes nodes of a graph the tenant can name (ops_gcapture.c): into the caller's
 * locations, each optional. */
static CUresult capture_graph(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                              CUgraph *graph, const CUgraphNode **deps,
                              const CUgraphEdgeData **edges, size_t *ndeps)
{
    ds_handle h = ds__stream_of(s);
    ds_capture_graph_res r;
    ds_capture_graph *c = &r.ds_capture_graph_res_u.info;
    const CUgraphNode *kept = NULL;
    const CUgraphEdgeData *kept_edges = NULL;
    CUresult rc;

    memset(&r, 0, sizeof(r));
    if ((rc = ds_rpc_capture_graph(&h, &r)) != CUDA_SUCCESS)
        return rc;
    if (!answer_valid(c))
        rc = CUDA_ERROR_UNKNOWN;
    if (rc == CUDA_SUCCESS && c->status == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
        (deps != NULL || edges != NULL))
        rc = keep_deps(h, c->deps.deps_val, c->deps.deps_len, &kept, &kept_edges);
    if (rc == CUDA_SUCCESS) {
        *status = (CUstreamCaptureStatus)c->status;
        if (id != NULL)
            *id = c->id;
        if (graph != NULL)
            *graph = (CUgraph)(uintptr_t)c->graph;
        if (deps != NULL)
            *deps = kept;
        if (edges != NULL)
            *edges = kept_edges;
        if (ndeps != NULL)
            *ndeps = c->deps.deps_len;
    }
    xdr_free((xdrproc_t)xdr_ds_capture_graph_res, (char *)&r);
    return rc;
}

CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                                   CUgraph *graph, const CUgraphNode **deps,
                                   const CUgraphEdgeData **edges, size_t *ndeps)
{
    DS_NEED_INIT();
    if (status == NULL || (edges != NULL && deps == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if (graph != NULL)
        *graph = NULL;
    if (deps != NULL)
        *deps = NULL;
    if (edges != NULL)
        *edges = NULL;
    if (ndeps != NULL)
        *ndeps = 0;
    /* Only a capture's graph and dependencies cut it (ops_gcapture.c): the status and id
     * alone are asked as cheaply as before. */
    if ((graph == NULL && deps == NULL && ndeps == NULL) || atomic_load(&capturing) == 0)
        return capture_info(s, status, id);
    return capture_graph(s, status, id, graph, deps, edges, ndeps);
}

CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                                   CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
    return cuStreamGetCaptureInfo_v3(s, status, id, graph, deps, NULL, ndeps);
}

/* Which calls a capture forbids is decided by the driver on the executor side; the client
 * keeps each thread's mode and sends it with the calls it governs (allocations). */
CUstreamCaptureMode ds__capture_thread_mode(void)
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
