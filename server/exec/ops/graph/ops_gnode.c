/*
 * Graphs built node by node (cuGraphCreate, cuGraphAdd*Node, edges, clones and the calls
 * that read them).  The executor keeps each built graph's shape itself (its nodes, in
 * the order they were added, and each node's dependencies, as handles), answers every
 * question about it from there, and mirrors each change into the backend's graph, which
 * alone is instantiated and launched (ops_graph.c).  A node's parameters are checked in
 * ops_gdesc.c; new parameters for a node, and enabling it, are ops_gset.c's.
 */
#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"

#include <stdlib.h>
#include <string.h>

void ds__gnode_free_params(ds_node_params *p)
{
    if (p->kind == DS_NODE_KERNEL) {
        free(p->ds_node_params_u.kernel.params.params_val);
        free(p->ds_node_params_u.kernel.attrs.attrs_val);
    }
    if (p->kind == DS_NODE_COND)
        free(p->ds_node_params_u.cond.bodies.bodies_val);
    if (p->kind == DS_NODE_MEMOP)
        free(p->ds_node_params_u.memops.memops_val);
}

static void *dup_bytes(const void *src, size_t n)
{
    void *p = malloc(n > 0 ? n : 1);

    if (p != NULL && n > 0)
        memcpy(p, src, n);
    return p;
}

/* A deep copy of p into *out (whose old contents are not freed).  0 or DS_ENOMEM. */
int ds__gnode_copy_params(const ds_node_params *p, ds_node_params *out)
{
    const ds_kernel_node *k = &p->ds_node_params_u.kernel;
    ds_kernel_node *o = &out->ds_node_params_u.kernel;

    *out = *p;
    if (p->kind == DS_NODE_MEMOP) {
        const ds_memop *ops = p->ds_node_params_u.memops.memops_val;

        out->ds_node_params_u.memops.memops_val =
            dup_bytes(ops, p->ds_node_params_u.memops.memops_len * sizeof(*ops));
        if (out->ds_node_params_u.memops.memops_val != NULL)
            return 0;
        out->kind = DS_NODE_EMPTY;
        return DS_ENOMEM;
    }
    if (p->kind == DS_NODE_COND) {
        const ds_cond_node *c = &p->ds_node_params_u.cond;

        out->ds_node_params_u.cond.bodies.bodies_val =
            dup_bytes(c->bodies.bodies_val, c->bodies.bodies_len * sizeof(*c->bodies.bodies_val));
        if (out->ds_node_params_u.cond.bodies.bodies_val != NULL)
            return 0;
        out->kind = DS_NODE_EMPTY;
        return DS_ENOMEM;
    }
    if (p->kind != DS_NODE_KERNEL)
        return 0;
    o->params.params_val = dup_bytes(k->params.params_val, k->params.params_len);
    o->attrs.attrs_val = dup_bytes(k->attrs.attrs_val,
                                   k->attrs.attrs_len * sizeof(*k->attrs.attrs_val));
    if (o->params.params_val == NULL || o->attrs.attrs_val == NULL) {
        ds__gnode_free_params(out);
        out->kind = DS_NODE_EMPTY;
        return DS_ENOMEM;
    }
    return 0;
}

static void free_node(struct ds_vnode *n)
{
    ds__gnode_free_params(&n->params);
    free(n->deps);
    free(n);
}

/* Free node n and let go of its event, or its own copy of a child graph. */
static void drop_node(struct ds_tenant *t, struct ds_vnode *n)
{
    struct ds_vgraph *child;

    if (n->event != NULL)
        ds__ops_event_release(t, n->event);
    if (n->gmem != NULL)
        ds__ops_gmem_release(t, n->gmem);
    if (n->params.kind == DS_NODE_CHILD &&
        (child = ds_handles_remove(&t->h, n->params.ds_node_params_u.child, DS_H_GRAPH)) != NULL)
        ds__ops_graph_free(t, child);
    for (u_int i = 0; n->params.kind == DS_NODE_COND &&
                      i < n->params.ds_node_params_u.cond.bodies.bodies_len; i++) {
        child = ds_handles_remove(&t->h, n->params.ds_node_params_u.cond.bodies.bodies_val[i],
                                  DS_H_GRAPH);
        if (child != NULL)
            ds__ops_graph_free(t, child);
    }
    free_node(n);
}

