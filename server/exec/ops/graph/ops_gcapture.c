/*
 * Capture into an existing graph (cuStreamBeginCaptureToGraph) and the dependencies of a
 * capture in progress (cuStreamUpdateCaptureDependencies).  The stream is captured as any
 * other; the work captured since the last dependency change becomes one child graph node
 * of the tenant's built graph, after the dependencies it had.  The graph's own nodes keep
 * their handles and the graph stays the executor's to answer about; what CUDA would add
 * as separate nodes is one node here, which orders the work at least as strictly.  The
 * graph may be a conditional node's body (its usual filling), which takes no graph
 * memory: a capture into one that allocates is refused when it ends.
 *
 * Host functions (cuLaunchHostFunc) on a capturing stream, or on one that joined the
 * capture, are captured the same way.  The backend's capture cannot hold a function of
 * the tenant's process, and its graph cannot be cut around a node afterwards, so the
 * capture is cut where the function comes: every joined stream's work joins the
 * capturing stream, the part captured so far becomes a child graph node, the function a
 * host node after it, and the capture begins again after the host node, the joined
 * streams joining it again.  A plain capture that meets a host function becomes a
 * capture into a graph of its own, which its end returns: a built graph, whose host
 * nodes the tenant can list and read, and whose instances run in stages (ops_gstage.c).
 * Work on other streams of the capture that CUDA would let run beside the function
 * waits for it here, which orders it at least as strictly.
 *
 * A tenant that asks for the graph or the dependencies of a capture in progress
 * (cuStreamGetCaptureInfo_v2/_v3) is to add nodes to that graph after those dependencies
 * (the CUDA sample graphConditionalNodes adds a conditional node so): the capture is cut
 * there as for a dependency change, a plain one first becoming a capture into a graph of
 * its own as for a host function, and the answer is that graph and the nodes the
 * capture's next work depends on, handles the tenant can name.  Each capture reports the
 * id of the backend capture it began with, though every cut begins another.
 *
 * The backend ends a capture only once every stream that joined it has joined the
 * capturing stream again, so each cut (a dependency change, a host function, the end of
 * a capture into a graph) first has the capturing stream wait for every joined stream;
 * a capture begun again after a cut has them wait for it in turn, so that their later
 * work is still captured.  A capture into a graph thus ends even when a joined stream's
 * last work was never joined again, where CUDA would refuse
 * (CUDA_ERROR_STREAM_CAPTURE_UNJOINED).
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

static void stop(struct ds_tenant *t, struct ds_vstream *s)
{
    ds__tenant_set_capturing(t, s, 0);
    s->into = 0;
    s->owns_into = 0;
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
        stop(t, s);
        return rc;
    }
    ds__tenant_set_capturing(t, s, 1);
    s->into = a->graph;
    s->mode = a->mode;
    s->first_id = ds__ops_ghcopy_capture(t, s);
    return CUDA_SUCCESS;
}

/* Captured graph c (made on stream sh, its graph memory with it) as a child graph node of
 * s's graph after deps (n of them): the node's handle in *node.  c goes with the node, or
 * now on failure. */
static CUresult adopt(struct ds_tenant *t, struct ds_vstream *s, uint64_t sh,
                      struct ds_bgraph *c, const uint64_t *deps, uint32_t n, ds_handle *node)
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
        rc = ds__ops_gnode_add_captured(t, s->into, h, deps, n, node);
    if (rc != CUDA_SUCCESS && (v = ds_handles_remove(&t->h, h, DS_H_GRAPH)) != NULL)
        ds__ops_graph_free(t, v);
    return rc;
}

/* Part c of s's capture `id` (stream handle sh) as a child graph node of s's graph, after
 * s's dependencies and the copies to the device the part took (ops_ghcopy.c); s's
 * dependencies become that node and the copies to the host after it.  c goes with the
 * node, or now on failure. */
static CUresult place(struct ds_tenant *t, struct ds_vstream *s, uint64_t sh, uint64_t id,
                      struct ds_bgraph *c)
{
    uint64_t *before = NULL, *tail = NULL;
    uint32_t nbefore = 0, ntail = 0;
    CUresult rc = CUDA_SUCCESS;
    ds_handle node;

