/*
 * Graph nodes beyond gnode.c's: host nodes, child graph nodes, the memcpy and memset
 * nodes' getters and setters, and the generic cuGraphAddNode / cuGraph*NodeSetParams
 * forms, which hand each node kind to its own call.
 *
 * A host node's function and argument are this process's pointers; the executor keeps
 * them as numbers and hands them back when an instantiated graph reaches the node, and
 * graph.c calls the function here, in graph order.  A child graph node holds its own
 * copy of the graph, made by the executor when the node is added.  A conditional node's
 * handle is the backend's own number for it (the driver's, which kernels pass to
 * cudaGraphSetConditional), and its body graphs are executor graphs the caller fills.
 */
#include "cuda_api.h"
#include "ctx.h"
#include "gkernel.h"
#include "gnode.h"

#include "rpc.h"
#include "unsupported.h"

#include <string.h>

static ds_handle hv(const void *p)
{
    return (ds_handle)(uintptr_t)p;
}

static CUresult host_params(const CUDA_HOST_NODE_PARAMS *hp, ds_node_params *p)
{
    if (hp == NULL || hp->fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(p, 0, sizeof(*p));
    p->kind = DS_NODE_HOST;
    p->ds_node_params_u.host.fn = (uint64_t)(uintptr_t)hp->fn;
    p->ds_node_params_u.host.data = (uint64_t)(uintptr_t)hp->userData;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddHostNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                            size_t ndeps, const CUDA_HOST_NODE_PARAMS *hp)
{
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = host_params(hp, &p)) != CUDA_SUCCESS)
        return rc;
    return ds__gnode_add(node, graph, deps, ndeps, &p);
}

/* The parameters of node, which must be of `kind`, into *out. */
static CUresult get(CUgraphNode node, ds_node_kind kind, ds_node_params *out)
{
    ds_node_info_res r;
    CUresult rc;

    if ((rc = ds__gnode_info(node, &r)) != CUDA_SUCCESS)
        return rc;
    if (r.ds_node_info_res_u.info.params.kind != kind)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *out = r.ds_node_info_res_u.info.params;
    /* The kinds read here own no memory of the reply's. */
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&r);
    return rc;
}

CUresult cuGraphHostNodeGetParams(CUgraphNode node, CUDA_HOST_NODE_PARAMS *hp)
{
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    if (hp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = get(node, DS_NODE_HOST, &p)) != CUDA_SUCCESS)
        return rc;
    hp->fn = (CUhostFn)(uintptr_t)p.ds_node_params_u.host.fn;
    hp->userData = (void *)(uintptr_t)p.ds_node_params_u.host.data;
    return CUDA_SUCCESS;
}

static CUresult set_host(CUgraphExec exec, CUgraphNode node, const CUDA_HOST_NODE_PARAMS *hp)
{
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = host_params(hp, &p)) != CUDA_SUCCESS)
        return rc;
    return ds__gnode_set(exec, node, &p);
}

CUresult cuGraphHostNodeSetParams(CUgraphNode node, const CUDA_HOST_NODE_PARAMS *hp)
{
    return set_host(NULL, node, hp);
}

CUresult cuGraphExecHostNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                      const CUDA_HOST_NODE_PARAMS *hp)
{
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_host(exec, node, hp);
}

CUresult cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                  size_t ndeps, CUgraph child)
{
    ds_node_params p = { .kind = DS_NODE_CHILD };

    DS_NEED_INIT();
    if (child == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    p.ds_node_params_u.child = hv(child);
    return ds__gnode_add(node, graph, deps, ndeps, &p);
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *graph)
{
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    if (graph == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = get(node, DS_NODE_CHILD, &p)) == CUDA_SUCCESS)
        *graph = (CUgraph)(uintptr_t)p.ds_node_params_u.child;
    return rc;
}

CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraph child)
{
    ds_node_params p = { .kind = DS_NODE_CHILD };

    DS_NEED_INIT();
    if (exec == NULL || child == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    p.ds_node_params_u.child = hv(child);
    return ds__gnode_set(exec, node, &p);
}

/* A copy node as the executor holds it: one contiguous copy between two addresses, each
 * one the device reaches (arena host memory at its device address) or this process's
 * own host memory. */
CUresult cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D *cp)
{
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    if (cp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = get(node, DS_NODE_MEMCPY, &p)) != CUDA_SUCCESS)
        return rc;
    memset(cp, 0, sizeof(*cp));
    cp->srcMemoryType = cp->dstMemoryType = CU_MEMORYTYPE_DEVICE;
    cp->srcDevice = p.ds_node_params_u.copy.src;
    cp->dstDevice = p.ds_node_params_u.copy.dst;
    if (p.ds_node_params_u.copy.host & DS_COPY_SRC_HOST) {
        cp->srcMemoryType = CU_MEMORYTYPE_HOST;
        cp->srcHost = (const void *)(uintptr_t)cp->srcDevice;
        cp->srcDevice = 0;
    }
    if (p.ds_node_params_u.copy.host & DS_COPY_DST_HOST) {
        cp->dstMemoryType = CU_MEMORYTYPE_HOST;
        cp->dstHost = (void *)(uintptr_t)cp->dstDevice;
        cp->dstDevice = 0;
    }
    cp->WidthInBytes = p.ds_node_params_u.copy.size;
    cp->Height = cp->Depth = 1;
    return CUDA_SUCCESS;
}

static CUresult set_copy(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D *cp)
{
    ds_node_params p = { .kind = DS_NODE_MEMCPY };
    CUresult rc;

    DS_NEED_INIT();
    if (cp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__gnode_copy(cp, &p.ds_node_params_u.copy)) != CUDA_SUCCESS)
        return rc;
    return ds__gnode_set(exec, node, &p);
}

CUresult cuGraphMemcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D *cp)
{
    return set_copy(NULL, node, cp);
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                        const CUDA_MEMCPY3D *cp, CUcontext ctx)
{
    (void)ctx;
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_copy(exec, node, cp);
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS *mp)
{
    ds_node_params p;
    const ds_memset_node *m = &p.ds_node_params_u.fill;
    CUresult rc;

    DS_NEED_INIT();
    if (mp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = get(node, DS_NODE_MEMSET, &p)) != CUDA_SUCCESS)
        return rc;
    *mp = (CUDA_MEMSET_NODE_PARAMS){ .dst = m->dst, .pitch = m->pitch, .value = m->value,
                                     .elementSize = m->elem_size, .width = m->width,
                                     .height = m->height };
    return CUDA_SUCCESS;
}

static CUresult set_fill(CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *mp)
{
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds__gnode_fill(mp, &p)) != CUDA_SUCCESS)
        return rc;
    return ds__gnode_set(exec, node, &p);
}

CUresult cuGraphMemsetNodeSetParams(CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *mp)
{
    return set_fill(NULL, node, mp);
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                        const CUDA_MEMSET_NODE_PARAMS *mp, CUcontext ctx)
{
    (void)ctx;
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_fill(exec, node, mp);
}

static CUresult enable(CUgraphExec exec, CUgraphNode node, int enable, unsigned *out)
{
    ds_node_enable_args a = { .exec = hv(exec), .node = hv(node), .enable = enable };
    ds_int_res r;
    CUresult rc;

    DS_NEED_INIT();
    rc = ds_rpc_graph_node_enable(&a, &r);
    if (rc == CUDA_SUCCESS && out != NULL)
        *out = (unsigned)r.ds_int_res_u.value;
    return rc;
}

CUresult cuGraphNodeSetEnabled(CUgraphExec exec, CUgraphNode node, unsigned int on)
{
    return enable(exec, node, on != 0, NULL);
}

