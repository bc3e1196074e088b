/* The cuda backend's stream capture and graphs, done by the driver on the real streams. */
#include "cuda_backend.h"

#include "ds_error.h"

#include <stdlib.h>
#include <string.h>

/* Capture happens on the real stream, so the graph is the driver's own: kernels with
 * their parameters, fills and device copies exactly as submitted. */
int ds__cuda_capture_begin(struct ds_backend *b, struct ds_bstream *s, int mode)
{
    CUresult r = b->cu.cuStreamBeginCapture(s->s, (CUstreamCaptureMode)mode);

    s->capturing = r == CUDA_SUCCESS;
    b->captures += s->capturing;
    return ds__cuda_err(r);
}

int ds__cuda_capture_end(struct ds_backend *b, struct ds_bstream *s, struct ds_bgraph **out)
{
    struct ds_bgraph *g = calloc(1, sizeof(*g));
    CUresult r;

    if (g == NULL)
        return DS_ENOMEM;
    b->captures -= s->capturing;
    s->capturing = 0;
    r = b->cu.cuStreamEndCapture(s->s, &g->g);
    if (r != CUDA_SUCCESS) {
        free(g);
        return ds__cuda_err(r);
    }
    *out = g;
    return 0;
}

int ds__cuda_capture_info(struct ds_backend *b, struct ds_bstream *s, int *status,
                          uint64_t *id)
{
    CUstreamCaptureStatus st;
    cuuint64_t cid = 0;
    CUresult r = b->cu.cuStreamGetCaptureInfo(s->s, &st, &cid, NULL, NULL, NULL, NULL);

    *status = (int)st;
    *id = cid;
    return ds__cuda_err(r);
}

int ds__cuda_graph_instantiate(struct ds_backend *b, struct ds_bgraph *g, uint64_t flags,
                               struct ds_bgexec **out)
{
    struct ds_bgexec *e = calloc(1, sizeof(*e));
    CUresult r;

    if (e == NULL)
        return DS_ENOMEM;
    r = b->cu.cuGraphInstantiateWithFlags(&e->e, g->g, flags);
    if (r != CUDA_SUCCESS) {
        free(e);
        return ds__cuda_err(r);
    }
    *out = e;
    return 0;
}

int ds__cuda_graph_launch(struct ds_backend *b, struct ds_bgexec *e, struct ds_bstream *s)
{
    int rc;

    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    return rc ? rc : ds__cuda_err(b->cu.cuGraphLaunch(e->e, s->s));
}

int ds__cuda_graph_node_count(struct ds_backend *b, struct ds_bgraph *g, uint64_t *n)
{
    size_t count = 0;
    CUresult r = b->cu.cuGraphGetNodes(g->g, NULL, &count);

    *n = count;
    return ds__cuda_err(r);
}

void ds__cuda_graph_destroy(struct ds_backend *b, struct ds_bgraph *g)
{
    if (!g->borrowed)
        b->cu.cuGraphDestroy(g->g);
    DS_LIST_FREE(struct ds_bnode, g->nodes, free);
    DS_LIST_FREE(struct ds_bcond, g->conds, free);
    free(g);
}

int ds__cuda_graph_cond_create(struct ds_backend *b, struct ds_bgraph *g, unsigned dflt,
                               unsigned flags, struct ds_bcond **out, uint64_t *value)
{
    struct ds_bcond *c = calloc(1, sizeof(*c));
    CUresult r;

    if (c == NULL)
        return DS_ENOMEM;
    r = b->cu.cuGraphConditionalHandleCreate(&c->h, g->g, b->ctx, dflt, flags);
    if (r != CUDA_SUCCESS) {
        free(c);
        return ds__cuda_err(r);
    }
    c->next = g->conds;
    g->conds = c;
    *value = c->h;
    *out = c;
    return 0;
}

/* A conditional node; the driver makes its body graphs, and points phGraph_out at its own
 * array of them.  They are lent to d->bodies. */