    for (uint32_t i = 0; i < s->ninto_deps && rc == CUDA_SUCCESS; i++)
        if (ds__gnode_append_handle(&before, &nbefore, s->into_deps[i]) != 0)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS)
        rc = ds__ops_ghcopy_nodes(t, id, 1, s->into, s->into_deps, s->ninto_deps, &before,
                                  &nbefore);
    if (rc != CUDA_SUCCESS) {
        t->ops->graph_destroy(t->be, c);
        ds__ops_gmem_captured(t, sh, NULL);
    } else {
        rc = adopt(t, s, sh, c, before, nbefore, &node);
    }
    if (rc == CUDA_SUCCESS && ds__gnode_append_handle(&tail, &ntail, node) != 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS)
        rc = ds__ops_ghcopy_nodes(t, id, 0, s->into, &node, 1, &tail, &ntail);
    if (rc == CUDA_SUCCESS)
        rc = set_deps(s, tail, ntail);
    ds__ops_ghcopy_captured(t, id, NULL);
    free(before);
    free(tail);
    return rc;
}

/* The tenant's streams other than o that joined o's capture `id` (by waiting for an
 * event of it), into *out (*n, the caller's to free). */
static CUresult joined(struct ds_tenant *t, const struct ds_vstream *o, uint64_t id,
                       struct ds_vstream ***out, uint32_t *n)
{
    uint32_t cur = 0;
    uint64_t h;

    *out = NULL;
    *n = 0;
    while ((h = ds_handles_next(&t->h, DS_H_STREAM, &cur)) != 0) {
        struct ds_vstream *v = ds_handles_get(&t->h, h, DS_H_STREAM), **grown;

        if (v == o || ds__ops_ghcopy_capture(t, v) != id)
            continue;
        if ((grown = realloc(*out, (*n + 1) * sizeof(*grown))) == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
        grown[(*n)++] = v;
        *out = grown;
    }
    return CUDA_SUCCESS;
}

/* The backend capture ends on o only once every stream that joined it has joined o
 * again: join (to_o) has o wait for the work of each of the n streams j so far; the
 * other way, each waits for o's, which makes it join o's capture begun again. */
static CUresult tie(struct ds_tenant *t, struct ds_vstream *o, struct ds_vstream **j,
                    uint32_t n, int to_o)
{
    struct ds_bevent *ev;
    int rc;

    if (n == 0)
        return CUDA_SUCCESS;
    if ((rc = t->ops->event_create(t->be, CU_EVENT_DISABLE_TIMING, &ev)) != 0)
        return ds_error_to_cu(rc);
    if (!to_o)
        rc = t->ops->event_record(t->be, ev, o->real);
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        if (to_o && (rc = t->ops->event_record(t->be, ev, j[i]->real)) == 0)
            rc = t->ops->stream_wait_event(t->be, o->real, ev);
        else if (!to_o)
            rc = t->ops->stream_wait_event(t->be, j[i]->real, ev);
    }
    t->ops->event_destroy(t->be, ev);
    return ds_error_to_cu(rc);
}

/* End s's capture (stream handle sh) so far: what it captured becomes nodes of its graph
 * (place), and s's dependencies the nodes that end them (unchanged when nothing was
 * captured).  The capture is over on return; the caller begins it again to go on. */
static CUresult seal(struct ds_tenant *t, struct ds_vstream *s, uint64_t sh)
{
    uint64_t id = ds__ops_ghcopy_capture(t, s), n = 0;
    struct ds_bgraph *c = NULL;
    CUresult rc;

    ds__tenant_set_capturing(t, s, 0);
    rc = ds_error_to_cu(t->ops->capture_end(t->be, s->real, &c));
    if (rc == CUDA_SUCCESS)
        rc = ds_error_to_cu(t->ops->graph_node_count(t->be, c, &n));
    /* The graph or a dependency may have gone while the capture ran. */
    if (rc == CUDA_SUCCESS && n > 0 &&
        (ds_handles_get(&t->h, s->into, DS_H_GRAPH) == NULL ||
         !nodes_of(t, s->into, s->into_deps, s->ninto_deps)))
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (rc == CUDA_SUCCESS && n > 0)
        return place(t, s, sh, id, c);
    if (c != NULL)
        t->ops->graph_destroy(t->be, c);
    ds__ops_gmem_captured(t, sh, NULL);
    ds__ops_ghcopy_captured(t, id, NULL);
    return rc;
}

/* seal, every stream that joined s's capture joining s first, which the backend needs
 * to end it (for a capture's end, that joins work CUDA would refuse to end unjoined):
 * the streams in *j (*nj, the caller's to free) for restart. */
