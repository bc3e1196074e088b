/*
 * Instantiated graphs with host nodes.  A host function runs in the tenant's process,
 * so the executor cannot replay such a graph as one piece: it cuts it into stages that
 * keep every edge.  A copy node whose host side is memory only the tenant reaches
 * (pageable memory) is done by the tenant too, so it is a host node here.  A node's
 * level is the most host nodes on any path into it (not counting itself); stage L holds
 * the device nodes of level L, as a graph of their own with the edges between them,
 * followed by the host nodes of level L, which depend on nothing in their own stage's
 * tail.  The client launches the stages in order on one stream and, after each, waits
 * for the stream and runs that stage's host functions and copies (client/api/graph.c), as
 * cuLaunchHostFunc does; edges into a later stage hold because the stream runs the
 * stages in order.
 */
#include "ops.h"

#include "ds_error.h"

#include <stdlib.h>
#include <string.h>

static struct ds_vnode *vnode(struct ds_tenant *t, uint64_t h)
{
    return ds_handles_get(&t->h, h, DS_H_NODE);
}

int ds__ops_gstage_needed(struct ds_tenant *t, const struct ds_vgraph *g)
{
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (ds__gnode_in_tenant(&vnode(t, g->nodes[i])->params))
            return 1;
    return 0;
}

/* The nodes of g in an order that keeps every edge (Kahn's), into order[]; each node's
 * mark is its index in g->nodes.  DS_EINVAL on a cycle, DS_ENOMEM. */
static int topo_order(struct ds_tenant *t, const struct ds_vgraph *g, uint32_t *order)
{
    uint32_t n = g->nnodes, head = 0, tail = 0;
    uint32_t *waiting = calloc(n ? n : 1, sizeof(*waiting));

    if (waiting == NULL)
        return DS_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        vnode(t, g->nodes[i])->mark = i;
    for (uint32_t i = 0; i < n; i++)
        if ((waiting[i] = vnode(t, g->nodes[i])->ndeps) == 0)
            order[tail++] = i;
    /* The dependents of a placed node are found by a scan: graphs are small, and this
     * runs once per instantiation. */
    while (head < tail) {
        uint64_t done = g->nodes[order[head++]];

        for (uint32_t i = 0; i < n; i++) {
            struct ds_vnode *v = vnode(t, g->nodes[i]);

            for (uint32_t j = 0; j < v->ndeps; j++)
                if (v->deps[j] == done && --waiting[i] == 0)
                    order[tail++] = i;
        }
    }
    free(waiting);
    return tail == n ? 0 : DS_EINVAL;
}

/* Each node's level (see above), by index, from a topological order. */
static uint32_t levels(struct ds_tenant *t, const struct ds_vgraph *g, const uint32_t *order,
                       uint32_t *level)
{
    uint32_t top = 0;

    for (uint32_t k = 0; k < g->nnodes; k++) {
        struct ds_vnode *v = vnode(t, g->nodes[order[k]]);
        uint32_t l = 0;

        for (uint32_t j = 0; j < v->ndeps; j++) {
            struct ds_vnode *d = vnode(t, v->deps[j]);
            uint32_t via = level[d->mark] + (uint32_t)ds__gnode_in_tenant(&d->params);

            l = via > l ? via : l;
        }
        level[order[k]] = l;
        top = l > top ? l : top;
    }
    return top;
}

static void *grow(void *v, uint32_t n, size_t size)
{
    return realloc(v, (n + 1) * size);
}

/* Host node v (handle h), or copy node of the tenant's memory, joins stage s's calls. */
static void set_one(ds_stage_call *c, const ds_node_params *p)
{
    c->kind = p->kind;
    if (p->kind == DS_NODE_HOST)
        c->ds_stage_call_u.host = p->ds_node_params_u.host;
    else
        c->ds_stage_call_u.copy = p->ds_node_params_u.copy;
}

