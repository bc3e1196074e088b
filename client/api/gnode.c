/*
 * Graphs built node by node (kernel, memset, memcpy, empty and event nodes; host and
 * child graph nodes in gparams.c).  Graphs and nodes are executor handles; every node's
 * description goes to the executor, which checks it and keeps the graph's shape, so
 * every question about a graph is asked of it.  A kernel node's parameters are packed
 * as a launch's are.  A copy's host side that the device reaches (page-locked, registered
 * or managed memory of the shared arena) goes as its device address; other host memory
 * (pageable, or any of a remote tenant's) stays this process's address, and the copy is
 * done here when a launch reaches the node (graph.c), as the driver does such a copy
 * through its own staging at the node's turn.
 */
#include "cuda_api.h"
#include "gnode.h"

#include "copy.h"
#include "ctx.h"
#include "hostreg.h"
#include "launch.h"
#include "mem.h"
#include "module.h"
#include "rpc.h"
#include "unsupported.h"
#include "userobj.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(ds_gnode_end_fn) end_hook;

static ds_handle hv(const void *p)
{
    return (ds_handle)(uintptr_t)p;
}

CUresult cuGraphCreate(CUgraph *graph, unsigned int flags)
{
    ds_graph_create_args a = { .flags = flags };
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (graph == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_graph_create(&a, &r);
    if (rc == CUDA_SUCCESS)
        *graph = (CUgraph)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

CUresult ds__gnode_add(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t ndeps,
                    const ds_node_params *p)
{
    ds_graph_add_args a = { .graph = hv(graph), .params = *p };
    ds_handle *d = NULL;
    ds_handle_res r;
    CUresult rc;

    if (node == NULL || (ndeps > 0 && deps == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if (ndeps > DS_GRAPH_DEPS_MAX)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (ndeps > 0 && (d = malloc(ndeps * sizeof(*d))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < ndeps; i++)
        d[i] = hv(deps[i]);
    a.deps.deps_len = (u_int)ndeps;
    a.deps.deps_val = d;
    rc = ds_rpc_graph_add_node(&a, &r);
    free(d);
    if (rc == CUDA_SUCCESS)
        *node = (CUgraphNode)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

CUresult cuGraphAddEmptyNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                             size_t ndeps)
{
    ds_node_params p = { .kind = DS_NODE_EMPTY };

    DS_NEED_INIT();
    return ds__gnode_add(node, graph, deps, ndeps, &p);
}

/* A kernel node's description from CUDA's: the function (or kernel), its shape and its
 * parameters, packed into *buf (the caller frees it). */
static CUresult kernel_node(const CUDA_KERNEL_NODE_PARAMS *kp, ds_node_params *p,
                            unsigned char **buf)
{
    const struct ds_cfunc *f;
    ds_kernel_node *k = &p->ds_node_params_u.kernel;
    CUresult rc;

    *buf = NULL;
    if (kp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    f = ds__module_func(kp->func != NULL ? (const void *)kp->func : (const void *)kp->kern);
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = ds__launch_pack(f, kp->kernelParams, kp->extra, buf)) != CUDA_SUCCESS)
        return rc;
    memset(p, 0, sizeof(*p));
    p->kind = DS_NODE_KERNEL;
    k->fn = f->handle;
    k->grid[0] = kp->gridDimX;
    k->grid[1] = kp->gridDimY;
    k->grid[2] = kp->gridDimZ;
    k->block[0] = kp->blockDimX;
    k->block[1] = kp->blockDimY;
    k->block[2] = kp->blockDimZ;
    k->shared_mem = kp->sharedMemBytes;
    k->params.params_len = f->param_bytes;
    k->params.params_val = (char *)*buf;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                 size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *kp)
{
    unsigned char *buf;
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = kernel_node(kp, &p, &buf)) == CUDA_SUCCESS)
        rc = ds__gnode_add(node, graph, deps, ndeps, &p);
    free(buf);
    return rc;
}

/* The CUDA 10 form: the same fields, without kern and ctx. */
CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                              size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v1 *kp)
{
    CUDA_KERNEL_NODE_PARAMS p = { 0 };

    if (kp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(&p, kp, sizeof(*kp));
    return cuGraphAddKernelNode_v2(node, graph, deps, ndeps, &p);
}

CUresult ds__gnode_fill(const CUDA_MEMSET_NODE_PARAMS *mp, ds_node_params *p)
{
    ds_memset_node *m = &p->ds_node_params_u.fill;

    if (mp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(p, 0, sizeof(*p));
    p->kind = DS_NODE_MEMSET;
    m->dst = mp->dst;
    m->pitch = mp->pitch;
    m->value = mp->value;
    m->elem_size = mp->elementSize;
    m->width = mp->width;
    m->height = mp->height;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemsetNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                              size_t ndeps, const CUDA_MEMSET_NODE_PARAMS *mp, CUcontext ctx)
{
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    (void)ctx;
    if ((rc = ds__gnode_fill(mp, &p)) != CUDA_SUCCESS)
        return rc;
    return ds__gnode_add(node, graph, deps, ndeps, &p);
}

/* Where one side of a copy starts, for n bytes: device memory as it is, host memory the
 * device reaches at its device address; other host memory as this process's address,
 * with `side` (DS_COPY_*_HOST) added to *host_sides. */
static CUresult copy_end(CUmemorytype type, const void *host, CUdeviceptr dev, size_t n,
                         unsigned side, uint64_t *out, unsigned *host_sides)
{
    static atomic_int arrays;

    if (type == CU_MEMORYTYPE_DEVICE ||
        (type == CU_MEMORYTYPE_UNIFIED && ds__mem_is_device(dev))) {
        *out = dev;
        return CUDA_SUCCESS;
    }
    if (type == CU_MEMORYTYPE_UNIFIED)
        host = (const void *)(uintptr_t)dev;
    else if (type != CU_MEMORYTYPE_HOST)
        return ds__unsupported("cuGraphAddMemcpyNode with arrays", &arrays);
    if (host == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ds__copy_device_view(host, n, out)) {
        *out = (uint64_t)(uintptr_t)host;
        *host_sides |= side;
    }
    return CUDA_SUCCESS;
}

/* Offset of a copy's start in its memory: rows and slices are pitch and height apart. */
static size_t start(size_t x, size_t y, size_t z, size_t pitch, size_t height)
{
    return x + y * pitch + z * pitch * height;
}

/* Graphs served here copy rows that follow one another (a 1-D copy, or 2-D and 3-D
 * copies of whole rows). */
CUresult ds__gnode_copy(const CUDA_MEMCPY3D *cp, ds_memcpy_node *c)
{
    static atomic_int once;
    size_t n = cp->WidthInBytes * cp->Height * cp->Depth;
    int rows = cp->Height > 1 || cp->Depth > 1;
    CUresult rc;

    if (cp->Height == 0 || cp->Depth == 0 || cp->WidthInBytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (cp->srcLOD != 0 || cp->dstLOD != 0 ||
        (rows && (cp->srcPitch != cp->WidthInBytes || cp->dstPitch != cp->WidthInBytes)) ||
        (cp->Depth > 1 && (cp->srcHeight != cp->Height || cp->dstHeight != cp->Height)))
        return ds__unsupported("cuGraphAddMemcpyNode with gaps between rows", &once);
    c->host = 0;
    rc = copy_end(cp->srcMemoryType, cp->srcHost, cp->srcDevice, n, DS_COPY_SRC_HOST, &c->src,
                  &c->host);
    if (rc == CUDA_SUCCESS)
        rc = copy_end(cp->dstMemoryType, cp->dstHost, cp->dstDevice, n, DS_COPY_DST_HOST,
                      &c->dst, &c->host);
    c->src += start(cp->srcXInBytes, cp->srcY, cp->srcZ, cp->srcPitch, cp->srcHeight);
    c->dst += start(cp->dstXInBytes, cp->dstY, cp->dstZ, cp->dstPitch, cp->dstHeight);
    c->size = n;
    return rc;
}

CUresult cuGraphAddMemcpyNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                              size_t ndeps, const CUDA_MEMCPY3D *cp, CUcontext ctx)
{
    ds_node_params p = { .kind = DS_NODE_MEMCPY };
    CUresult rc;

    DS_NEED_INIT();
    (void)ctx;
    if (cp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__gnode_copy(cp, &p.ds_node_params_u.copy)) != CUDA_SUCCESS)
        return rc;
    return ds__gnode_add(node, graph, deps, ndeps, &p);
}

/* Edges from[i] -> to[i], added or removed. */
static CUresult edges(CUgraph graph, const CUgraphNode *from, const CUgraphNode *to,
                      const CUgraphEdgeData *data, size_t n, int remove)
{
    static atomic_int once;
    ds_graph_edges_args a = { .graph = hv(graph), .remove = remove };
    ds_handle *v;
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (n == 0)
        return CUDA_SUCCESS;
    if (from == NULL || to == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; data != NULL && i < n; i++)
        if (data[i].from_port != 0 || data[i].to_port != 0 || data[i].type != 0)
            return ds__unsupported("graph edges with edge data", &once);
    if (n > DS_GRAPH_DEPS_MAX)
        return CUDA_ERROR_NOT_SUPPORTED;
    if ((v = malloc(2 * n * sizeof(*v))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) {
        v[i] = hv(from[i]);
        v[n + i] = hv(to[i]);
    }
    a.from.from_len = a.to.to_len = (u_int)n;
    a.from.from_val = v;
    a.to.to_val = v + n;
    rc = ds_rpc_graph_edges(&a, &r);
    free(v);
    return rc;
}

CUresult cuGraphAddDependencies(CUgraph graph, const CUgraphNode *from, const CUgraphNode *to,
                                size_t n)
{
    return edges(graph, from, to, NULL, n, 0);
}

CUresult cuGraphAddDependencies_v2(CUgraph graph, const CUgraphNode *from,
                                   const CUgraphNode *to, const CUgraphEdgeData *data, size_t n)
{
    return edges(graph, from, to, data, n, 0);
}

CUresult cuGraphRemoveDependencies(CUgraph graph, const CUgraphNode *from,
                                   const CUgraphNode *to, size_t n)
{
    return edges(graph, from, to, NULL, n, 1);
}

CUresult cuGraphRemoveDependencies_v2(CUgraph graph, const CUgraphNode *from,
                                      const CUgraphNode *to, const CUgraphEdgeData *data,
                                      size_t n)
{
    return edges(graph, from, to, data, n, 1);
}

void ds__gnode_on_destroy(ds_gnode_end_fn fn)
{
    atomic_store(&end_hook, fn);
}

static void node_destroyed(uint64_t node)
{
    ds_gnode_end_fn fn = atomic_load(&end_hook);

    if (fn != NULL)
        fn(node);
}

CUresult cuGraphDestroyNode(CUgraphNode node)
{
    ds_handle h = hv(node);
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds_rpc_graph_node_destroy(&h, &r)) == CUDA_SUCCESS)
        node_destroyed(h);
    return rc;
}

/* Ask the executor for a list: nodes, or edges nodes[i] -> to[i]; free with xdr_free. */
static CUresult query(const void *of, ds_graph_query what, ds_graph_query_res *r)
{
    ds_graph_query_args a = { .of = hv(of), .what = what };

    memset(r, 0, sizeof(*r));
    return ds_rpc_graph_query(&a, r);
}

/* CUDA's way of handing out a list: the count alone when out is NULL, else up to *count
 * entries, the rest of *count NULL, and *count the number written. */
static void hand_out(const ds_handle *v, size_t n, CUgraphNode *out, size_t *count)
{
    if (out == NULL) {
        *count = n;
        return;
    }
    for (size_t i = 0; i < *count; i++)
        out[i] = i < n ? (CUgraphNode)(uintptr_t)v[i] : NULL;
    if (n < *count)
        *count = n;
}

static CUresult list(const void *of, ds_graph_query what, CUgraphNode *out, size_t *count)
{
    ds_graph_query_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = query(of, what, &r)) != CUDA_SUCCESS)
        return rc;
    hand_out(r.ds_graph_query_res_u.list.nodes.nodes_val,
             r.ds_graph_query_res_u.list.nodes.nodes_len, out, count);
    xdr_free((xdrproc_t)xdr_ds_graph_query_res, (char *)&r);
    return CUDA_SUCCESS;
}