CUresult cuGraphNodeGetEnabled(CUgraphExec exec, CUgraphNode node, unsigned int *on)
{
    if (on == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return enable(exec, node, -1, on);
}

CUresult cuGraphNodeFindInClone(CUgraphNode *node, CUgraphNode original, CUgraph clone)
{
    ds_find_in_clone_args a = { .node = hv(original), .clone = hv(clone) };
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (node == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_graph_find_in_clone(&a, &r);
    if (rc == CUDA_SUCCESS)
        *node = (CUgraphNode)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *handle, CUgraph graph,
                                        CUcontext ctx, unsigned int dflt, unsigned int flags)
{
    ds_cond_create_args a = { .graph = hv(graph), .dflt = dflt, .flags = flags };
    ds_hyper_res r;
    CUresult rc;

    DS_NEED_INIT();
    (void)ctx;
    if (handle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_graph_cond_create(&a, &r);
    if (rc == CUDA_SUCCESS)
        *handle = r.ds_hyper_res_u.value;
    return rc;
}

/* A conditional node: added, then its body graphs read back into an array that the node
 * owns, as CUDA's does, which c->phGraph_out points to. */
static CUresult add_cond(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                         size_t ndeps, CUDA_CONDITIONAL_NODE_PARAMS *c)
{
    ds_node_params p = { .kind = DS_NODE_COND };
    const ds_cond_node *got;
    ds_node_info_res r;
    CUresult rc;

    if (c->size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    p.ds_node_params_u.cond.handle = c->handle;
    p.ds_node_params_u.cond.type = c->type;
    p.ds_node_params_u.cond.size = c->size;
    if ((rc = ds__gnode_add(node, graph, deps, ndeps, &p)) != CUDA_SUCCESS ||
        (rc = ds__gnode_info(*node, &r)) != CUDA_SUCCESS)
        return rc;
    got = &r.ds_node_info_res_u.info.params.ds_node_params_u.cond;
    if (r.ds_node_info_res_u.info.params.kind != DS_NODE_COND || got->bodies.bodies_len != c->size)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if ((c->phGraph_out = ds__gkernel_keep_bodies(hv(*node), hv(graph),
                                                       got->bodies.bodies_val, c->size)) == NULL)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&r);
    if (rc != CUDA_SUCCESS)
        cuGraphDestroyNode(*node);
    return rc;
}

/* Graph memory is the device's, pinned (the one kind CUDA allows), and peers' access is
 * moot with one device. */
CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                size_t ndeps, CUDA_MEM_ALLOC_NODE_PARAMS *mp)
{
    ds_node_params p = { .kind = DS_NODE_MEM_ALLOC };
    CUresult rc;

    DS_NEED_INIT();
    if (mp == NULL || mp->bytesize == 0 ||
        mp->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        mp->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        mp->poolProps.location.id != 0 || mp->poolProps.handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    p.ds_node_params_u.alloc.size = mp->bytesize;
    if ((rc = ds__gnode_add(node, graph, deps, ndeps, &p)) != CUDA_SUCCESS ||
        (rc = get(*node, DS_NODE_MEM_ALLOC, &p)) != CUDA_SUCCESS)
        return rc;
    mp->dptr = p.ds_node_params_u.alloc.dptr;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS *out)
{
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = get(node, DS_NODE_MEM_ALLOC, &p)) != CUDA_SUCCESS)
        return rc;
    memset(out, 0, sizeof(*out));
    out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    out->bytesize = p.ds_node_params_u.alloc.size;
    out->dptr = p.ds_node_params_u.alloc.dptr;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                               size_t ndeps, CUdeviceptr dptr)
{
    ds_node_params p = { .kind = DS_NODE_MEM_FREE };

    DS_NEED_INIT();
    p.ds_node_params_u.free_ptr = dptr;
    return ds__gnode_add(node, graph, deps, ndeps, &p);
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode node, CUdeviceptr *dptr)
{
    ds_node_params p;
    CUresult rc;

    DS_NEED_INIT();
    if (dptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = get(node, DS_NODE_MEM_FREE, &p)) == CUDA_SUCCESS)
        *dptr = p.ds_node_params_u.free_ptr;
    return rc;
}