static CUresult seal_joined(struct ds_tenant *t, struct ds_vstream *s, uint64_t sh,
                            struct ds_vstream ***j, uint32_t *nj)
{
    CUresult rc = joined(t, s, ds__ops_ghcopy_capture(t, s), j, nj);

    if (rc == CUDA_SUCCESS)
        rc = tie(t, s, *j, *nj, 1);
    return rc == CUDA_SUCCESS ? seal(t, s, sh) : rc;
}

/* Capture on s again, in its mode, the nj streams j that had joined it joining again. */
static CUresult restart(struct ds_tenant *t, struct ds_vstream *s, struct ds_vstream **j,
                        uint32_t nj)
{
    CUresult rc = ds_error_to_cu(t->ops->capture_begin(t->be, s->real, s->mode));

    if (rc != CUDA_SUCCESS)
        return rc;
    ds__tenant_set_capturing(t, s, 1);
    return tie(t, s, j, nj, 0);
}

/* The graph a capture made for itself goes when the capture fails. */
static void drop_own(struct ds_tenant *t, uint64_t graph)
{
    struct ds_vgraph *g = ds_handles_remove(&t->h, graph, DS_H_GRAPH);

    if (g != NULL)
        ds__ops_graph_free(t, g);
}

/* A capture that failed half way is over, what it captured with it: the tenant's end
 * finds no capture. */
static void abandon(struct ds_tenant *t, struct ds_vstream *o, uint64_t oh)
{
    struct ds_bgraph *c = NULL;
    uint64_t id;

    if (o->capturing) {
        id = ds__ops_ghcopy_capture(t, o);
        if (t->ops->capture_end(t->be, o->real, &c) == 0)
            t->ops->graph_destroy(t->be, c);
        ds__ops_gmem_captured(t, oh, NULL);
        ds__ops_ghcopy_captured(t, id, NULL);
    }
    if (o->owns_into)
        drop_own(t, o->into);
    stop(t, o);
}

CUresult ds__ops_capture_end_into(struct ds_tenant *t, struct ds_vstream *s, uint64_t sh,
                                  ds_handle_res *r)
{
    uint64_t into = s->into;
    struct ds_vstream **j = NULL;
    uint32_t nj;
    CUresult rc = seal_joined(t, s, sh, &j, &nj);

    free(j);
    if (rc != CUDA_SUCCESS) {
        abandon(t, s, sh);
        return rc;
    }
    stop(t, s);
    r->ds_handle_res_u.handle = into;
    return CUDA_SUCCESS;
}

/* The dependency set after an update: deps (n), added to what the capture depends on
 * now or instead of it. */
static CUresult new_deps(struct ds_vstream *s, const uint64_t *deps, uint32_t n,
                         unsigned flags)
{
    uint64_t *all;
    uint32_t m = 0;
    CUresult rc;

    if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        return set_deps(s, deps, n);
    if ((all = malloc((s->ninto_deps + n + 1) * sizeof(*all))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
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
    struct ds_vstream *s = ds_handles_get(&t->h, a->stream, DS_H_STREAM), **j = NULL;
    uint32_t nj = 0;
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
    rc = seal_joined(t, s, a->stream, &j, &nj);
    if (rc == CUDA_SUCCESS)
        rc = new_deps(s, a->deps.deps_val, a->deps.deps_len, a->flags);
    if (rc == CUDA_SUCCESS)
        rc = restart(t, s, j, nj);
    free(j);
    if (rc != CUDA_SUCCESS)
        abandon(t, s, a->stream);
    return rc;
}

/* A plain capture that meets a host function goes on as a capture into a graph of its
 * own, which its end returns. */
static CUresult own_graph(struct ds_tenant *t, struct ds_vstream *o)
{
    ds_graph_create_args ca = { .ctx = o->ctx };
    ds_handle_res r;
    CUresult rc = ds__ops_graph_create(t, &ca, &r);

    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = set_deps(o, NULL, 0)) != CUDA_SUCCESS) {
        drop_own(t, r.ds_handle_res_u.handle);
        return rc;
    }
    o->into = r.ds_handle_res_u.handle;
    o->owns_into = 1;
    return CUDA_SUCCESS;
}

/* Host node p where o's capture stands: the part captured so far sealed (with every
 * joined stream's work), p after it, and the capture begun again after p, the joined
 * streams with it. */
