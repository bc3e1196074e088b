/*
 * Asynchronous copies of the tenant's pageable memory on a stream being captured.  CUDA
 * records such a copy as a memcpy node that reads or writes the host memory each time
 * the graph runs.  The executor cannot reach that memory, and a captured graph is the
 * backend's, which cannot be cut around one of its nodes as built graphs are
 * (ops_gstage.c).  So the capture records a device copy between the tenant's device
 * memory and staging memory of the graph's own (graph memory, ops_gmem.c), and the
 * tenant does the host side of the copy, in capture order:
 *
 * - in a plain capture, an instance of the graph runs in stages: the tenant fills the
 *   staging memory of every copy to the device before the graph runs, and empties that
 *   of every copy to the host once it has run.  This gives CUDA's bytes because nothing
 *   else in such a graph reaches the tenant's pageable memory, save a copy from host
 *   memory an earlier copy of the same capture writes, which is refused;
 * - in a capture into a graph (one of the tenant's, or the capture's own once it met a
 *   host function, ops_gcapture.c), each part captured between two changes of the
 *   dependencies becomes a child graph node, and its copies become memcpy nodes of the
 *   graph around that node (ds__ops_ghcopy_nodes), done by the tenant at their turn
 *   like any copy node of its own memory, so host functions between the parts see
 *   them, and they see what host functions wrote.
 *
 * A copy on a stream that joined the capture (by waiting for an event of it) belongs to
 * it by the backend's capture id.
 */
#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"

#include <stdlib.h>
#include <string.h>