/* A captured graph's nodes are the driver's: only their number is known. */
CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *count)
{
    ds_handle h = hv(graph);
    ds_hyper_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (nodes != NULL)
        return list(graph, DS_GQ_NODES, nodes, count);
    rc = ds_rpc_graph_node_count(&h, &r);
    if (rc == CUDA_SUCCESS)
        *count = r.ds_hyper_res_u.value;
    return rc;
}

CUresult cuGraphGetRootNodes(CUgraph graph, CUgraphNode *roots, size_t *count)
{
    return list(graph, DS_GQ_ROOTS, roots, count);
}

CUresult cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode *deps, size_t *count)
{
    return list(node, DS_GQ_DEPS, deps, count);
}

CUresult cuGraphNodeGetDependentNodes(CUgraphNode node, CUgraphNode *deps, size_t *count)
{
    return list(node, DS_GQ_DEPENDENTS, deps, count);
}

/* Edges carry no data here: what a caller asking for it gets is the default, zeros. */
static void no_edge_data(CUgraphEdgeData *data, size_t n)
{
    if (data != NULL)
        memset(data, 0, n * sizeof(*data));
}

CUresult cuGraphNodeGetDependencies_v2(CUgraphNode node, CUgraphNode *deps,
                                       CUgraphEdgeData *data, size_t *count)
{
    CUresult rc = list(node, DS_GQ_DEPS, deps, count);

    if (rc == CUDA_SUCCESS && deps != NULL)
        no_edge_data(data, *count);
    return rc;
}

CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode node, CUgraphNode *deps,
                                         CUgraphEdgeData *data, size_t *count)
{
    CUresult rc = list(node, DS_GQ_DEPENDENTS, deps, count);

    if (rc == CUDA_SUCCESS && deps != NULL)
        no_edge_data(data, *count);
    return rc;
}

CUresult cuGraphGetEdges_v2(CUgraph graph, CUgraphNode *from, CUgraphNode *to,
                            CUgraphEdgeData *data, size_t *count)
{
    ds_graph_query_res r;
    ds_node_list *l = &r.ds_graph_query_res_u.list;
    size_t cap;
    CUresult rc;

    DS_NEED_INIT();
    if (count == NULL || (from == NULL) != (to == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = query(graph, DS_GQ_EDGES, &r)) != CUDA_SUCCESS)
        return rc;
    cap = *count;
    hand_out(l->nodes.nodes_val, l->nodes.nodes_len, from, count);
    hand_out(l->to.to_val, l->to.to_len, to, &cap);
    xdr_free((xdrproc_t)xdr_ds_graph_query_res, (char *)&r);
    if (from != NULL)
        no_edge_data(data, *count);
    return CUDA_SUCCESS;
}

CUresult cuGraphGetEdges(CUgraph graph, CUgraphNode *from, CUgraphNode *to, size_t *count)
{
    return cuGraphGetEdges_v2(graph, from, to, NULL, count);
}

CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type)
{
    static const CUgraphNodeType types[] = {
        [DS_NODE_EMPTY] = CU_GRAPH_NODE_TYPE_EMPTY,
        [DS_NODE_KERNEL] = CU_GRAPH_NODE_TYPE_KERNEL,
        [DS_NODE_MEMSET] = CU_GRAPH_NODE_TYPE_MEMSET,
        [DS_NODE_MEMCPY] = CU_GRAPH_NODE_TYPE_MEMCPY,
        [DS_NODE_EVENT_RECORD] = CU_GRAPH_NODE_TYPE_EVENT_RECORD,
        [DS_NODE_EVENT_WAIT] = CU_GRAPH_NODE_TYPE_WAIT_EVENT,
        [DS_NODE_HOST] = CU_GRAPH_NODE_TYPE_HOST,
        [DS_NODE_CHILD] = CU_GRAPH_NODE_TYPE_GRAPH,
        [DS_NODE_COND] = CU_GRAPH_NODE_TYPE_CONDITIONAL,
        [DS_NODE_MEM_ALLOC] = CU_GRAPH_NODE_TYPE_MEM_ALLOC,
        [DS_NODE_MEM_FREE] = CU_GRAPH_NODE_TYPE_MEM_FREE,
        [DS_NODE_MEMOP] = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
    };
    ds_node_info_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (type == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__gnode_info(node, &r)) != CUDA_SUCCESS)
        return rc;
    if ((unsigned)r.ds_node_info_res_u.info.params.kind < sizeof(types) / sizeof(types[0]))
        *type = types[r.ds_node_info_res_u.info.params.kind];
    else
        rc = CUDA_ERROR_INVALID_VALUE;
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&r);
    return rc;
}

CUresult ds__gnode_info(CUgraphNode node, ds_node_info_res *r)
{
    ds_handle h = hv(node);

    memset(r, 0, sizeof(*r));
    return ds_rpc_graph_node_info(&h, r);
}

CUresult ds__gnode_set(CUgraphExec exec, CUgraphNode node, const ds_node_params *p)
{
    ds_node_set_args a = { .exec = hv(exec), .node = hv(node), .params = *p };
    ds_void_res r;

    return ds_rpc_graph_node_set(&a, &r);
}

/* New parameters for a kernel node, in its graph (exec NULL) or in exec. */
static CUresult set_kernel(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *kp)
{
    ds_node_params p;
    unsigned char *buf;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = kernel_node(kp, &p, &buf)) == CUDA_SUCCESS)
        rc = ds__gnode_set(exec, node, &p);
    free(buf);
    return rc;
}

CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *kp)
{
    return set_kernel(NULL, node, kp);
}

CUresult cuGraphKernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1 *kp)
{
    CUDA_KERNEL_NODE_PARAMS p = { 0 };

    if (kp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(&p, kp, sizeof(*kp));
    return set_kernel(NULL, node, &p);
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec exec, CUgraphNode node,
                                           const CUDA_KERNEL_NODE_PARAMS *kp)
{
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_kernel(exec, node, kp);
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                        const CUDA_KERNEL_NODE_PARAMS_v1 *kp)
{
    CUDA_KERNEL_NODE_PARAMS p = { 0 };

    if (kp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(&p, kp, sizeof(*kp));
    return cuGraphExecKernelNodeSetParams_v2(exec, node, &p);
}

/* Event record and wait nodes: the event is the tenant's, named by its handle. */
static CUresult add_event(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                          size_t ndeps, CUevent event, ds_node_kind kind)
{
    ds_node_params p = { .kind = kind };

    DS_NEED_INIT();
    if (event == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (kind == DS_NODE_EVENT_RECORD)
        p.ds_node_params_u.record = hv(event);
    else
        p.ds_node_params_u.wait = hv(event);
    return ds__gnode_add(node, graph, deps, ndeps, &p);
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                   size_t ndeps, CUevent event)
{
    return add_event(node, graph, deps, ndeps, event, DS_NODE_EVENT_RECORD);
}

CUresult cuGraphAddEventWaitNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                 size_t ndeps, CUevent event)
{
    return add_event(node, graph, deps, ndeps, event, DS_NODE_EVENT_WAIT);
}

/* The event of an event node of `kind`; INVALID_VALUE for a node of another kind. */
static CUresult get_event(CUgraphNode node, CUevent *out, ds_node_kind kind)
{
    ds_node_info_res r;
    const ds_node_params *p = &r.ds_node_info_res_u.info.params;
    CUresult rc;

    DS_NEED_INIT();
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__gnode_info(node, &r)) != CUDA_SUCCESS)
        return rc;
    if (p->kind != kind)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *out = (CUevent)(uintptr_t)(kind == DS_NODE_EVENT_RECORD ? p->ds_node_params_u.record
                                                                  : p->ds_node_params_u.wait);
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&r);
    return rc;
}

/* A new event for an event node of `kind`, in its graph (exec NULL) or in exec. */
static CUresult set_event(CUgraphExec exec, CUgraphNode node, CUevent event, ds_node_kind kind)
{
    ds_node_params p = { .kind = kind };

    DS_NEED_INIT();
    if (event == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (kind == DS_NODE_EVENT_RECORD)
        p.ds_node_params_u.record = hv(event);
    else
        p.ds_node_params_u.wait = hv(event);
    return ds__gnode_set(exec, node, &p);
}

CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode node, CUevent *event)
{
    return get_event(node, event, DS_NODE_EVENT_RECORD);
}

CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode node, CUevent *event)
{
    return get_event(node, event, DS_NODE_EVENT_WAIT);
}

CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode node, CUevent event)
{
    return set_event(NULL, node, event, DS_NODE_EVENT_RECORD);
}

CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode node, CUevent event)
{
    return set_event(NULL, node, event, DS_NODE_EVENT_WAIT);
}

CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec exec, CUgraphNode node, CUevent event)
{
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_event(exec, node, event, DS_NODE_EVENT_RECORD);
}

CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec exec, CUgraphNode node, CUevent event)
{
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_event(exec, node, event, DS_NODE_EVENT_WAIT);
}

/* A clone that failed to become the caller's: what cuGraphDestroy does for it, short of
 * its kernel nodes' keepings, which a clone has none of yet. */
static void drop_clone(ds_handle clone)
{
    ds_void_res r;

    ds_rpc_graph_destroy(&clone, &r);
    ds__userobj_drop(clone, 0);
}

CUresult cuGraphClone(CUgraph *clone, CUgraph graph)
{
    ds_handle h = hv(graph);
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (clone == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds_rpc_graph_clone(&h, &r)) != CUDA_SUCCESS)
        return rc;
    if ((rc = ds__userobj_share(h, r.ds_handle_res_u.handle)) != CUDA_SUCCESS) {
        drop_clone(r.ds_handle_res_u.handle);
        return rc;
    }
    *clone = (CUgraph)(uintptr_t)r.ds_handle_res_u.handle;
    return CUDA_SUCCESS;
}
