/*
 * Graphs and instantiated graphs, executor handles.  An instantiated graph with host
 * nodes runs in stages (server/exec/ops_gstage.c): each launch of it launches the stages
 * one after another and, after each stage that ends in host functions, waits for the
 * stream and calls them here, as cuLaunchHostFunc does.
 */
#include "cuda_api.h"

#include "capture.h"
#include "copy.h"
#include "gkernel.h"
#include "rpc.h"
#include "stream.h"
#include "userobj.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Instantiated graphs of this process that run in stages, and how many stages each has. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct staged {
    ds_handle exec;
    unsigned stages;
} *staged;
static size_t nstaged;

static ds_handle hv(const void *p)
{
    return (ds_handle)(uintptr_t)p;
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
            rc = ds__copy_node_here(&call->ds_stage_call_u.copy, s);
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

    if ((rc = ds__capture_refuse_host_work(s)) != CUDA_SUCCESS)
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
