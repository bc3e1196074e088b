/*
 * Conditional graph nodes (cuGraphConditionalHandleCreate, and cuGraphAddNode of a
 * CU_GRAPH_NODE_TYPE_CONDITIONAL node): the handles a graph's kernels set, and nodes whose
 * body graphs the backend makes and the tenant fills node by node (ops_gnode.c).
 */
#include "ops.h"

#include "ds_error.h"

#include <stdlib.h>

/* The backend's handle of graph g that the tenant knows as `value`, or NULL. */
static struct ds_bcond *cond_of(const struct ds_vgraph *g, uint64_t value)
{
    for (uint32_t i = 0; i < g->nconds; i++)
        if (g->conds[i].value == value)
            return g->conds[i].real;
    return NULL;
}

/* Whether conditional node c has a type and a number of bodies CUDA allows. */
static int good_cond(const ds_cond_node *c)
{
    switch (c->type) {
    case CU_GRAPH_COND_TYPE_IF:
        return c->size == 1 || c->size == 2;
    case CU_GRAPH_COND_TYPE_WHILE:
        return c->size == 1;
    case CU_GRAPH_COND_TYPE_SWITCH:
        return c->size >= 1 && c->size <= DS_COND_BODIES_MAX;
    default:
        return 0;
    }
}

/* Body graph b of conditional node n (handle nh): a built graph of the node's, which the
 * tenant fills; its handle joins the node's parameters. */
static CUresult adopt_body(struct ds_tenant *t, struct ds_vnode *n, uint64_t ctx,
                           struct ds_bgraph *b)
{
    ds_cond_node *c = &n->params.ds_node_params_u.cond;
    struct ds_vgraph *g = calloc(1, sizeof(*g));
    uint64_t h;

    if (g == NULL) {
        t->ops->graph_destroy(t->be, b);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *g = (struct ds_vgraph){ .ctx = ctx, .real = b, .built = 1, .embedded = 1 };
    if ((h = ds_handles_add(&t->h, DS_H_GRAPH, g)) == 0 ||
        ds__gnode_append_handle(&c->bodies.bodies_val, &c->bodies.bodies_len, h) != 0) {
        if (h != 0)
            ds_handles_remove(&t->h, h, DS_H_GRAPH);
        ds__ops_graph_free(t, g);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

/* Add conditional node p after deps to graph gh; its body graphs get handles, which the
 * tenant reads back with the node's parameters. */
CUresult ds__gcond_add(struct ds_tenant *t, uint64_t gh, const ds_node_params *p,
                       const uint64_t *deps, uint32_t ndeps, ds_handle *out)
{
    const ds_cond_node *c = &p->ds_node_params_u.cond;
    ds_node_params own = *p;
    struct ds_gnode_desc d = { .kind = DS_GNODE_COND };
    struct ds_vgraph *g;
    struct ds_vnode *n;
    ds_void_res vr;
    CUresult rc;

    if ((rc = ds__gnode_editable(t, gh, &g)) != CUDA_SUCCESS)
        return rc;
    if (!good_cond(c) || c->bodies.bodies_len != 0 || (d.cond = cond_of(g, c->handle)) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    d.cond_type = c->type;
    d.nbodies = c->size;
    if ((d.bodies = calloc(c->size, sizeof(*d.bodies))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    own.ds_node_params_u.cond.bodies.bodies_len = 0;
    rc = ds__gnode_add_described(t, g, gh, &own, &d, deps, ndeps, out);
    n = rc == CUDA_SUCCESS ? ds__gnode_of(t, *out, gh) : NULL;
    /* Bodies the backend made but no handle holds go now; adopt_body frees its own on
     * failure. */
    for (unsigned i = 0; i < c->size; i++) {
        if (rc == CUDA_SUCCESS)
            rc = adopt_body(t, n, g->ctx, d.bodies[i]);
        else if (d.bodies[i] != NULL)
            t->ops->graph_destroy(t->be, d.bodies[i]);
    }
    if (rc != CUDA_SUCCESS && n != NULL)
        ds__ops_graph_node_destroy(t, out, &vr);
    free(d.bodies);
    return rc;
}

CUresult ds__ops_graph_cond_create(struct ds_tenant *t, const ds_cond_create_args *a,
                                   ds_hyper_res *r)
{
    struct ds_vcond *grown;
    struct ds_bcond *real;
    struct ds_vgraph *g;
    uint64_t value;
    CUresult rc;

    if ((rc = ds__gnode_editable(t, a->graph, &g)) != CUDA_SUCCESS)
        return rc;
    if ((a->flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((grown = realloc(g->conds, (g->nconds + 1) * sizeof(*grown))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->conds = grown;
    rc = ds_error_to_cu(t->ops->graph_cond_create(t->be, g->real, a->dflt, a->flags, &real,
                                                  &value));
    if (rc != CUDA_SUCCESS)
        return rc;
    g->conds[g->nconds++] = (struct ds_vcond){ .value = value, .real = real };
    r->ds_hyper_res_u.value = value;
    return CUDA_SUCCESS;
}