static CUresult add_cond(struct ds_backend *b, CUgraph g, const struct ds_gnode_desc *d,
                         const CUgraphNode *deps, size_t ndeps, CUgraphNode *out)
{
    CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_CONDITIONAL };
    CUresult r;
    unsigned made = 0;

    np.conditional.handle = d->cond->h;
    np.conditional.type = (CUgraphConditionalNodeType)d->cond_type;
    np.conditional.size = d->nbodies;
    np.conditional.ctx = b->ctx;
    r = b->cu.cuGraphAddNode(out, g, deps, NULL, ndeps, &np);
    for (; r == CUDA_SUCCESS && made < d->nbodies; made++) {
        if ((d->bodies[made] = calloc(1, sizeof(**d->bodies))) == NULL)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else
            *d->bodies[made] =
                (struct ds_bgraph){ .g = np.conditional.phGraph_out[made], .borrowed = 1 };
    }
    if (r != CUDA_SUCCESS && made > 0) {
        for (unsigned i = 0; i < made; i++) {
            free(d->bodies[i]);
            d->bodies[i] = NULL;
        }
        b->cu.cuGraphDestroyNode(*out);
    }
    return r;
}

void ds__cuda_graph_exec_destroy(struct ds_backend *b, struct ds_bgexec *e)
{
    b->cu.cuGraphExecDestroy(e->e);
    free(e);
}

int ds__cuda_graph_create(struct ds_backend *b, unsigned flags, struct ds_bgraph **out)
{
    struct ds_bgraph *g = calloc(1, sizeof(*g));
    CUresult r;

    if (g == NULL)
        return DS_ENOMEM;
    if ((r = b->cu.cuGraphCreate(&g->g, flags)) != CUDA_SUCCESS) {
        free(g);
        return ds__cuda_err(r);
    }
    *out = g;
    return 0;
}

/* The driver's form of a kernel node: the library's kernel in the tenant's context, its
 * parameters as one buffer (the driver copies them). */
static CUDA_KERNEL_NODE_PARAMS kernel_params(struct ds_backend *b, const struct ds_gnode_desc *d,
                                             void **extra)
{
    const struct ds_launch *l = &d->l;

    return (CUDA_KERNEL_NODE_PARAMS){
        .gridDimX = l->grid[0], .gridDimY = l->grid[1], .gridDimZ = l->grid[2],
        .blockDimX = l->block[0], .blockDimY = l->block[1], .blockDimZ = l->block[2],
        .sharedMemBytes = l->shared_mem, .extra = l->param_bytes ? extra : NULL,
        .kern = d->f->k, .ctx = b->ctx,
    };
}

static CUresult add_kernel(struct ds_backend *b, CUgraph g, const struct ds_gnode_desc *d,
                           const CUgraphNode *deps, size_t ndeps, CUgraphNode *out)
{
    size_t bytes = d->l.param_bytes;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)d->l.params,
                      CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END };
    CUDA_KERNEL_NODE_PARAMS p = kernel_params(b, d, extra);
    CUresult r = b->cu.cuGraphAddKernelNode(out, g, deps, ndeps, &p);

    for (unsigned i = 0; r == CUDA_SUCCESS && i < d->l.nattrs; i++)
        r = b->cu.cuGraphKernelNodeSetAttribute(*out, d->l.attrs[i].id, &d->l.attrs[i].value);
    return r;
}

static CUDA_MEMSET_NODE_PARAMS fill_params(const struct ds_gnode_desc *d)
{
    return (CUDA_MEMSET_NODE_PARAMS){ .dst = d->dst, .pitch = d->pitch, .value = d->value,
                                      .elementSize = d->elem_size, .width = d->width,
                                      .height = d->height };
}

static CUDA_MEMCPY3D copy_params(const struct ds_gnode_desc *d)
{
    return (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d->src,
                            .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = d->dst,
                            .WidthInBytes = d->n, .Height = 1, .Depth = 1 };
}

/* A batch memory operation node, in graph g (adding: out set), in its graph (e NULL) or
 * in e.  The driver copies the operations. */
static CUresult memop_node(struct ds_backend *b, CUgraph g, const struct ds_gnode_desc *d,
                           const CUgraphNode *deps, size_t ndeps, CUgraphNode *out,
                           struct ds_bgexec *e, CUgraphNode n)
{
    CUDA_BATCH_MEM_OP_NODE_PARAMS p = { .ctx = b->ctx, .count = d->nmemops };
    CUresult r;