/* Whether deps (n handles) are distinct nodes of graph `graph`; their backend nodes in
 * real. */
static int good_deps(struct ds_tenant *t, uint64_t graph, const uint64_t *deps, uint32_t n,
                     struct ds_bnode **real)
{
    for (uint32_t i = 0; i < n; i++) {
        struct ds_vnode *d = ds__gnode_of(t, deps[i], graph);

        if (d == NULL)
            return 0;
        for (uint32_t j = 0; j < i; j++)
            if (deps[j] == deps[i])
                return 0;
        real[i] = d->real;
    }
    return 1;
}

int ds__gnode_append_handle(uint64_t **v, uint32_t *n, uint64_t h)
{
    uint64_t *grown = realloc(*v, (*n + 1) * sizeof(**v));

    if (grown == NULL)
        return DS_ENOMEM;
    grown[(*n)++] = h;
    *v = grown;
    return 0;
}

/* Take h out of the n handles of v; 1 when it was there. */
static int drop_handle(uint64_t *v, uint32_t *n, uint64_t h)
{
    for (uint32_t i = 0; i < *n; i++) {
        if (v[i] == h) {
            memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof(*v));
            (*n)--;
            return 1;
        }
    }
    return 0;
}

/* Make node n of graph g, its backend node made, known by a handle in *out; on failure
 * n and its backend node are gone. */