/* Graph memory is allocated once per node and kept (server/exec/ops_gmem.c): nothing is
 * cached to trim. */
CUresult cuDeviceGraphMemTrim(CUdevice dev)
{
    DS_NEED_INIT();
    return ds__rpc_device(dev) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult graph_mem_attr(CUdevice dev, CUgraphMem_attribute attr, void *value, int set)
{
    ds_graph_mem_attr_args a = { .attr = attr, .set = set };
    ds_hyper_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (set)
        a.value = *(const cuuint64_t *)value;
    ds__ctx_pin(dev);
    rc = ds_rpc_graph_mem_attr(&a, &r);
    ds__route_unpin();
    if (rc == CUDA_SUCCESS && !set)
        *(cuuint64_t *)value = r.ds_hyper_res_u.value;
    return rc;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void *value)
{
    return graph_mem_attr(dev, attr, value, 0);
}

CUresult cuDeviceSetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void *value)
{
    return graph_mem_attr(dev, attr, value, 1);
}

/* The generic forms.  CUDA_KERNEL_NODE_PARAMS_v3 has v2's fields. */
static CUDA_KERNEL_NODE_PARAMS kernel_v2(const CUDA_KERNEL_NODE_PARAMS_v3 *k)
{
    return (CUDA_KERNEL_NODE_PARAMS){
        .func = k->func, .gridDimX = k->gridDimX, .gridDimY = k->gridDimY,
        .gridDimZ = k->gridDimZ, .blockDimX = k->blockDimX, .blockDimY = k->blockDimY,
        .blockDimZ = k->blockDimZ, .sharedMemBytes = k->sharedMemBytes,
        .kernelParams = k->kernelParams, .extra = k->extra, .kern = k->kern, .ctx = k->ctx,
    };
}

static CUDA_MEMSET_NODE_PARAMS fill_v1(const CUDA_MEMSET_NODE_PARAMS_v2 *m)
{
    return (CUDA_MEMSET_NODE_PARAMS){ .dst = m->dst, .pitch = m->pitch, .value = m->value,
                                      .elementSize = m->elementSize, .width = m->width,
                                      .height = m->height };
}

static CUresult not_served(void)
{
    static atomic_int once;

    return ds__unsupported("cuGraphAddNode/cuGraph*NodeSetParams of this node type", &once);
}

/* A child graph node that takes its graph over (OWNERSHIP_MOVE) gets a copy, as with
 * CLONE, and the graph handed over is destroyed: the caller no longer holds it. */
static CUresult add_child(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                          size_t ndeps, const CUDA_CHILD_GRAPH_NODE_PARAMS *c)
{
    CUresult rc = cuGraphAddChildGraphNode(node, graph, deps, ndeps, c->graph);

    if (rc == CUDA_SUCCESS && c->ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE)
        cuGraphDestroy(c->graph);
    return rc;
}