static CUresult add_call(struct ds_gstage *s, uint64_t h, const struct ds_vnode *v)
{
    ds_stage_call *calls = grow(s->calls, s->ncalls, sizeof(*calls));
    uint64_t *nodes;

    if (calls == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->calls = calls;
    if ((nodes = grow(s->call_nodes, s->ncalls, sizeof(*nodes))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->call_nodes = nodes;
    set_one(&calls[s->ncalls], &v->params);
    nodes[s->ncalls++] = h;
    return CUDA_SUCCESS;
}

/* A memory node's memory is made when the node is added and kept until the node and the
 * instances of its graph are gone (ops_gmem.c), so in a stage the node only orders, as
 * an empty node does. */
static CUresult describe(struct ds_tenant *t, const ds_node_params *p, struct ds_gnode_desc *d,
                         struct ds_gnode_scratch *sc)
{
    if (p->kind != DS_NODE_MEM_ALLOC && p->kind != DS_NODE_MEM_FREE)
        return ds__ops_gnode_describe(t, p, d, sc);
    *d = (struct ds_gnode_desc){ .kind = DS_GNODE_EMPTY };
    return CUDA_SUCCESS;
}

/* Device node v (handle h, index i) joins stage s (level l), after its dependencies of
 * the same stage; real[] holds each placed node's backend node by index. */
static CUresult add_device(struct ds_tenant *t, struct ds_gstage *s, uint64_t h,
                           const struct ds_vnode *v, const uint32_t *level, uint32_t l,
                           struct ds_bnode **real, uint32_t i)
{
    struct ds_gnode_scratch sc;
    struct ds_bnode **deps = malloc((v->ndeps ? v->ndeps : 1) * sizeof(*deps));
    struct ds_gnode_desc d;
    uint32_t nd = 0;
    CUresult rc;

    if (deps == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (uint32_t j = 0; j < v->ndeps; j++) {
        struct ds_vnode *dv = vnode(t, v->deps[j]);

        if (level[dv->mark] == l && !ds__gnode_in_tenant(&dv->params))
            deps[nd++] = real[dv->mark];
    }
    rc = describe(t, &v->params, &d, &sc);
    if (rc == CUDA_SUCCESS && s->g == NULL)
        rc = ds_error_to_cu(t->ops->graph_create(t->be, 0, &s->g));
    if (rc == CUDA_SUCCESS)
        rc = ds_error_to_cu(t->ops->graph_add_node(t->be, s->g, &d, deps, nd, &real[i]));
    free(deps);
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((s->nodes = grow(s->nodes, s->n, sizeof(*s->nodes))) == NULL ||
        (s->real = grow(s->real, s->n, sizeof(*s->real))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->nodes[s->n] = h;
    s->real[s->n++] = real[i];
    return CUDA_SUCCESS;
}

/* Every stage's nodes, in topological order, then each stage instantiated. */
static CUresult fill_stages(struct ds_tenant *t, const struct ds_vgraph *g, uint64_t flags,
                            struct ds_vgraph *e, const uint32_t *order, const uint32_t *level)
{
    struct ds_bnode **real = calloc(g->nnodes ? g->nnodes : 1, sizeof(*real));
    CUresult rc = real == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;

    for (uint32_t k = 0; k < g->nnodes && rc == CUDA_SUCCESS; k++) {
        uint32_t i = order[k];
        struct ds_vnode *v = vnode(t, g->nodes[i]);
        struct ds_gstage *s = &e->stages[level[i]];

        if (ds__gnode_in_tenant(&v->params))
            rc = add_call(s, g->nodes[i], v);
        else
            rc = add_device(t, s, g->nodes[i], v, level, level[i], real, i);
    }
    free(real);
    for (uint32_t l = 0; l < e->nstages && rc == CUDA_SUCCESS; l++)
        if (e->stages[l].g != NULL)
            rc = ds_error_to_cu(
                t->ops->graph_instantiate(t->be, e->stages[l].g, flags, &e->stages[l].e));
    return rc;
}

CUresult ds__ops_gstage_make(struct ds_tenant *t, const struct ds_vgraph *g, uint64_t flags,
                             struct ds_vgraph *e)
{
    uint32_t *order = malloc((g->nnodes ? g->nnodes : 1) * sizeof(*order));
    uint32_t *level = calloc(g->nnodes ? g->nnodes : 1, sizeof(*level));
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    int err;

    if (order != NULL && level != NULL) {
        if ((err = topo_order(t, g, order)) != 0) {
            rc = err == DS_EINVAL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            e->nstages = levels(t, g, order, level) + 1;
            e->stages = calloc(e->nstages, sizeof(*e->stages));
            rc = e->stages == NULL ? CUDA_ERROR_OUT_OF_MEMORY
                                   : fill_stages(t, g, flags, e, order, level);
        }
    }
    if (e->stages == NULL)
        e->nstages = 0;
    free(order);
    free(level);
    return rc;
}

/* A host node's new function, or a tenant's copy's new sides, in e: the node is in the
 * calls of exactly one stage (a copy that is not, is a device copy, which cannot become
 * the tenant's). */
static CUresult set_call(struct ds_vgraph *e, uint64_t n, const ds_node_params *p)
{
    for (uint32_t l = 0; l < e->nstages; l++) {
        for (uint32_t i = 0; i < e->stages[l].ncalls; i++) {
            if (e->stages[l].call_nodes[i] == n) {
                set_one(&e->stages[l].calls[i], p);
                return CUDA_SUCCESS;
            }
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

struct ds_gstage *ds__ops_gstage_find(struct ds_vgraph *e, uint64_t n, uint32_t *i)
{
    for (uint32_t l = 0; l < e->nstages; l++)
        for (*i = 0; *i < e->stages[l].n; (*i)++)
            if (e->stages[l].nodes[*i] == n)
                return &e->stages[l];
    return NULL;
}

CUresult ds__ops_gstage_set(struct ds_tenant *t, struct ds_vgraph *e, uint64_t n,
                            const ds_node_params *p, const struct ds_gnode_desc *d)
{
    struct ds_gstage *s;
    uint32_t i;

    if (ds__gnode_in_tenant(p))
        return set_call(e, n, p);
    if ((s = ds__ops_gstage_find(e, n, &i)) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return ds_error_to_cu(t->ops->graph_node_set(t->be, s->g, s->e, s->real[i], d));
}

void ds__ops_gstage_free(struct ds_tenant *t, struct ds_vgraph *e)
{
    for (uint32_t l = 0; l < e->nstages; l++) {
        struct ds_gstage *s = &e->stages[l];

        if (s->e != NULL)
            t->ops->graph_exec_destroy(t->be, s->e);
        if (s->g != NULL)
            t->ops->graph_destroy(t->be, s->g);
        free(s->nodes);
        free(s->real);
        free(s->calls);
        free(s->call_nodes);
    }
    free(e->stages);
    e->stages = NULL;
    e->nstages = 0;
}

/* Whether node n is disabled in e (cuGraphNodeSetEnabled): only copy nodes among the
 * calls can be. */
static int disabled(const struct ds_vgraph *e, uint64_t n)
{
    for (uint32_t i = 0; i < e->noff; i++)
        if (e->off[i] == n)
            return 1;
    return 0;
}

CUresult ds__ops_graph_launch_stage(struct ds_tenant *t, const ds_stage_args *a,
                                    ds_stage_res *r)
{
    struct ds_vgraph *e = ds_handles_get(&t->h, a->exec, DS_H_GEXEC);
    ds_stage_calls *out = &r->ds_stage_res_u.stage;
    struct ds_bstream *s;
    struct ds_gstage *st;
    int rc;

    memset(out, 0, sizeof(*out));
    if (e == NULL || ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->stage >= e->nstages)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__tenant_capturing(t, a->stream))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    st = &e->stages[a->stage];
    if (st->e != NULL) {
        ds__tenant_kernel_boundary(t, s);
        if ((rc = t->ops->graph_launch(t->be, st->e, s)) != 0)
            return ds_error_to_cu(rc);
        ds__tenant_launched(t, s, 0);
    }
    if (st->ncalls == 0)
        return CUDA_SUCCESS;
    if ((out->calls.calls_val = malloc(st->ncalls * sizeof(*st->calls))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < st->ncalls; i++)
        if (!disabled(e, st->call_nodes[i]))
            out->calls.calls_val[out->calls.calls_len++] = st->calls[i];
    return CUDA_SUCCESS;
}