static CUresult host_node(struct ds_tenant *t, struct ds_vstream *o, uint64_t oh,
                          const ds_node_params *p)
{
    struct ds_vstream **j = NULL;
    ds_handle node;
    uint32_t nj;
    CUresult rc = seal_joined(t, o, oh, &j, &nj);

    if (rc == CUDA_SUCCESS)
        rc = ds__gnode_add(t, o->into, p, o->into_deps, o->ninto_deps, &node);
    if (rc == CUDA_SUCCESS)
        rc = set_deps(o, &node, 1);
    if (rc == CUDA_SUCCESS)
        rc = restart(t, o, j, nj);
    free(j);
    return rc;
}

CUresult ds__ops_capture_host_fn(struct ds_tenant *t, const ds_capture_host_fn_args *a,
                                 ds_int_res *r)
{
    ds_node_params p = { .kind = DS_NODE_HOST };
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    struct ds_vstream *o;
    struct ds_bstream *s;
    uint64_t id = 0, oh = 0;
    CUresult rc;

    r->ds_int_res_u.value = 0;
    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    /* The legacy stream is never captured (ops_graph.c). */
    if (s != NULL && (rc = ds_error_to_cu(t->ops->capture_info(t->be, s, &status, &id))) !=
                         CUDA_SUCCESS)
        return rc;
    if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUDA_SUCCESS;
    if (a->host.fn == 0)
        return CUDA_ERROR_INVALID_VALUE;
    o = ds__ops_ghcopy_origin(t, id, &oh);
    if (o == NULL || (o->into != 0 && ((struct ds_vgraph *)ds_handles_get(
                                           &t->h, o->into, DS_H_GRAPH))->embedded)) {
        ds_warn("a host function in a capture into a conditional node's body is not served");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (o->into == 0 && (rc = own_graph(t, o)) != CUDA_SUCCESS)
        return rc;
    p.ds_node_params_u.host = a->host;
    if ((rc = host_node(t, o, oh, &p)) != CUDA_SUCCESS) {
        abandon(t, o, oh);
        return rc;
    }
    r->ds_int_res_u.value = 1;
    return CUDA_SUCCESS;
}

/* The answer for a capture whose graph is o's and whose backend id the tenant knows as
 * id: o's graph and dependencies (copied into the result, which XDR frees). */
static CUresult answer(const struct ds_vstream *o, uint64_t id, ds_capture_graph *info)
{
    if (o->ninto_deps > DS_GRAPH_DEPS_MAX) {
        ds_warn("cuStreamGetCaptureInfo: the capture depends on %u nodes, more than the "
                "%d one answer can name", o->ninto_deps, DS_GRAPH_DEPS_MAX);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (o->ninto_deps > 0) {
        info->deps.deps_val = malloc(o->ninto_deps * sizeof(*info->deps.deps_val));
        if (info->deps.deps_val == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
        memcpy(info->deps.deps_val, o->into_deps, o->ninto_deps * sizeof(*o->into_deps));
        info->deps.deps_len = o->ninto_deps;
    }
    info->status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    info->id = id;
    info->graph = o->into;
    return CUDA_SUCCESS;
}

CUresult ds__ops_capture_graph(struct ds_tenant *t, const ds_handle *h,
                               ds_capture_graph_res *r)
{
    ds_capture_graph *info = &r->ds_capture_graph_res_u.info;
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    struct ds_vstream *o, **j = NULL;
    struct ds_bstream *s;
    uint64_t id = 0, oh = 0;
    uint32_t nj = 0;
    CUresult rc;

    memset(info, 0, sizeof(*info));
    if (ds__tenant_stream(t, *h, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    /* The legacy stream is never captured (ops_graph.c). */
    if (s != NULL && (rc = ds_error_to_cu(t->ops->capture_info(t->be, s, &status, &id))) !=
                         CUDA_SUCCESS)
        return rc;
    info->status = status;
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUDA_SUCCESS;
    if ((o = ds__ops_ghcopy_origin(t, id, &oh)) == NULL)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (o->into == 0 && (rc = own_graph(t, o)) != CUDA_SUCCESS)
        return rc;
    rc = seal_joined(t, o, oh, &j, &nj);
    if (rc == CUDA_SUCCESS)
        rc = restart(t, o, j, nj);
    free(j);
    if (rc != CUDA_SUCCESS) {
        abandon(t, o, oh);
        return rc;
    }
    return answer(o, o->first_id, info);
}