static CUresult publish_node(struct ds_tenant *t, struct ds_vgraph *g, struct ds_vnode *n,
                             ds_handle *out)
{
    *out = ds_handles_add(&t->h, DS_H_NODE, n);
    if (*out != 0 && ds__gnode_append_handle(&g->nodes, &g->nnodes, *out) == 0)
        return CUDA_SUCCESS;
    if (*out != 0)
        ds_handles_remove(&t->h, *out, DS_H_NODE);
    t->ops->graph_node_destroy(t->be, g->real, n->real);
    drop_node(t, n);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* A node for p, its own copy of p and of deps made, not yet in any graph. */
static struct ds_vnode *new_node(uint64_t graph, const ds_node_params *p, const uint64_t *deps,
                                 uint32_t ndeps)
{
    struct ds_vnode *n = calloc(1, sizeof(*n));

    if (n == NULL)
        return NULL;
    n->graph = graph;
    if (ds__gnode_copy_params(p, &n->params) != 0 ||
        (ndeps > 0 && (n->deps = dup_bytes(deps, ndeps * sizeof(*deps))) == NULL)) {
        free_node(n);
        return NULL;
    }
    n->ndeps = ndeps;
    return n;
}

static CUresult add_node(struct ds_tenant *t, uint64_t gh, const ds_node_params *p,
                         const uint64_t *deps, uint32_t ndeps, ds_handle *out);

/* A copy of c, a captured part of a capture into a graph (ops_gcapture.c), for a clone
 * of that graph: the backend's graph of c cannot be copied node by node, so the copy is a
 * backend graph that runs a copy of it as its one child graph node, and holds c's graph
 * memory too.  Its handle in *copy. */
static CUresult copy_captured(struct ds_tenant *t, const struct ds_vgraph *c, uint64_t *copy)
{
    struct ds_gnode_desc d = { .kind = DS_GNODE_CHILD, .child = c->real };
    struct ds_vgraph *v = calloc(1, sizeof(*v));
    struct ds_bnode *n;
    CUresult rc;

    if (v == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *v = (struct ds_vgraph){ .ctx = c->ctx, .embedded = 1, .frozen = 1 };
    if ((rc = ds_error_to_cu(t->ops->graph_create(t->be, 0, (struct ds_bgraph **)&v->real))) !=
        CUDA_SUCCESS) {
        free(v);
        return rc;
    }
    rc = ds_error_to_cu(t->ops->graph_add_node(t->be, v->real, &d, NULL, 0, &n));
    if (rc == CUDA_SUCCESS && c->ngmems > 0 &&
        (v->gmems = malloc(c->ngmems * sizeof(*v->gmems))) == NULL)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    for (uint32_t i = 0; rc == CUDA_SUCCESS && i < c->ngmems; i++) {
        v->gmems[v->ngmems++] = c->gmems[i];
        c->gmems[i]->refs++;
    }
    if (rc == CUDA_SUCCESS && (*copy = ds_handles_add(&t->h, DS_H_GRAPH, v)) == 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc != CUDA_SUCCESS)
        ds__ops_graph_free(t, v);
    return rc;
}

/* A child graph node's own copy of graph h, as CUDA makes one: its handle in *copy. */
static CUresult copy_child(struct ds_tenant *t, uint64_t h, uint64_t *copy)
{
    struct ds_vgraph *g = ds_handles_get(&t->h, h, DS_H_GRAPH);
    ds_handle_res r;
    CUresult rc;

    if (g != NULL && !g->built && g->embedded)
        return copy_captured(t, g, copy);
    if ((rc = ds__gnode_child_of(t, h, &g)) != CUDA_SUCCESS ||
        (rc = ds__ops_graph_clone(t, &h, &r)) != CUDA_SUCCESS)
        return rc;
    *copy = r.ds_handle_res_u.handle;
    g = ds_handles_get(&t->h, *copy, DS_H_GRAPH);
    g->embedded = g->frozen = 1;
    return CUDA_SUCCESS;
}

/* Add a child graph node for p (whose graph is the tenant's) after deps to graph gh: the
 * node holds a copy of the graph, which goes with it. */
static CUresult add_child(struct ds_tenant *t, uint64_t gh, const ds_node_params *p,
                          const uint64_t *deps, uint32_t ndeps, ds_handle *out)
{
    ds_node_params own = *p;
    struct ds_vgraph *g, *copy;
    CUresult rc;

    if ((rc = ds__gnode_editable(t, gh, &g)) != CUDA_SUCCESS ||
        (rc = copy_child(t, p->ds_node_params_u.child, &own.ds_node_params_u.child)) !=
            CUDA_SUCCESS)
        return rc;
    rc = add_node(t, gh, &own, deps, ndeps, out);
    if (rc != CUDA_SUCCESS &&
        (copy = ds_handles_remove(&t->h, own.ds_node_params_u.child, DS_H_GRAPH)) != NULL)
        ds__ops_graph_free(t, copy);
    return rc;
}

/* Add node p, described as d, after deps to graph g (handle gh): backend node, handle. */
CUresult ds__gnode_add_described(struct ds_tenant *t, struct ds_vgraph *g, uint64_t gh,
                                 const ds_node_params *p, const struct ds_gnode_desc *d,
                                 const uint64_t *deps, uint32_t ndeps, ds_handle *out)
{
    struct ds_bnode **real;
    struct ds_vnode *n;
    CUresult rc;

    real = malloc((ndeps > 0 ? ndeps : 1) * sizeof(*real));
    n = new_node(gh, p, deps, ndeps);
    if (real == NULL || n == NULL)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else if (!good_deps(t, gh, deps, ndeps, real))
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        rc = ds_error_to_cu(t->ops->graph_add_node(t->be, g->real, d, real, ndeps, &n->real));
    free(real);
    if (rc == CUDA_SUCCESS && (n->event = ds__gnode_event_of(t, p)) != NULL)
        n->event->refs++;
    if (rc == CUDA_SUCCESS)
        return publish_node(t, g, n, out);
    if (n != NULL)
        free_node(n);
    return rc;
}

/* Add node p after deps to graph gh: checks, backend node, handle.  A child graph node's
 * graph in p is already the node's own copy.  A conditional body holds what CUDA allows
 * in one: kernel, memset, memcpy and empty nodes (child graphs and conditionals are added
 * by add_child and ds__gcond_add). */
static CUresult add_node(struct ds_tenant *t, uint64_t gh, const ds_node_params *p,
                         const uint64_t *deps, uint32_t ndeps, ds_handle *out)
{
    struct ds_gnode_scratch sc;
    struct ds_gnode_desc d;
    struct ds_vgraph *g;
    CUresult rc;

    if ((rc = ds__gnode_editable(t, gh, &g)) != CUDA_SUCCESS ||
        (rc = ds__ops_gnode_describe(t, p, &d, &sc)) != CUDA_SUCCESS)
        return rc;
    if (g->embedded && p->kind != DS_NODE_KERNEL && p->kind != DS_NODE_MEMSET &&
        p->kind != DS_NODE_MEMCPY && p->kind != DS_NODE_EMPTY) {
        ds_warn("a conditional node's body holds kernel, memset, memcpy, empty, child graph "
                "and conditional nodes only");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    /* A body runs on the device as often as its condition says: nothing in it can wait
     * for the tenant's process (CUDA allows only memory the device reaches there too). */
    if (g->embedded && ds__gnode_in_tenant(p)) {
        ds_warn("a conditional node's body cannot copy pageable host memory");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return ds__gnode_add_described(t, g, gh, p, &d, deps, ndeps, out);
}

/* Add memory allocation or free node p after deps to graph gh.  An allocation node's
 * memory is made now, and its address goes into the node's parameters; a free node
 * names graph memory.  Neither is a conditional body's: a body runs any number of times. */
static CUresult add_mem(struct ds_tenant *t, uint64_t gh, const ds_node_params *p,
                        const uint64_t *deps, uint32_t ndeps, ds_handle *out)
{
    struct ds_gnode_desc d = { .kind = DS_GNODE_EMPTY };
    ds_node_params own = *p;
    struct ds_gmem *m = NULL;
    struct ds_vgraph *g;
    CUresult rc;

    if ((rc = ds__gnode_editable(t, gh, &g)) != CUDA_SUCCESS)
        return rc;
    if (g->embedded) {
        ds_warn("a memory node in a conditional node's body is not served");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (p->kind == DS_NODE_MEM_FREE && ds__ops_gmem_of(t, p->ds_node_params_u.free_ptr) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->kind == DS_NODE_MEM_ALLOC) {
        if ((rc = ds__ops_gmem_new(t, p->ds_node_params_u.alloc.size, &m)) != CUDA_SUCCESS)
            return rc;
        own.ds_node_params_u.alloc.dptr = m->base;
    }
    rc = ds__gnode_add_described(t, g, gh, &own, &d, deps, ndeps, out);
    if (rc == CUDA_SUCCESS)
        ds__gnode_of(t, *out, gh)->gmem = m;
    else if (m != NULL)
        ds__ops_gmem_release(t, m);
    return rc;
}

CUresult ds__ops_graph_create(struct ds_tenant *t, const ds_graph_create_args *a,
                              ds_handle_res *r)
{
    struct ds_vgraph *g;
    CUresult rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (a->flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((g = calloc(1, sizeof(*g))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->ctx = a->ctx;
    g->built = 1;
    rc = ds_error_to_cu(t->ops->graph_create(t->be, a->flags, (struct ds_bgraph **)&g->real));
    if (rc != CUDA_SUCCESS) {
        free(g);
        return rc;
    }
    r->ds_handle_res_u.handle = ds_handles_add(&t->h, DS_H_GRAPH, g);
    if (r->ds_handle_res_u.handle != 0)
        return CUDA_SUCCESS;
    ds__ops_graph_free(t, g);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult ds__gnode_add(struct ds_tenant *t, uint64_t gh, const ds_node_params *p,
                       const uint64_t *deps, uint32_t ndeps, ds_handle *out)
{
    if (p->kind == DS_NODE_CHILD)
        return add_child(t, gh, p, deps, ndeps, out);
    if (p->kind == DS_NODE_MEM_ALLOC || p->kind == DS_NODE_MEM_FREE)
        return add_mem(t, gh, p, deps, ndeps, out);
    return add_node(t, gh, p, deps, ndeps, out);
}

/* Whether edge from -> to exists: from is among to's dependencies. */
static int has_edge(const struct ds_vnode *to, uint64_t from)
{
    for (uint32_t i = 0; i < to->ndeps; i++)
        if (to->deps[i] == from)
            return 1;
    return 0;
}

/* One edge of graph gh added or removed, in the backend and here. */
static CUresult edge(struct ds_tenant *t, struct ds_vgraph *g, uint64_t gh, uint64_t from,
                     uint64_t to, int remove)
{
    struct ds_vnode *f = ds__gnode_of(t, from, gh), *n = ds__gnode_of(t, to, gh);
    int rc;

    if (f == NULL || n == NULL || from == to || has_edge(n, from) != remove)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = t->ops->graph_edge(t->be, g->real, f->real, n->real, !remove)) != 0)
        return ds_error_to_cu(rc);
    if (remove) {
        drop_handle(n->deps, &n->ndeps, from);
        return CUDA_SUCCESS;
    }
    if (ds__gnode_append_handle(&n->deps, &n->ndeps, from) == 0)
        return CUDA_SUCCESS;
    t->ops->graph_edge(t->be, g->real, f->real, n->real, 0);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult ds__ops_graph_edges(struct ds_tenant *t, const ds_graph_edges_args *a, ds_void_res *r)
{
    struct ds_vgraph *g;
    CUresult rc;

    (void)r;
    if ((rc = ds__gnode_editable(t, a->graph, &g)) != CUDA_SUCCESS)
        return rc;
    if (a->from.from_len != a->to.to_len || (a->remove != 0 && a->remove != 1))
        return CUDA_ERROR_INVALID_VALUE;
    for (u_int i = 0; i < a->from.from_len && rc == CUDA_SUCCESS; i++)
        rc = edge(t, g, a->graph, a->from.from_val[i], a->to.to_val[i], a->remove);
    return rc;
}

CUresult ds__ops_graph_node_destroy(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_vnode *n = ds__gnode_of(t, *h, 0);
    struct ds_vgraph *g;
    CUresult rc;

    (void)r;
    if (n == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = ds__gnode_editable(t, n->graph, &g)) != CUDA_SUCCESS)
        return rc;
    ds_handles_remove(&t->h, *h, DS_H_NODE);
    drop_handle(g->nodes, &g->nnodes, *h);
    for (uint32_t i = 0; i < g->nnodes; i++) {
        struct ds_vnode *v = ds_handles_get(&t->h, g->nodes[i], DS_H_NODE);

        drop_handle(v->deps, &v->ndeps, *h);
    }
    t->ops->graph_node_destroy(t->be, g->real, n->real);
    drop_node(t, n);
    return CUDA_SUCCESS;
}

void ds__ops_graph_free(struct ds_tenant *t, struct ds_vgraph *g)
{
    for (uint32_t i = 0; i < g->nnodes; i++)
        drop_node(t, ds_handles_remove(&t->h, g->nodes[i], DS_H_NODE));
    free(g->nodes);
    free(g->conds);
    for (uint32_t i = 0; i < g->ngmems; i++)
        ds__ops_gmem_release(t, g->gmems[i]);
    free(g->gmems);
    free(g->hcopies);
    t->ops->graph_destroy(t->be, g->real);
    free(g);
}

/* The handles a query reports, into a list the reply owns. */
static CUresult put(ds_node_list *l, uint64_t node, uint64_t to, int with_to)
{
    if (l->nodes.nodes_len >= DS_GRAPH_NODES_MAX ||
        ds__gnode_append_handle(&l->nodes.nodes_val, &l->nodes.nodes_len, node) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (with_to && ds__gnode_append_handle(&l->to.to_val, &l->to.to_len, to) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

/* NODES, ROOTS or EDGES of graph g. */
static CUresult list_graph(struct ds_tenant *t, const struct ds_vgraph *g, int what,
                           ds_node_list *l)
{
    CUresult rc = CUDA_SUCCESS;

    for (uint32_t i = 0; i < g->nnodes && rc == CUDA_SUCCESS; i++) {
        struct ds_vnode *n = ds_handles_get(&t->h, g->nodes[i], DS_H_NODE);

        if (what == DS_GQ_NODES || (what == DS_GQ_ROOTS && n->ndeps == 0))
            rc = put(l, g->nodes[i], 0, 0);
        for (uint32_t j = 0; what == DS_GQ_EDGES && j < n->ndeps && rc == CUDA_SUCCESS; j++)
            rc = put(l, n->deps[j], g->nodes[i], 1);
    }
    return rc;
}

/* DEPS or DEPENDENTS of node h. */
static CUresult list_node(struct ds_tenant *t, uint64_t h, int what, ds_node_list *l)
{
    struct ds_vnode *n = ds__gnode_of(t, h, 0);
    struct ds_vgraph *g;
    CUresult rc = CUDA_SUCCESS;

    if (n == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (what == DS_GQ_DEPS) {
        for (uint32_t i = 0; i < n->ndeps && rc == CUDA_SUCCESS; i++)
            rc = put(l, n->deps[i], 0, 0);
        return rc;
    }
    g = ds_handles_get(&t->h, n->graph, DS_H_GRAPH);
    for (uint32_t i = 0; i < g->nnodes && rc == CUDA_SUCCESS; i++)
        if (has_edge(ds_handles_get(&t->h, g->nodes[i], DS_H_NODE), h))
            rc = put(l, g->nodes[i], 0, 0);
    return rc;
}

CUresult ds__ops_graph_query(struct ds_tenant *t, const ds_graph_query_args *a,
                             ds_graph_query_res *r)
{
    ds_node_list *l = &r->ds_graph_query_res_u.list;
    struct ds_vgraph *g;
    CUresult rc;

    memset(l, 0, sizeof(*l));
    switch (a->what) {
    case DS_GQ_NODES:
    case DS_GQ_ROOTS:
    case DS_GQ_EDGES:
        if ((rc = ds__gnode_built(t, a->of, &g)) != CUDA_SUCCESS)
            return rc;
        return list_graph(t, g, a->what, l);
    case DS_GQ_DEPS:
    case DS_GQ_DEPENDENTS:
        return list_node(t, a->of, a->what, l);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult ds__ops_graph_node_info(struct ds_tenant *t, const ds_handle *h, ds_node_info_res *r)
{
    struct ds_vnode *n = ds__gnode_of(t, *h, 0);

    if (n == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    r->ds_node_info_res_u.info.graph = n->graph;
    if (ds__gnode_copy_params(&n->params, &r->ds_node_info_res_u.info.params) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

/* Clone's second pass: the edges of every node of g, between the copies in c (whose
 * nodes are g's, in the same order). */
static CUresult clone_edges(struct ds_tenant *t, const struct ds_vgraph *g,
                            struct ds_vgraph *c, uint64_t ch)
{
    CUresult rc = CUDA_SUCCESS;

    for (uint32_t i = 0; i < g->nnodes && rc == CUDA_SUCCESS; i++) {
        struct ds_vnode *n = ds_handles_get(&t->h, g->nodes[i], DS_H_NODE);

        for (uint32_t j = 0; j < n->ndeps && rc == CUDA_SUCCESS; j++) {
            uint32_t k = 0;

            while (g->nodes[k] != n->deps[j])
                k++;
            rc = edge(t, c, ch, c->nodes[k], c->nodes[i], 0);
        }
    }
    return rc;
}

/* Clone node c of node n (handle h): the copy of a captured copy of pageable memory
 * (ops_ghcopy.c) holds its staging memory too. */
static void keep_origin(struct ds_vnode *c, uint64_t h, const struct ds_vnode *n)
{
    c->origin = h;
    if (n->params.kind == DS_NODE_MEMCPY && n->gmem != NULL) {
        c->gmem = n->gmem;
        c->gmem->refs++;
    }
}

/* A copy of a built graph: its nodes first, then its edges (a node may depend on one
 * added after it). */
CUresult ds__ops_graph_clone(struct ds_tenant *t, const ds_handle *h, ds_handle_res *r)
{
    ds_graph_create_args ca = { 0 };
    struct ds_vgraph *g, *c;
    ds_handle ch, node;
    CUresult rc;

    if ((rc = ds__gnode_built(t, *h, &g)) != CUDA_SUCCESS)
        return rc;
    ca.ctx = g->ctx;
    if ((rc = ds__ops_graph_create(t, &ca, r)) != CUDA_SUCCESS)
        return rc;
    ch = r->ds_handle_res_u.handle;
    c = ds_handles_get(&t->h, ch, DS_H_GRAPH);
    for (uint32_t i = 0; i < g->nnodes && rc == CUDA_SUCCESS; i++) {
        struct ds_vnode *n = ds_handles_get(&t->h, g->nodes[i], DS_H_NODE);

        if (n->params.kind == DS_NODE_CHILD)
            rc = add_child(t, ch, &n->params, NULL, 0, &node);
        else
            rc = add_node(t, ch, &n->params, NULL, 0, &node);
        if (rc == CUDA_SUCCESS)
            keep_origin(ds_handles_get(&t->h, node, DS_H_NODE), g->nodes[i], n);
    }
    if (rc == CUDA_SUCCESS)
        rc = clone_edges(t, g, c, ch);
    if (rc != CUDA_SUCCESS)
        ds__ops_graph_free(t, ds_handles_remove(&t->h, ch, DS_H_GRAPH));
    return rc;
}

CUresult ds__ops_gexec_pin(struct ds_vgraph *e, struct ds_vevent *v)
{
    struct ds_vevent **grown = realloc(e->events, (e->nevents + 1) * sizeof(*grown));

    if (grown == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    grown[e->nevents++] = v;
    e->events = grown;
    v->refs++;
    return CUDA_SUCCESS;
}

static CUresult pin_gmem(struct ds_vgraph *e, struct ds_gmem *m)
{
    struct ds_gmem **grown = realloc(e->gmems, (e->ngmems + 1) * sizeof(*grown));

    if (grown == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    grown[e->ngmems++] = m;
    e->gmems = grown;
    m->refs++;
    return CUDA_SUCCESS;
}

/* Child graphs included: the backend's copies use the same events.  Graph memory is
 * pinned with them. */
CUresult ds__ops_gexec_pin_events(struct ds_tenant *t, const struct ds_vgraph *g,
                                  struct ds_vgraph *e)
{
    CUresult rc = CUDA_SUCCESS;

    for (uint32_t i = 0; i < g->ngmems && rc == CUDA_SUCCESS; i++)
        rc = pin_gmem(e, g->gmems[i]);
    for (uint32_t i = 0; g->built && i < g->nnodes && rc == CUDA_SUCCESS; i++) {
        struct ds_vnode *n = ds_handles_get(&t->h, g->nodes[i], DS_H_NODE);

        if (n->event != NULL)
            rc = ds__ops_gexec_pin(e, n->event);
        if (rc == CUDA_SUCCESS && n->gmem != NULL)
            rc = pin_gmem(e, n->gmem);
        if (rc == CUDA_SUCCESS && n->params.kind == DS_NODE_CHILD)
            rc = ds__ops_gexec_pin_events(
                t, ds_handles_get(&t->h, n->params.ds_node_params_u.child, DS_H_GRAPH), e);
        for (u_int j = 0; n->params.kind == DS_NODE_COND && rc == CUDA_SUCCESS &&
                          j < n->params.ds_node_params_u.cond.bodies.bodies_len; j++)
            rc = ds__ops_gexec_pin_events(
                t,
                ds_handles_get(&t->h, n->params.ds_node_params_u.cond.bodies.bodies_val[j],
                               DS_H_GRAPH),
                e);
    }
    return rc;
}

CUresult ds__ops_graph_find_in_clone(struct ds_tenant *t, const ds_find_in_clone_args *a,
                                     ds_handle_res *r)
{
    struct ds_vgraph *c;
    CUresult rc;

    if ((rc = ds__gnode_built(t, a->clone, &c)) != CUDA_SUCCESS)
        return rc;
    if (ds__gnode_of(t, a->node, 0) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        struct ds_vnode *n = ds_handles_get(&t->h, c->nodes[i], DS_H_NODE);

        if (n->origin == a->node) {
            r->ds_handle_res_u.handle = c->nodes[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult ds__ops_gnode_add_captured(struct ds_tenant *t, uint64_t gh, uint64_t child,
                                    const uint64_t *deps, uint32_t ndeps, ds_handle *out)
{
    ds_node_params p = { .kind = DS_NODE_CHILD };
    struct ds_gnode_desc d = { .kind = DS_GNODE_CHILD };
    struct ds_vgraph *g, *c = ds_handles_get(&t->h, child, DS_H_GRAPH);
    CUresult rc;

    if ((rc = ds__gnode_editable(t, gh, &g)) != CUDA_SUCCESS)
        return rc;
    p.ds_node_params_u.child = child;
    d.child = c->real;
    return ds__gnode_add_described(t, g, gh, &p, &d, deps, ndeps, out);
}
