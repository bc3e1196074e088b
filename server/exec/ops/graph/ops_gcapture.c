/*
 * Capture into an existing graph (cuStreamBeginCaptureToGraph) and the dependencies of a
 * capture in progress (cuStreamUpdateCaptureDependencies).  The stream is captured as any
 * other; the work captured since the last dependency change becomes one child graph node
 * of the tenant's built graph, after the dependencies it had.  The graph's own nodes keep
 * their handles and the graph stays the executor's to answer about; what CUDA would add
 * as separate nodes is one node here, which orders the work at least as strictly.  The
 * graph may be a conditional node's body (its usual filling), which takes no graph
 * memory: a capture into one that allocates is refused when it ends.
 */
#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"

#include <stdlib.h>
#include <string.h>

/* Whether deps (n handles) are distinct nodes of graph `graph`. */
static int nodes_of(struct ds_tenant *t, uint64_t graph, const uint64_t *deps, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct ds_vnode *v = ds_handles_get(&t->h, deps[i], DS_H_NODE);

        if (v == NULL || v->graph != graph)
            return 0;
        for (uint32_t j = 0; j < i; j++)
            if (deps[j] == deps[i])
                return 0;
    }
    return 1;
}

/* s's dependency set becomes the n handles deps (copied). */
static CUresult set_deps(struct ds_vstream *s, const uint64_t *deps, uint32_t n)
{
    uint64_t *copy = malloc((n > 0 ? n : 1) * sizeof(*copy));

    if (copy == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (n > 0)
        memcpy(copy, deps, n * sizeof(*copy));
    free(s->into_deps);
    s->into_deps = copy;
    s->ninto_deps = n;
    return CUDA_SUCCESS;
}

static void stop(struct ds_vstream *s)
{
    s->capturing = 0;
    s->into = 0;
    free(s->into_deps);
    s->into_deps = NULL;
    s->ninto_deps = 0;
}

CUresult ds__ops_capture_to_graph(struct ds_tenant *t, const ds_capture_to_graph_args *a,
                                  ds_void_res *r)
{
    struct ds_vstream *s = ds_handles_get(&t->h, a->stream, DS_H_STREAM);
    struct ds_vgraph *g = ds_handles_get(&t->h, a->graph, DS_H_GRAPH);
    CUresult rc;

    (void)r;
    if (s == NULL)
        return a->stream <= 2 ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_ERROR_INVALID_HANDLE;
    if (g == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!g->built || g->frozen) {
        ds_warn("capture into a graph: the graph must be one built with cuGraphCreate or a "
                "conditional node's body, not a child graph node's copy");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (a->mode < CU_STREAM_CAPTURE_MODE_GLOBAL || a->mode > CU_STREAM_CAPTURE_MODE_RELAXED ||
        !nodes_of(t, a->graph, a->deps.deps_val, a->deps.deps_len))
        return CUDA_ERROR_INVALID_VALUE;
    if (s->capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
    if ((rc = set_deps(s, a->deps.deps_val, a->deps.deps_len)) != CUDA_SUCCESS)
        return rc;
    if ((rc = ds_error_to_cu(t->ops->capture_begin(t->be, s->real, a->mode))) != CUDA_SUCCESS) {
        stop(s);
        return rc;
    }
    s->capturing = 1;
    s->into = a->graph;
    s->mode = a->mode;
    return CUDA_SUCCESS;
}

/* Captured graph c (made on stream sh, its graph memory with it) as a child graph node of
 * s's graph after s's dependencies: the node's handle in *node.  c goes with the node, or
 * now on failure. */
static CUresult adopt(struct ds_tenant *t, struct ds_vstream *s, uint64_t sh,
                      struct ds_bgraph *c, ds_handle *node)
{
    struct ds_vgraph *v = calloc(1, sizeof(*v));
    uint64_t h;
    CUresult rc;

    if (v == NULL) {
        t->ops->graph_destroy(t->be, c);
        ds__ops_gmem_captured(t, sh, NULL);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *v = (struct ds_vgraph){ .ctx = s->ctx, .real = c, .embedded = 1, .frozen = 1 };
    if ((h = ds_handles_add(&t->h, DS_H_GRAPH, v)) == 0) {
        ds__ops_gmem_captured(t, sh, NULL);
        ds__ops_graph_free(t, v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rc = ds__ops_gmem_captured(t, sh, v);
    if (rc == CUDA_SUCCESS && v->ngmems > 0 &&
        ((struct ds_vgraph *)ds_handles_get(&t->h, s->into, DS_H_GRAPH))->embedded) {
        ds_warn("a capture into a conditional node's body cannot allocate graph memory");
        rc = CUDA_ERROR_NOT_SUPPORTED;
    }
    if (rc == CUDA_SUCCESS)
        rc = ds__ops_gnode_add_captured(t, s->into, h, s->into_deps, s->ninto_deps, node);
    if (rc != CUDA_SUCCESS && (v = ds_handles_remove(&t->h, h, DS_H_GRAPH)) != NULL)
        ds__ops_graph_free(t, v);
    return rc;
}

/* End s's capture (stream handle sh) so far: what it captured becomes a node of its
 * graph (*node; 0 when nothing was captured, and no node is added).  The capture is over
 * on return; the caller begins it again to go on. */
static CUresult seal(struct ds_tenant *t, struct ds_vstream *s, uint64_t sh, ds_handle *node)
{
    struct ds_bgraph *c;
    uint64_t n = 0;
    CUresult rc;

    *node = 0;
    s->capturing = 0;
    if ((rc = ds_error_to_cu(t->ops->capture_end(t->be, s->real, &c))) != CUDA_SUCCESS) {
        ds__ops_gmem_captured(t, sh, NULL);
        return rc;
    }
    if ((rc = ds_error_to_cu(t->ops->graph_node_count(t->be, c, &n))) != CUDA_SUCCESS ||
        n == 0) {
        t->ops->graph_destroy(t->be, c);
        ds__ops_gmem_captured(t, sh, NULL);
        return rc;
    }
    if (ds_handles_get(&t->h, s->into, DS_H_GRAPH) == NULL ||
        !nodes_of(t, s->into, s->into_deps, s->ninto_deps)) {
        /* The graph or a dependency went while the capture ran. */
        t->ops->graph_destroy(t->be, c);
        ds__ops_gmem_captured(t, sh, NULL);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    return adopt(t, s, sh, c, node);
}

CUresult ds__ops_capture_end_into(struct ds_tenant *t, struct ds_vstream *s, uint64_t sh,
                                  ds_handle_res *r)
{
    uint64_t into = s->into;
    ds_handle node;
    CUresult rc = seal(t, s, sh, &node);

    stop(s);
    if (rc == CUDA_SUCCESS)
        r->ds_handle_res_u.handle = into;
    return rc;
}

/* The dependency set after an update: deps (n), added to what the capture depended on
 * until now (sealed: the node its work so far became) or instead of it. */
static CUresult new_deps(struct ds_vstream *s, ds_handle sealed, const uint64_t *deps,
                         uint32_t n, unsigned flags)
{
    uint64_t *all;
    uint32_t m = 0;
    CUresult rc;

    if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        return set_deps(s, deps, n);
    if ((all = malloc((s->ninto_deps + n + 1) * sizeof(*all))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (sealed != 0)
        all[m++] = sealed;
    else
        for (uint32_t i = 0; i < s->ninto_deps; i++)
            all[m++] = s->into_deps[i];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = 0;

        while (j < m && all[j] != deps[i])
            j++;
        if (j == m)
            all[m++] = deps[i];
    }
    rc = set_deps(s, all, m);
    free(all);
    return rc;
}

/* A plain capture's graph is the backend's, whose nodes the tenant has no handles for:
 * only an update that names none and changes nothing is served. */
static CUresult update_plain(unsigned n, unsigned flags)
{
    if (n == 0 && flags == CU_STREAM_ADD_CAPTURE_DEPENDENCIES)
        return CUDA_SUCCESS;
    ds_warn("cuStreamUpdateCaptureDependencies is served for captures into a graph "
            "(cuStreamBeginCaptureToGraph) only: a plain capture's nodes have no handles");
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult ds__ops_capture_deps(struct ds_tenant *t, const ds_capture_deps_args *a,
                              ds_void_res *r)
{
    struct ds_vstream *s = ds_handles_get(&t->h, a->stream, DS_H_STREAM);
    ds_handle sealed;
    CUresult rc;

    (void)r;
    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!s->capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
    if (a->flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES &&
        a->flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->into == 0)
        return update_plain(a->deps.deps_len, a->flags);
    if (!nodes_of(t, s->into, a->deps.deps_val, a->deps.deps_len))
        return CUDA_ERROR_INVALID_VALUE;
    rc = seal(t, s, a->stream, &sealed);
    if (rc == CUDA_SUCCESS)
        rc = new_deps(s, sealed, a->deps.deps_val, a->deps.deps_len, a->flags);
    if (rc == CUDA_SUCCESS)
        rc = ds_error_to_cu(t->ops->capture_begin(t->be, s->real, s->mode));
    if (rc != CUDA_SUCCESS) {
        stop(s);
        return rc;
    }
    s->capturing = 1;
    return CUDA_SUCCESS;
}
