/*
 * A graph node's description, kind by kind: the parameters of a kernel, fill, copy,
 * event or child graph node the tenant gives are checked against its own objects and
 * made into the backend's description (struct ds_gnode_desc); and the lookups of built
 * graphs and their nodes that every graph call starts with.  Building and changing
 * graphs from these is ops_gnode.c's and ops_gset.c's.
 */
#include "ops.h"

#include "ds_log.h"

#include <string.h>

/* A built graph of the tenant's.  A captured graph's nodes are the backend's own and
 * have no handles, so it cannot be edited or asked about node by node. */
CUresult ds__gnode_built(struct ds_tenant *t, uint64_t h, struct ds_vgraph **out)
{
    *out = ds_handles_get(&t->h, h, DS_H_GRAPH);
    if (*out == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!(*out)->built) {
        ds_warn("a captured graph cannot be edited or listed node by node");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

/* A built graph the tenant may change.  A child graph node's graph is not one: the
 * backend's node holds its own copy of it, made when the node was added, which edits
 * here would not reach. */
CUresult ds__gnode_editable(struct ds_tenant *t, uint64_t h, struct ds_vgraph **out)
{
    CUresult rc = ds__gnode_built(t, h, out);

    if (rc == CUDA_SUCCESS && (*out)->frozen) {
        ds_warn("a child graph node's graph cannot be edited; set the node's graph instead");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return rc;
}

/* Node h when it belongs to graph `graph` (any graph when 0). */
struct ds_vnode *ds__gnode_of(struct ds_tenant *t, uint64_t h, uint64_t graph)
{
    struct ds_vnode *n = ds_handles_get(&t->h, h, DS_H_NODE);

    return n != NULL && (graph == 0 || n->graph == graph) ? n : NULL;
}

static CUresult check_kernel(struct ds_tenant *t, const ds_kernel_node *k,
                             struct ds_gnode_desc *d, CUlaunchAttribute *attrs)
{
    struct ds_vfunc *f = ds_handles_get(&t->h, k->fn, DS_H_FUNC);
    CUresult rc;

    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ds__ops_bad_shape(t, k->grid, k->block) || k->params.params_len != f->layout.bytes)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds__ops_launch_attrs(t, k->attrs.attrs_val, k->attrs.attrs_len, attrs);
    if (rc != CUDA_SUCCESS)
        return rc;
    d->f = f->real;
    memcpy(d->l.grid, k->grid, sizeof(d->l.grid));
    memcpy(d->l.block, k->block, sizeof(d->l.block));
    d->l.shared_mem = k->shared_mem;
    d->l.params = k->params.params_val;
    d->l.param_bytes = k->params.params_len;
    d->l.attrs = attrs;
    d->l.nattrs = k->attrs.attrs_len;
    return CUDA_SUCCESS;
}

/* A fill is checked as cuMemsetD2D*Async's are, except that an empty one is refused,
 * as the driver refuses an empty memset node. */
static CUresult check_fill(struct ds_tenant *t, const ds_memset_node *m, struct ds_gnode_desc *d)
{
    uint64_t extent;

    if (m->elem_size != 1 && m->elem_size != 2 && m->elem_size != 4)
        return CUDA_ERROR_INVALID_VALUE;
    if (m->width == 0 || m->height == 0 || m->dst % m->elem_size != 0 ||
        (m->height > 1 && m->pitch % m->elem_size != 0))
        return CUDA_ERROR_INVALID_VALUE;
    extent = ds__ops_memset_extent(m->width, m->elem_size, m->pitch, m->height);
    if (extent == 0 || ds__tenant_range(t, m->dst, extent) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *d = (struct ds_gnode_desc){ .kind = DS_GNODE_MEMSET, .dst = m->dst, .pitch = m->pitch,
                                 .value = m->value, .elem_size = m->elem_size,
                                 .width = m->width, .height = m->height };
    return CUDA_SUCCESS;
}

/* A side of a copy the tenant does itself is an address in its own process, which only
 * its own process reads or writes: nothing to check here. */
static CUresult check_copy(struct ds_tenant *t, const ds_memcpy_node *c, struct ds_gnode_desc *d)
{
    if (c->size == 0 || (c->host & ~(unsigned)(DS_COPY_SRC_HOST | DS_COPY_DST_HOST)) != 0 ||
        (!(c->host & DS_COPY_DST_HOST) && ds__tenant_range(t, c->dst, c->size) != 0) ||
        (!(c->host & DS_COPY_SRC_HOST) && ds__tenant_range(t, c->src, c->size) != 0))
        return CUDA_ERROR_INVALID_VALUE;
    if (c->host != 0)
        *d = (struct ds_gnode_desc){ .kind = DS_GNODE_EMPTY };
    else
        *d = (struct ds_gnode_desc){ .kind = DS_GNODE_MEMCPY, .dst = c->dst, .src = c->src,
                                     .n = c->size };
    return CUDA_SUCCESS;
}

int ds__gnode_in_tenant(const ds_node_params *p)
{
    return p->kind == DS_NODE_HOST ||
           (p->kind == DS_NODE_MEMCPY && p->ds_node_params_u.copy.host != 0);
}

/* The event that node parameters p record or wait on: NULL when p is no event node's or
 * names no event of the tenant's. */
struct ds_vevent *ds__gnode_event_of(struct ds_tenant *t, const ds_node_params *p)
{
    if (p->kind == DS_NODE_EVENT_RECORD)
        return ds_handles_get(&t->h, p->ds_node_params_u.record, DS_H_EVENT);
    if (p->kind == DS_NODE_EVENT_WAIT)
        return ds_handles_get(&t->h, p->ds_node_params_u.wait, DS_H_EVENT);
    return NULL;
}

/* Whether built graph g has a node that runs in the tenant's process, or a child graph
 * that has one. */
static int has_host(struct ds_tenant *t, const struct ds_vgraph *g)
{
    for (uint32_t i = 0; i < g->nnodes; i++) {
        struct ds_vnode *n = ds_handles_get(&t->h, g->nodes[i], DS_H_NODE);

        if (ds__gnode_in_tenant(&n->params))
            return 1;
        if (n->params.kind == DS_NODE_CHILD &&
            has_host(t, ds_handles_get(&t->h, n->params.ds_node_params_u.child, DS_H_GRAPH)))
            return 1;
    }
    return 0;
}

/* The graph a child graph node copies: a built graph without nodes that run in the
 * tenant's process, which a graph replayed as one piece by the backend could not reach,
 * or a part of a capture into a graph (ops_gcapture.c), which is the backend's alone. */
CUresult ds__gnode_child_of(struct ds_tenant *t, uint64_t h, struct ds_vgraph **out)
{
    CUresult rc;

    *out = ds_handles_get(&t->h, h, DS_H_GRAPH);
    if (*out != NULL && !(*out)->built && (*out)->embedded)
        return CUDA_SUCCESS;
    rc = ds__gnode_built(t, h, out);

    if (rc == CUDA_SUCCESS && has_host(t, *out)) {
        ds_warn("a child graph with host nodes, or copies of pageable host memory, is not "
                "served");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return rc;
}

CUresult ds__ops_gnode_describe(struct ds_tenant *t, const ds_node_params *p,
                                struct ds_gnode_desc *d, struct ds_gnode_scratch *sc)
{
    struct ds_vgraph *child;
    struct ds_vevent *ev;
    CUresult rc;

    memset(d, 0, sizeof(*d));
    switch (p->kind) {
    case DS_NODE_EMPTY:
        d->kind = DS_GNODE_EMPTY;
        return CUDA_SUCCESS;
    case DS_NODE_HOST:
        d->kind = DS_GNODE_EMPTY;
        return p->ds_node_params_u.host.fn != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case DS_NODE_CHILD:
        d->kind = DS_GNODE_CHILD;
        if ((rc = ds__gnode_child_of(t, p->ds_node_params_u.child, &child)) != CUDA_SUCCESS)
            return rc;
        d->child = child->real;
        return CUDA_SUCCESS;
    case DS_NODE_COND:
    case DS_NODE_MEM_ALLOC:
    case DS_NODE_MEM_FREE:
        /* Only added as themselves (ds__gcond_add, add_mem): a conditional node's handle
         * and bodies are its graph's, an allocation node's memory is its own.  Stages
         * describe memory nodes themselves (ops_gstage.c). */
        ds_warn("conditional and memory nodes cannot be copied (clone, child graph), and "
                "conditional nodes cannot run in stages (with host nodes)");
        return CUDA_ERROR_NOT_SUPPORTED;
    case DS_NODE_KERNEL:
        d->kind = DS_GNODE_KERNEL;
        return check_kernel(t, &p->ds_node_params_u.kernel, d, sc->attrs);
    case DS_NODE_MEMSET:
        return check_fill(t, &p->ds_node_params_u.fill, d);
    case DS_NODE_MEMCPY:
        return check_copy(t, &p->ds_node_params_u.copy, d);
    case DS_NODE_MEMOP:
        return ds__ops_memop_node(t, p->ds_node_params_u.memops.memops_val,
                                  p->ds_node_params_u.memops.memops_len, d, sc->memops);
    case DS_NODE_EVENT_RECORD:
    case DS_NODE_EVENT_WAIT:
        d->kind = p->kind == DS_NODE_EVENT_RECORD ? DS_GNODE_EVENT_RECORD : DS_GNODE_EVENT_WAIT;
        if ((ev = ds__gnode_event_of(t, p)) == NULL)
            return CUDA_ERROR_INVALID_HANDLE;
        d->event = ev->real;
        return CUDA_SUCCESS;
    default:
        ds_warn("graph node kind %d is not served", (int)p->kind);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}