    if ((p.paramArray = ds__cuda_memop_params(d->memops, d->nmemops)) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (out != NULL)
        r = b->cu.cuGraphAddBatchMemOpNode(out, g, deps, ndeps, &p);
    else if (e != NULL)
        r = b->cu.cuGraphExecBatchMemOpNodeSetParams(e->e, n, &p);
    else
        r = b->cu.cuGraphBatchMemOpNodeSetParams(n, &p);
    free(p.paramArray);
    return r;
}

static CUresult add_node(struct ds_backend *b, CUgraph g, const struct ds_gnode_desc *d,
                         const CUgraphNode *deps, size_t ndeps, CUgraphNode *out)
{
    CUDA_MEMSET_NODE_PARAMS ms = fill_params(d);
    CUDA_MEMCPY3D mc = copy_params(d);

    switch (d->kind) {
    case DS_GNODE_KERNEL:
        return add_kernel(b, g, d, deps, ndeps, out);
    case DS_GNODE_MEMSET:
        return b->cu.cuGraphAddMemsetNode(out, g, deps, ndeps, &ms, b->ctx);
    case DS_GNODE_MEMCPY:
        return b->cu.cuGraphAddMemcpyNode(out, g, deps, ndeps, &mc, b->ctx);
    case DS_GNODE_EVENT_RECORD:
        return b->cu.cuGraphAddEventRecordNode(out, g, deps, ndeps, d->event->e);
    case DS_GNODE_EVENT_WAIT:
        return b->cu.cuGraphAddEventWaitNode(out, g, deps, ndeps, d->event->e);
    case DS_GNODE_CHILD:
        return b->cu.cuGraphAddChildGraphNode(out, g, deps, ndeps, d->child->g);
    case DS_GNODE_COND:
        return add_cond(b, g, d, deps, ndeps, out);
    case DS_GNODE_MEMOP:
        return memop_node(b, g, d, deps, ndeps, out, NULL, NULL);
    default:
        return b->cu.cuGraphAddEmptyNode(out, g, deps, ndeps);
    }
}

int ds__cuda_graph_add_node(struct ds_backend *b, struct ds_bgraph *g,
                            const struct ds_gnode_desc *d, struct ds_bnode *const *deps,
                            size_t ndeps, struct ds_bnode **out)
{
    struct ds_bnode *n = calloc(1, sizeof(*n));
    CUgraphNode *dn = ndeps > 0 ? malloc(ndeps * sizeof(*dn)) : NULL;
    CUresult r;

    if (n == NULL || (ndeps > 0 && dn == NULL)) {
        free(n);
        free(dn);
        return DS_ENOMEM;
    }
    for (size_t i = 0; i < ndeps; i++)
        dn[i] = deps[i]->n;
    r = add_node(b, g->g, d, dn, ndeps, &n->n);
    free(dn);
    if (r != CUDA_SUCCESS) {
        free(n);
        return ds__cuda_err(r);
    }
    n->next = g->nodes;
    g->nodes = n;
    *out = n;
    return 0;
}

void ds__cuda_graph_node_destroy(struct ds_backend *b, struct ds_bgraph *g, struct ds_bnode *n)
{
    struct ds_bnode **at = &g->nodes;

    b->cu.cuGraphDestroyNode(n->n);
    while (*at != n)
        at = &(*at)->next;
    *at = n->next;
    free(n);
}

int ds__cuda_graph_edge(struct ds_backend *b, struct ds_bgraph *g, struct ds_bnode *from,
                        struct ds_bnode *to, int add)
{
    if (add)
        return ds__cuda_err(b->cu.cuGraphAddDependencies(g->g, &from->n, &to->n, NULL, 1));
    return ds__cuda_err(b->cu.cuGraphRemoveDependencies(g->g, &from->n, &to->n, NULL, 1));
}

/* An event node's new event, in its graph (e NULL) or in e. */
static CUresult set_event(struct ds_backend *b, struct ds_bgexec *e, struct ds_bnode *n,
                          const struct ds_gnode_desc *d)
{
    if (d->kind == DS_GNODE_EVENT_RECORD)
        return e != NULL ? b->cu.cuGraphExecEventRecordNodeSetEvent(e->e, n->n, d->event->e)
                         : b->cu.cuGraphEventRecordNodeSetEvent(n->n, d->event->e);
    return e != NULL ? b->cu.cuGraphExecEventWaitNodeSetEvent(e->e, n->n, d->event->e)
                     : b->cu.cuGraphEventWaitNodeSetEvent(n->n, d->event->e);
}

/* A kernel node's new parameters, in its graph (e NULL), with its launch attributes, or
 * in e, where the driver takes no attributes. */
static CUresult set_kernel(struct ds_backend *b, struct ds_bgexec *e, struct ds_bnode *n,
                           const struct ds_gnode_desc *d)
{
    size_t bytes = d->l.param_bytes;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)d->l.params,
                      CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END };
    CUDA_KERNEL_NODE_PARAMS p = kernel_params(b, d, extra);
    CUresult r;

    if (e != NULL)
        return b->cu.cuGraphExecKernelNodeSetParams(e->e, n->n, &p);
    r = b->cu.cuGraphKernelNodeSetParams(n->n, &p);
    for (unsigned i = 0; r == CUDA_SUCCESS && i < d->l.nattrs; i++)
        r = b->cu.cuGraphKernelNodeSetAttribute(n->n, d->l.attrs[i].id, &d->l.attrs[i].value);
    return r;
}