CUresult cuGraphAddNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t ndeps,
                        CUgraphNodeParams *np)
{
    CUDA_KERNEL_NODE_PARAMS k;
    CUDA_MEMSET_NODE_PARAMS m;

    if (np == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    switch (np->type) {
    case CU_GRAPH_NODE_TYPE_EMPTY:
        return cuGraphAddEmptyNode(node, graph, deps, ndeps);
    case CU_GRAPH_NODE_TYPE_KERNEL:
        k = kernel_v2(&np->kernel);
        return cuGraphAddKernelNode_v2(node, graph, deps, ndeps, &k);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        return cuGraphAddMemcpyNode(node, graph, deps, ndeps, &np->memcpy.copyParams,
                                    np->memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_MEMSET:
        m = fill_v1(&np->memset);
        return cuGraphAddMemsetNode(node, graph, deps, ndeps, &m, np->memset.ctx);
    case CU_GRAPH_NODE_TYPE_HOST:
        return cuGraphAddHostNode(node, graph, deps, ndeps,
                                  (const CUDA_HOST_NODE_PARAMS *)&np->host);
    case CU_GRAPH_NODE_TYPE_GRAPH:
        return add_child(node, graph, deps, ndeps, &np->graph);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        return cuGraphAddEventRecordNode(node, graph, deps, ndeps, np->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        return cuGraphAddEventWaitNode(node, graph, deps, ndeps, np->eventWait.event);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
        DS_NEED_INIT();
        return add_cond(node, graph, deps, ndeps, &np->conditional);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        return cuGraphAddMemAllocNode(node, graph, deps, ndeps,
                                      (CUDA_MEM_ALLOC_NODE_PARAMS *)&np->alloc);
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return cuGraphAddMemFreeNode(node, graph, deps, ndeps, np->free.dptr);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        return cuGraphAddBatchMemOpNode(node, graph, deps, ndeps,
                                        (const CUDA_BATCH_MEM_OP_NODE_PARAMS *)&np->memOp);
    default:
        return not_served();
    }
}

/* Edge data other than the default is refused, as graph edges are (gnode.c). */
CUresult cuGraphAddNode_v2(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                           const CUgraphEdgeData *data, size_t ndeps, CUgraphNodeParams *np)
{
    static atomic_int once;

    for (size_t i = 0; data != NULL && i < ndeps; i++)
        if (data[i].from_port != 0 || data[i].to_port != 0 || data[i].type != 0)
            return ds__unsupported("graph edges with edge data", &once);
    return cuGraphAddNode(node, graph, deps, ndeps, np);
}

/* New parameters for node in its graph (exec NULL) or in exec, by the node type's call. */
static CUresult set_params(CUgraphExec exec, CUgraphNode node, const CUgraphNodeParams *np)
{
    CUDA_KERNEL_NODE_PARAMS k;
    CUDA_MEMSET_NODE_PARAMS m;

    switch (np->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        k = kernel_v2(&np->kernel);
        return exec != NULL ? cuGraphExecKernelNodeSetParams_v2(exec, node, &k)
                            : cuGraphKernelNodeSetParams_v2(node, &k);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        return set_copy(exec, node, &np->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET:
        m = fill_v1(&np->memset);
        return set_fill(exec, node, &m);
    case CU_GRAPH_NODE_TYPE_HOST:
        return set_host(exec, node, (const CUDA_HOST_NODE_PARAMS *)&np->host);
    case CU_GRAPH_NODE_TYPE_GRAPH:
        return exec != NULL ? cuGraphExecChildGraphNodeSetParams(exec, node, np->graph.graph)
                            : CUDA_ERROR_INVALID_VALUE;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        return exec != NULL ? cuGraphExecEventRecordNodeSetEvent(exec, node, np->eventRecord.event)
                            : cuGraphEventRecordNodeSetEvent(node, np->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        return exec != NULL ? cuGraphExecEventWaitNodeSetEvent(exec, node, np->eventWait.event)
                            : cuGraphEventWaitNodeSetEvent(node, np->eventWait.event);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        return exec != NULL ? cuGraphExecBatchMemOpNodeSetParams(
                                  exec, node, (const CUDA_BATCH_MEM_OP_NODE_PARAMS *)&np->memOp)
                            : cuGraphBatchMemOpNodeSetParams(
                                  node, (const CUDA_BATCH_MEM_OP_NODE_PARAMS *)&np->memOp);
    default:
        return not_served();
    }
}

CUresult cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams *np)
{
    if (np == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_params(NULL, node, np);
}

CUresult cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraphNodeParams *np)
{
    if (exec == NULL || np == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_params(exec, node, np);
}
