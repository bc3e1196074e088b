#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"

#include <stdlib.h>

/* A tenant stream that can be captured: created by the tenant, not a default stream
 * (CUDA does not capture the legacy stream either). */
static struct ds_vstream *capturable(struct ds_tenant *t, ds_handle h)
{
    return ds_handles_get(&t->h, h, DS_H_STREAM);
}

CUresult ds__ops_capture_begin(struct ds_tenant *t, const ds_capture_args *a, ds_void_res *r)
{
    struct ds_vstream *s = capturable(t, a->stream);
    int rc;

    (void)r;
    if (s == NULL)
        return a->stream <= 2 ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_ERROR_INVALID_HANDLE;
    if (a->mode < CU_STREAM_CAPTURE_MODE_GLOBAL || a->mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
    rc = t->ops->capture_begin(t->be, s->real, a->mode);
    if (rc == 0) {
        ds__tenant_set_capturing(t, s, 1);
        s->mode = a->mode;
        s->first_id = ds__ops_ghcopy_capture(t, s);
    }
    return ds_error_to_cu(rc);
}

static CUresult add_graph(struct ds_tenant *t, enum ds_htype type, uint64_t ctx, void *real,
                          ds_handle *out)
{
    struct ds_vgraph *g = calloc(1, sizeof(*g));

    if (g == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->ctx = ctx;
    g->real = real;
    *out = ds_handles_add(&t->h, type, g);
    if (*out == 0) {
        free(g);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

CUresult ds__ops_capture_end(struct ds_tenant *t, const ds_handle *h, ds_handle_res *r)
{
    struct ds_vstream *s = capturable(t, *h);
    struct ds_bgraph *g;
    struct ds_vgraph *v;
    uint64_t id;
    CUresult rc;

    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!s->capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
    if (s->into != 0)
        return ds__ops_capture_end_into(t, s, *h, r);
    ds__tenant_set_capturing(t, s, 0);
    id = ds__ops_ghcopy_capture(t, s);
    rc = ds_error_to_cu(t->ops->capture_end(t->be, s->real, &g));
    if (rc != CUDA_SUCCESS) {
        ds__ops_gmem_captured(t, *h, NULL);
        ds__ops_ghcopy_captured(t, id, NULL);
        return rc;
    }
    rc = add_graph(t, DS_H_GRAPH, s->ctx, g, &r->ds_handle_res_u.handle);
    if (rc != CUDA_SUCCESS) {
        t->ops->graph_destroy(t->be, g);
        ds__ops_gmem_captured(t, *h, NULL);
        ds__ops_ghcopy_captured(t, id, NULL);
        return rc;
    }
    v = ds_handles_get(&t->h, r->ds_handle_res_u.handle, DS_H_GRAPH);
    rc = ds__ops_gmem_captured(t, *h, v);
    if (rc == CUDA_SUCCESS)
        rc = ds__ops_ghcopy_captured(t, id, v);
    else
        ds__ops_ghcopy_captured(t, id, NULL);
    if (rc != CUDA_SUCCESS)
        ds__ops_graph_free(t, ds_handles_remove(&t->h, r->ds_handle_res_u.handle, DS_H_GRAPH));
    return rc;
}

CUresult ds__ops_capture_info(struct ds_tenant *t, const ds_handle *h, ds_capture_info_res *r)
{
    struct ds_vstream *s = capturable(t, *h), *o;
    struct ds_bstream *real;
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    uint64_t id = 0, oh;
    int rc;

    if (ds__tenant_stream(t, *h, &real) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    /* A stream that joined a capture (a fork) is in it too, as natively. */
    if (s != NULL && (s->capturing || t->captures > 0)) {
        rc = t->ops->capture_info(t->be, s->real, &status, &id);
        if (rc != 0)
            return ds_error_to_cu(rc);
    }
    /* A capture cut (ops_gcapture.c) goes on as another backend capture; the tenant
     * keeps the id it began with. */
    if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
        (o = ds__ops_ghcopy_origin(t, id, &oh)) != NULL && o->first_id != 0)
        id = o->first_id;
    r->ds_capture_info_res_u.info.status = status;
    r->ds_capture_info_res_u.info.id = id;
    return CUDA_SUCCESS;
}

/* An instantiated graph of built graph g with host nodes: its stages, made before it has
 * a handle. */
static CUresult instantiate_staged(struct ds_tenant *t, struct ds_vgraph *g,
                                   const ds_instantiate_args *a, ds_handle_res *r)
{
    struct ds_vgraph *x = calloc(1, sizeof(*x));
    CUresult rc;

    if (x == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->ctx = g->ctx;
    x->graph = a->graph;
    x->flags = a->flags;
    rc = ds__ops_gstage_make(t, g, a->flags, x);
    if (rc == CUDA_SUCCESS)
        rc = ds__ops_gexec_pin_events(t, g, x);
    if (rc == CUDA_SUCCESS &&
        (r->ds_handle_res_u.handle = ds_handles_add(&t->h, DS_H_GEXEC, x)) == 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc != CUDA_SUCCESS)
        ds__ops_gexec_free(t, x);
    return rc;
}

/* An instance of captured graph g with copies of pageable memory (ops_ghcopy.c). */
static CUresult instantiate_hcopies(struct ds_tenant *t, const struct ds_vgraph *g,
                                    const ds_instantiate_args *a, ds_handle_res *r)
{
    struct ds_vgraph *x = calloc(1, sizeof(*x));
    CUresult rc;

    if (x == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->ctx = g->ctx;
    x->graph = a->graph;
    x->flags = a->flags;
    rc = ds__ops_ghcopy_stage(t, g, x);
    if (rc == CUDA_SUCCESS &&
        (r->ds_handle_res_u.handle = ds_handles_add(&t->h, DS_H_GEXEC, x)) == 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc != CUDA_SUCCESS)
        ds__ops_gexec_free(t, x);
    return rc;
}

CUresult ds__ops_graph_instantiate(struct ds_tenant *t, const ds_instantiate_args *a,
                                   ds_handle_res *r)
{
    struct ds_vgraph *g = ds_handles_get(&t->h, a->graph, DS_H_GRAPH), *x;
    struct ds_bgexec *e;
    CUresult rc;

    if (g == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (g->built && ds__ops_gstage_needed(t, g))
        return instantiate_staged(t, g, a, r);
    if (g->nhcopies > 0)
        return instantiate_hcopies(t, g, a, r);
    rc = ds_error_to_cu(t->ops->graph_instantiate(t->be, g->real, a->flags, &e));
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = add_graph(t, DS_H_GEXEC, g->ctx, e, &r->ds_handle_res_u.handle);
    if (rc != CUDA_SUCCESS) {
        t->ops->graph_exec_destroy(t->be, e);
        return rc;
    }
    x = ds_handles_get(&t->h, r->ds_handle_res_u.handle, DS_H_GEXEC);
    x->graph = a->graph;
    x->flags = a->flags;
    if ((rc = ds__ops_gexec_pin_events(t, g, x)) != CUDA_SUCCESS)
        ds__ops_gexec_free(t, ds_handles_remove(&t->h, r->ds_handle_res_u.handle, DS_H_GEXEC));
    return rc;
}

CUresult ds__ops_graph_launch(struct ds_tenant *t, const ds_graph_launch_args *a)
{
    struct ds_vgraph *e = ds_handles_get(&t->h, a->exec, DS_H_GEXEC);
    struct ds_trace_mark m;
    struct ds_bstream *s;
    int rc;

    if (e == NULL || ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->stages != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    ds__tenant_kernel_boundary(t, s);
    ds__trace_begin(t, a->stream, s, &m);
    rc = t->ops->graph_launch(t->be, e->real, s);
    ds__trace_end(t, s, &m, rc, DS_TRACE_GRAPH, "graph", 0);
    if (rc == 0)
        ds__tenant_launched(t, s, ds__tenant_capturing(t, a->stream));
    return ds_error_to_cu(rc);
}

CUresult ds__ops_graph_node_count(struct ds_tenant *t, const ds_handle *h, ds_hyper_res *r)
{
    struct ds_vgraph *g = ds_handles_get(&t->h, *h, DS_H_GRAPH);

    if (g == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return ds_error_to_cu(t->ops->graph_node_count(t->be, g->real, &r->ds_hyper_res_u.value));
}

/* A child graph node's graph goes with its node only. */
CUresult ds__ops_graph_destroy(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_vgraph *g = ds_handles_get(&t->h, *h, DS_H_GRAPH);

    (void)r;
    if (g == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (g->embedded)
        return CUDA_ERROR_INVALID_VALUE;
    ds__ops_graph_free(t, ds_handles_remove(&t->h, *h, DS_H_GRAPH));
    return CUDA_SUCCESS;
}

CUresult ds__ops_graph_exec_destroy(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    struct ds_vgraph *e = ds_handles_remove(&t->h, *h, DS_H_GEXEC);

    (void)r;
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    ds__ops_gexec_free(t, e);
    return CUDA_SUCCESS;
}

void ds__ops_gexec_free(struct ds_tenant *t, struct ds_vgraph *e)
{
    if (e->real != NULL)
        t->ops->graph_exec_destroy(t->be, e->real);
    ds__ops_gstage_free(t, e);
    free(e->off);
    for (uint32_t i = 0; i < e->ngmems; i++)
        ds__ops_gmem_release(t, e->gmems[i]);
    free(e->gmems);
    for (uint32_t i = 0; i < e->nevents; i++)
        ds__ops_event_release(t, e->events[i]);
    free(e->events);
    free(e);
}

CUresult ds__ops_graph_exec_info(struct ds_tenant *t, const ds_handle *h, ds_gexec_info_res *r)
{
    struct ds_vgraph *e = ds_handles_get(&t->h, *h, DS_H_GEXEC);

    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    r->ds_gexec_info_res_u.info.flags = e->flags;
    r->ds_gexec_info_res_u.info.stages = e->nstages;
    return CUDA_SUCCESS;
}

/* An instance running in stages, or a graph that would, has no one backend graph to
 * update: refused as the driver refuses what it cannot update. */
CUresult ds__ops_graph_exec_update(struct ds_tenant *t, const ds_exec_update_args *a,
                                   ds_exec_update_res *r)
{
    struct ds_vgraph *e = ds_handles_get(&t->h, a->exec, DS_H_GEXEC);
    struct ds_vgraph *g = ds_handles_get(&t->h, a->graph, DS_H_GRAPH);
    CUresult rc;

    if (e == NULL || g == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->stages != NULL || (g->built && ds__ops_gstage_needed(t, g)) || g->nhcopies > 0) {
        ds_warn("cuGraphExecUpdate of a graph with host nodes, or copies of pageable memory, "
                "is not served");
        r->ds_exec_update_res_u.result = CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
        return CUDA_SUCCESS;
    }
    if ((rc = ds__ops_gexec_pin_events(t, g, e)) != CUDA_SUCCESS)
        return rc;
    return ds_error_to_cu(
        t->ops->graph_exec_update(t->be, e->real, g->real, &r->ds_exec_update_res_u.result));
}

void ds__ops_graph_drop(struct ds_tenant *t, uint64_t ctx, int all)
{
    uint32_t cur = 0;
    uint64_t h;

    while ((h = ds_handles_next(&t->h, DS_H_GEXEC, &cur)) != 0) {
        struct ds_vgraph *g = ds_handles_get(&t->h, h, DS_H_GEXEC);

        if (all || g->ctx == ctx) {
            ds_handles_remove(&t->h, h, DS_H_GEXEC);
            ds__ops_gexec_free(t, g);
        }
    }
    if (all) {
        ds__ops_gmem_drop_captures(t);
        ds__ops_ghcopy_drop_captures(t);
    }
    cur = 0;
    while ((h = ds_handles_next(&t->h, DS_H_GRAPH, &cur)) != 0) {
        struct ds_vgraph *g = ds_handles_get(&t->h, h, DS_H_GRAPH);

        /* A child graph node's graph goes with its node. */
        if (!g->embedded && (all || g->ctx == ctx)) {
            ds_handles_remove(&t->h, h, DS_H_GRAPH);
            ds__ops_graph_free(t, g);
        }
    }
}

/* A conditional node comes with body graphs of its own (ops_gcond.c). */
CUresult ds__ops_graph_add_node(struct ds_tenant *t, const ds_graph_add_args *a,
                                ds_handle_res *r)
{
    if (a->params.kind == DS_NODE_COND)
        return ds__gcond_add(t, a->graph, &a->params, a->deps.deps_val, a->deps.deps_len,
                             &r->ds_handle_res_u.handle);
    return ds__gnode_add(t, a->graph, &a->params, a->deps.deps_val, a->deps.deps_len,
                         &r->ds_handle_res_u.handle);
}
