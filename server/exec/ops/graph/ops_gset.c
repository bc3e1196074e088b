/*
 * Changing the nodes of built graphs and of their instances: new parameters for a node
 * (cuGraph*NodeSetParams, cuGraphExec*NodeSetParams, in a staged instance through
 * ops_gstage.c) and a node enabled or disabled in an instance
 * (cuGraphNodeSetEnabled).
 */
#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"

/* Whether a node of kind `kind` takes new parameters: in its graph (exec 0), or in an
 * instantiated graph (exec 1). */
static int settable(ds_node_kind kind, int exec)
{
    switch (kind) {
    case DS_NODE_KERNEL:
    case DS_NODE_MEMSET:
    case DS_NODE_MEMCPY:
    case DS_NODE_EVENT_RECORD:
    case DS_NODE_EVENT_WAIT:
    case DS_NODE_HOST:
    case DS_NODE_MEMOP:
        return 1;
    case DS_NODE_CHILD:
        return exec;
    default:
        return 0;
    }
}

/* New parameters p in instantiated graph e for node n.  Events set, and those of a new
 * child graph, are pinned by e before the backend may use them, whether the set
 * succeeds or not. */
static CUresult set_in_exec(struct ds_tenant *t, struct ds_vnode *n, uint64_t nh,
                            struct ds_vgraph *e, const ds_node_params *p,
                            const struct ds_gnode_desc *d)
{
    struct ds_vgraph *g = ds_handles_get(&t->h, n->graph, DS_H_GRAPH);
    struct ds_vevent *ev = ds__gnode_event_of(t, p);
    CUresult rc = CUDA_SUCCESS;

    if (ev != NULL)
        rc = ds__ops_gexec_pin(e, ev);
    if (rc == CUDA_SUCCESS && p->kind == DS_NODE_CHILD)
        rc = ds__ops_gexec_pin_events(
            t, ds_handles_get(&t->h, p->ds_node_params_u.child, DS_H_GRAPH), e);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (e->stages != NULL)
        return ds__ops_gstage_set(t, e, nh, p, d);
    /* A copy of the tenant's own memory would make e a staged graph. */
    if (ds__gnode_in_tenant(p))
        return CUDA_ERROR_INVALID_VALUE;
    return ds_error_to_cu(t->ops->graph_node_set(t->be, g->real, e->real, n->real, d));
}

/* New parameters p for node n in its graph; an event set moves the node's ref to it. */
static CUresult set_in_graph(struct ds_tenant *t, struct ds_vnode *n, const ds_node_params *p,
                             const struct ds_gnode_desc *d)
{
    struct ds_vevent *ev = ds__gnode_event_of(t, p);
    struct ds_vgraph *g;
    ds_node_params copy;
    CUresult rc;

    if ((rc = ds__gnode_editable(t, n->graph, &g)) != CUDA_SUCCESS)
        return rc;
    /* The backend's node is a copy or an empty node by where the copy's host side is;
     * it cannot turn from one into the other. */
    if (ds__gnode_in_tenant(p) != ds__gnode_in_tenant(&n->params)) {
        ds_warn("a copy node cannot move between pageable and device-reachable memory");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (ds__gnode_copy_params(p, &copy) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!ds__gnode_in_tenant(p))
        rc = ds_error_to_cu(t->ops->graph_node_set(t->be, g->real, NULL, n->real, d));
    if (rc != CUDA_SUCCESS) {
        ds__gnode_free_params(&copy);
        return rc;
    }
    ds__gnode_free_params(&n->params);
    n->params = copy;
    if (ev != NULL)
        ev->refs++;
    if (n->event != NULL)
        ds__ops_event_release(t, n->event);
    n->event = ev;
    return CUDA_SUCCESS;
}

/* New parameters for node n (handle nh), of its kind, in its graph (e NULL) or in e. */
static CUresult set_node(struct ds_tenant *t, struct ds_vnode *n, uint64_t nh,
                         struct ds_vgraph *e, const ds_node_params *p)
{
    struct ds_gnode_scratch sc;
    struct ds_gnode_desc d;
    CUresult rc;

    if (n->params.kind != p->kind || !settable(p->kind, e != NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ops_gnode_describe(t, p, &d, &sc)) != CUDA_SUCCESS)
        return rc;
    if (e != NULL)
        return set_in_exec(t, n, nh, e, p, &d);
    return set_in_graph(t, n, p, &d);
}

CUresult ds__ops_graph_node_set(struct ds_tenant *t, const ds_node_set_args *a, ds_void_res *r)
{
    struct ds_vnode *n = ds__gnode_of(t, a->node, 0);
    struct ds_vgraph *e = NULL;

    (void)r;
    if (n == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->exec != 0) {
        e = ds_handles_get(&t->h, a->exec, DS_H_GEXEC);
        if (e == NULL)
            return CUDA_ERROR_INVALID_HANDLE;
        if (e->graph != n->graph)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return set_node(t, n, a->node, e, &a->params);
}

/* Whether node h is among e's disabled nodes; its index in *at. */
static int is_off(const struct ds_vgraph *e, uint64_t h, uint32_t *at)
{
    for (*at = 0; *at < e->noff; (*at)++)
        if (e->off[*at] == h)
            return 1;
    return 0;
}

/* Node n (handle nh) of instance e enabled or disabled in the backend. */
static CUresult enable(struct ds_tenant *t, struct ds_vgraph *e, struct ds_vnode *n, uint64_t nh,
                       int on)
{
    struct ds_gstage *s;
    uint32_t i;

    if (e->stages == NULL)
        return ds_error_to_cu(t->ops->graph_node_enable(t->be, e->real, n->real, on));
    /* A copy the tenant does is left out of its stage's calls while off (ops_gstage.c). */
    if (ds__gnode_in_tenant(&n->params))
        return CUDA_SUCCESS;
    if ((s = ds__ops_gstage_find(e, nh, &i)) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return ds_error_to_cu(t->ops->graph_node_enable(t->be, s->e, s->real[i], on));
}

/* Kernel, memset and memcpy nodes can be disabled, as CUDA allows. */
CUresult ds__ops_graph_node_enable(struct ds_tenant *t, const ds_node_enable_args *a,
                                   ds_int_res *r)
{
    struct ds_vgraph *e = ds_handles_get(&t->h, a->exec, DS_H_GEXEC);
    struct ds_vnode *n = ds__gnode_of(t, a->node, 0);
    uint32_t at;
    int off;
    CUresult rc;

    if (e == NULL || n == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->graph != n->graph || a->enable < -1 || a->enable > 1 ||
        (n->params.kind != DS_NODE_KERNEL && n->params.kind != DS_NODE_MEMSET &&
         n->params.kind != DS_NODE_MEMCPY))
        return CUDA_ERROR_INVALID_VALUE;
    off = is_off(e, a->node, &at);
    r->ds_int_res_u.value = !off;
    if (a->enable == -1 || a->enable == !off)
        return CUDA_SUCCESS;
    if (!off && ds__gnode_append_handle(&e->off, &e->noff, 0) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((rc = enable(t, e, n, a->node, a->enable)) != CUDA_SUCCESS) {
        e->noff -= !off;
        return rc;
    }
    if (off)
        e->off[at] = e->off[--e->noff];
    else
        e->off[e->noff - 1] = a->node;
    r->ds_int_res_u.value = a->enable;
    return CUDA_SUCCESS;
}