/* A memset or memcpy node's new range, in its graph (e NULL) or in e. */
static CUresult set_copy(struct ds_backend *b, struct ds_bgexec *e, struct ds_bnode *n,
                         const struct ds_gnode_desc *d)
{
    CUDA_MEMSET_NODE_PARAMS ms = fill_params(d);
    CUDA_MEMCPY3D mc = copy_params(d);

    if (d->kind == DS_GNODE_MEMSET)
        return e != NULL ? b->cu.cuGraphExecMemsetNodeSetParams(e->e, n->n, &ms, b->ctx)
                         : b->cu.cuGraphMemsetNodeSetParams(n->n, &ms);
    return e != NULL ? b->cu.cuGraphExecMemcpyNodeSetParams(e->e, n->n, &mc, b->ctx)
                     : b->cu.cuGraphMemcpyNodeSetParams(n->n, &mc);
}

int ds__cuda_graph_node_set(struct ds_backend *b, struct ds_bgraph *g, struct ds_bgexec *e,
                            struct ds_bnode *n, const struct ds_gnode_desc *d)
{
    (void)g;
    switch (d->kind) {
    case DS_GNODE_EVENT_RECORD:
    case DS_GNODE_EVENT_WAIT:
        return ds__cuda_err(set_event(b, e, n, d));
    case DS_GNODE_MEMSET:
    case DS_GNODE_MEMCPY:
        return ds__cuda_err(set_copy(b, e, n, d));
    case DS_GNODE_CHILD:
        if (e == NULL)
            return DS_EINVAL;
        return ds__cuda_err(b->cu.cuGraphExecChildGraphNodeSetParams(e->e, n->n, d->child->g));
    case DS_GNODE_KERNEL:
        return ds__cuda_err(set_kernel(b, e, n, d));
    case DS_GNODE_MEMOP:
        return ds__cuda_err(memop_node(b, NULL, d, NULL, 0, NULL, e, n->n));
    default:
        return DS_EINVAL;
    }
}

/* The driver's own update; a refusal is a result, not a failure of the call. */
int ds__cuda_graph_exec_update(struct ds_backend *b, struct ds_bgexec *e, struct ds_bgraph *g,
                               int *result)
{
    CUgraphExecUpdateResultInfo info = { 0 };
    CUresult r = b->cu.cuGraphExecUpdate(e->e, g->g, &info);

    *result = (int)info.result;
    if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
        return 0;
    if (r == CUDA_SUCCESS)
        *result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    return ds__cuda_err(r);
}

int ds__cuda_graph_node_enable(struct ds_backend *b, struct ds_bgexec *e, struct ds_bnode *n,
                               int on)
{
    return ds__cuda_err(b->cu.cuGraphNodeSetEnabled(e->e, n->n, on != 0));
}