/* s's backend capture id, 0 when it is not being captured. */
static uint64_t capture_of(struct ds_tenant *t, struct ds_bstream *s)
{
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    uint64_t id = 0;

    if (t->ops->capture_info(t->be, s, &status, &id) != 0 ||
        status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return 0;
    return id;
}

uint64_t ds__ops_ghcopy_capture(struct ds_tenant *t, struct ds_vstream *s)
{
    return capture_of(t, s->real);
}

struct ds_vstream *ds__ops_ghcopy_origin(struct ds_tenant *t, uint64_t id, uint64_t *handle)
{
    uint32_t cur = 0;
    uint64_t h;

    while ((h = ds_handles_next(&t->h, DS_H_STREAM, &cur)) != 0) {
        struct ds_vstream *s = ds_handles_get(&t->h, h, DS_H_STREAM);

        if (s->capturing && capture_of(t, s->real) == id) {
            *handle = h;
            return s;
        }
    }
    return NULL;
}

/* Whether o captures into a conditional node's body, which runs on the device as often
 * as its condition says and cannot wait for the tenant's process. */
static int into_body(struct ds_tenant *t, const struct ds_vstream *o)
{
    struct ds_vgraph *g = ds_handles_get(&t->h, o->into, DS_H_GRAPH);

    return o->into != 0 && (g == NULL || g->embedded);
}

static int overlap(uint64_t a, uint64_t n, uint64_t b, uint64_t m)
{
    return a < b + m && b < a + n;
}

/* Whether host bytes [host, host + n) are written by a copy capture `id` took already. */
static int written(const struct ds_tenant *t, uint64_t id, uint64_t host, uint64_t n)
{
    for (uint32_t i = 0; i < t->nhcap; i++) {
        const ds_memcpy_node *c = &t->hcap[i].copy;

        if (t->hcap[i].capture == id && c->host == DS_COPY_DST_HOST &&
            overlap(c->dst, c->size, host, n))
            return 1;
    }
    return 0;
}

/* Take copy a into capture `id` of stream s: staging memory, the captured device copy. */
static CUresult take(struct ds_tenant *t, struct ds_bstream *s, uint64_t id,
                     const ds_capture_copy_args *a)
{
    struct ds_hcap *grown = realloc(t->hcap, (t->nhcap + 1) * sizeof(*grown));
    struct ds_hcap h = { .capture = id, .copy = { .size = a->size } };
    CUresult rc;

    if (grown == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    t->hcap = grown;
    if ((rc = ds__ops_gmem_new(t, a->size, &h.m)) != CUDA_SUCCESS)
        return rc;
    if (a->to_device)
        h.copy = (ds_memcpy_node){ .dst = h.m->base, .src = a->host, .size = a->size,
                                   .host = DS_COPY_SRC_HOST };
    else
        h.copy = (ds_memcpy_node){ .dst = a->host, .src = h.m->base, .size = a->size,
                                   .host = DS_COPY_DST_HOST };
    rc = ds_error_to_cu(a->to_device
                            ? t->ops->memcpy_dtod(t->be, a->dev, h.m->base, a->size, s)
                            : t->ops->memcpy_dtod(t->be, h.m->base, a->dev, a->size, s));
    if (rc != CUDA_SUCCESS) {
        ds__ops_gmem_release(t, h.m);
        return rc;
    }
    t->hcap[t->nhcap++] = h;
    return CUDA_SUCCESS;
}

CUresult ds__ops_capture_host_copy(struct ds_tenant *t, const ds_capture_copy_args *a,
                                   ds_int_res *r)
{
    struct ds_vstream *o;
    struct ds_bstream *s;
    uint64_t id, oh;
    CUresult rc;

    r->ds_int_res_u.value = 0;
    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    /* A stream not captured, or one whose capture is not the tenant's to end: the copy
     * goes as any other, with what the backend says of it. */
    if ((id = capture_of(t, s)) == 0 || (o = ds__ops_ghcopy_origin(t, id, &oh)) == NULL)
        return CUDA_SUCCESS;
    if (into_body(t, o)) {
        ds_warn("a copy of pageable memory in a capture into a conditional node's body is "
                "not served");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (a->size == 0 || a->host == 0 || (a->to_device != 0 && a->to_device != 1) ||
        a->host + a->size < a->host || ds__tenant_range(t, a->dev, a->size) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->to_device && written(t, id, a->host, a->size)) {
        ds_warn("a captured copy from pageable memory that an earlier copy of the same "
                "capture writes is not served");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if ((rc = take(t, s, id, a)) == CUDA_SUCCESS)
        r->ds_int_res_u.value = 1;
    return rc;
}

CUresult ds__ops_ghcopy_captured(struct ds_tenant *t, uint64_t id, struct ds_vgraph *g)
{
    CUresult rc = CUDA_SUCCESS;
    uint32_t kept = 0;

    for (uint32_t i = 0; i < t->nhcap; i++) {
        struct ds_hcap *h = &t->hcap[i];
        ds_memcpy_node *copies = NULL;
        struct ds_gmem **gmems = NULL;

        if (h->capture != id || id == 0) {
            t->hcap[kept++] = *h;
            continue;
        }
        if (g != NULL && rc == CUDA_SUCCESS &&
            (copies = realloc(g->hcopies, (g->nhcopies + 1) * sizeof(*copies))) != NULL)
            g->hcopies = copies;
        if (copies != NULL &&
            (gmems = realloc(g->gmems, (g->ngmems + 1) * sizeof(*gmems))) != NULL)
            g->gmems = gmems;
        if (gmems == NULL) {
            rc = g != NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
            ds__ops_gmem_release(t, h->m);
            continue;
        }
        g->hcopies[g->nhcopies++] = h->copy;
        g->gmems[g->ngmems++] = h->m;
    }
    t->nhcap = kept;
    return rc;
}

/* Copy h as a memcpy node of built graph gh after deps, which holds h's staging memory
 * from then on; its handle appended to *out (*nout).  *taken says whether the node was
 * made (and the memory is its). */
static CUresult add_node(struct ds_tenant *t, const struct ds_hcap *h, uint64_t gh,
                         const uint64_t *deps, uint32_t ndeps, uint64_t **out,
                         uint32_t *nout, int *taken)
{
    ds_node_params p = { .kind = DS_NODE_MEMCPY };
    ds_handle node;
    CUresult rc;

    p.ds_node_params_u.copy = h->copy;
    *taken = 0;
    if ((rc = ds__gnode_add(t, gh, &p, deps, ndeps, &node)) != CUDA_SUCCESS)
        return rc;
    ds__gnode_of(t, node, gh)->gmem = h->m;
    *taken = 1;
    return ds__gnode_append_handle(out, nout, node) == 0 ? CUDA_SUCCESS
                                                         : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult ds__ops_ghcopy_nodes(struct ds_tenant *t, uint64_t id, int to_device, uint64_t gh,
                              const uint64_t *deps, uint32_t ndeps, uint64_t **out,
                              uint32_t *nout)
{
    CUresult rc = CUDA_SUCCESS;
    uint32_t kept = 0;
    int taken = 0;

    for (uint32_t i = 0; i < t->nhcap; i++) {
        struct ds_hcap h = t->hcap[i];

        if (h.capture == id && id != 0 && rc == CUDA_SUCCESS &&
            (h.copy.host == DS_COPY_SRC_HOST) == (to_device != 0))
            rc = add_node(t, &h, gh, deps, ndeps, out, nout, &taken);
        else
            taken = 0;
        /* A copy not taken stays the capture's, which releases it when it ends. */
        if (!taken)
            t->hcap[kept++] = h;
    }
    t->nhcap = kept;
    return rc;
}

void ds__ops_ghcopy_drop_captures(struct ds_tenant *t)
{
    for (uint32_t i = 0; i < t->nhcap; i++)
        ds__ops_gmem_release(t, t->hcap[i].m);
    free(t->hcap);
    t->hcap = NULL;
    t->nhcap = 0;
}

/* Copy c joins the calls stage s hands the tenant. */
static CUresult add_call(struct ds_gstage *s, const ds_memcpy_node *c)
{
    ds_stage_call *calls = realloc(s->calls, (s->ncalls + 1) * sizeof(*calls));
    uint64_t *nodes;

    if (calls == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->calls = calls;
    if ((nodes = realloc(s->call_nodes, (s->ncalls + 1) * sizeof(*nodes))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->call_nodes = nodes;
    calls[s->ncalls].kind = DS_NODE_MEMCPY;
    calls[s->ncalls].ds_stage_call_u.copy = *c;
    /* The copies are no nodes the tenant can name, so none can be disabled. */
    nodes[s->ncalls++] = 0;
    return CUDA_SUCCESS;
}

/* e's stages for captured graph g: the copies to the device, when there are any; then
 * g's instance, followed by the copies to the host. */
static CUresult make_stages(struct ds_tenant *t, const struct ds_vgraph *g, uint64_t flags,
                            struct ds_vgraph *e)
{
    struct ds_gstage *last;
    CUresult rc;

    e->nstages = 1;
    for (uint32_t i = 0; i < g->nhcopies && e->nstages == 1; i++)
        if (g->hcopies[i].host == DS_COPY_SRC_HOST)
            e->nstages = 2;
    if ((e->stages = calloc(e->nstages, sizeof(*e->stages))) == NULL) {
        e->nstages = 0;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    last = &e->stages[e->nstages - 1];
    rc = ds_error_to_cu(t->ops->graph_instantiate(t->be, g->real, flags, &last->e));
    for (uint32_t i = 0; i < g->nhcopies && rc == CUDA_SUCCESS; i++)
        rc = add_call(g->hcopies[i].host == DS_COPY_SRC_HOST ? &e->stages[0] : last,
                      &g->hcopies[i]);
    return rc;
}

CUresult ds__ops_ghcopy_stage(struct ds_tenant *t, const struct ds_vgraph *g,
                              struct ds_vgraph *x)
{
    CUresult rc = make_stages(t, g, x->flags, x);

    return rc == CUDA_SUCCESS ? ds__ops_gexec_pin_events(t, g, x) : rc;
}
