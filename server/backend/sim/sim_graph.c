/* The sim device's stream capture and graphs: captured work is recorded, and replayed
 * with its data effects each time the graph is launched. */
#include "sim_core.h"

#include "ds_error.h"
#include "ds_image.h"

#include <stdlib.h>
#include <string.h>

/* Capture on the sim covers work on the one stream: fork and join through events would
 * need graph edges it does not model, so events on a capturing stream are refused. */
#define CAPTURE_UNSUPPORTED DS_ECU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)

int ds__sim_capture_begin(struct ds_backend *b, struct ds_bstream *s, int mode)
{
    (void)mode;
    s->capturing = 1;
    s->capture_id = ++b->next_capture_id;
    s->captured = NULL;
    s->captured_tail = &s->captured;
    return 0;
}

int ds__sim_capture_end(struct ds_backend *b, struct ds_bstream *s, struct ds_bgraph **out)
{
    struct ds_bgraph *g = calloc(1, sizeof(*g));

    (void)b;
    s->capturing = 0;
    if (g == NULL) {
        ds__sim_free_work(s->captured);
        s->captured = NULL;
        return DS_ENOMEM;
    }
    g->work = s->captured;
    s->captured = NULL;
    *out = g;
    return 0;
}

int ds__sim_capture_info(struct ds_backend *b, struct ds_bstream *s, int *status,
                         uint64_t *id)
{
    (void)b;
    *status = s->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    *id = s->capturing ? s->capture_id : 0;
    return 0;
}

/* Append a copy of w, from node `node` (0: none), at *tail; returns the new tail or NULL. */
static struct sim_work **append(struct sim_work **tail, const struct sim_work *w, uint64_t node)
{
    *tail = malloc(sizeof(**tail));
    if (*tail == NULL)
        return NULL;
    **tail = *w;
    (*tail)->node = node;
    (*tail)->next = NULL;
    return &(*tail)->next;
}

static int all_placed(const struct ds_bnode *n)
{
    for (size_t i = 0; i < n->ndeps; i++)
        if (!n->deps[i]->placed)
            return 0;
    return 1;
}

static int flatten(struct ds_bgraph *g, struct sim_work **out, struct sim_cond_run **runs);

static void free_run(struct sim_cond_run *r)
{
    for (unsigned i = 0; i < r->n; i++)
        ds__sim_free_work(r->bodies[i]);
    free(r->bodies);
    free(r);
}

static void free_runs(struct sim_cond_run *r)
{
    while (r != NULL) {
        struct sim_cond_run *next = r->next;

        free_run(r);
        r = next;
    }
}

/* Conditional node n as it runs in an instantiated graph, its bodies flattened, added
 * to *runs; its work item in *w.  Without runs (a child graph's copy), DS_EINVAL. */
static int cond_work(const struct ds_bnode *n, struct sim_cond_run **runs, struct sim_work *w)
{
    struct sim_cond_run *r;
    int rc = 0;

    if (runs == NULL || (r = calloc(1, sizeof(*r))) == NULL)
        return runs == NULL ? DS_EINVAL : DS_ENOMEM;
    *r = (struct sim_cond_run){ .value = n->cond->dflt, .dflt = n->cond->dflt,
                                .flags = n->cond->flags, .type = n->cond_type };
    if ((r->bodies = calloc(n->nbodies, sizeof(*r->bodies))) == NULL) {
        free(r);
        return DS_ENOMEM;
    }
    for (; r->n < n->nbodies && rc == 0; r->n++)
        rc = flatten(n->bodies[r->n], &r->bodies[r->n], runs);
    r->next = *runs;
    *runs = r;
    *w = (struct sim_work){ .kind = W_COND, .cond = r };
    return rc;
}

/* Node n's work at *tail; returns the new tail, or NULL with *rc set. */
static struct sim_work **place(struct ds_bnode *n, struct sim_work **tail,
                               struct sim_cond_run **runs, int *rc)
{
    struct sim_work w;

    if (n->cond != NULL) {
        if ((*rc = cond_work(n, runs, &w)) != 0)
            return NULL;
        return append(tail, &w, n->id);
    }
    if (n->w.kind != W_NONE)
        tail = append(tail, &n->w, n->id);
    for (const struct sim_work *x = n->body; x != NULL && tail != NULL; x = x->next)
        tail = append(tail, x, n->id);
    return tail;
}

/* A built graph's work in an order that respects every edge (earlier-added nodes first
 * among those ready), or DS_EINVAL when a cycle leaves nodes that can never run. */
static int place_nodes(struct ds_bgraph *g, struct sim_work **tail, struct sim_cond_run **runs)
{
    int rc = DS_ENOMEM;

    size_t left = 0, progress = 1;

    for (struct ds_bnode *n = g->nodes; n != NULL; n = n->next, left++)
        n->placed = 0;
    while (left > 0 && progress) {
        progress = 0;
        for (struct ds_bnode *n = g->nodes; n != NULL && tail != NULL; n = n->next) {
            if (n->placed || !all_placed(n))
                continue;
            n->placed = 1;
            left--;
            progress = 1;
            tail = place(n, tail, runs, &rc);
        }
        if (tail == NULL)
            return rc;
    }
    return left > 0 ? DS_ECU(CUDA_ERROR_INVALID_VALUE) : 0;
}

/* Graph g's work as one list in *out, in an order that respects its edges: captured
 * work first, then its nodes'.  Its conditional nodes' runs go to *runs. */
static int flatten(struct ds_bgraph *g, struct sim_work **out, struct sim_cond_run **runs)
{
    struct sim_work **tail = out;
    int rc;

    *out = NULL;
    for (const struct sim_work *w = g->work; w != NULL && tail != NULL; w = w->next)
        tail = append(tail, w, 0);
    rc = tail == NULL ? DS_ENOMEM : place_nodes(g, tail, runs);
    if (rc != 0) {
        ds__sim_free_work(*out);
        *out = NULL;
    }
    return rc;
}

int ds__sim_graph_instantiate(struct ds_backend *b, struct ds_bgraph *g, uint64_t flags,
                              struct ds_bgexec **out)
{
    struct ds_bgexec *e = calloc(1, sizeof(*e));
    int rc;

    (void)b;
    (void)flags;
    if (e == NULL)
        return DS_ENOMEM;
    if ((rc = flatten(g, &e->work, &e->conds)) != 0) {
        free_runs(e->conds);
        free(e);
        return rc;
    }
    *out = e;
    return 0;
}

static int run_list(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w);

/* A conditional node: its value decides which body runs, and how often.  Kernels set
 * no value on the sim, so a while loop that starts true would never end: refused. */
static int run_cond(struct ds_backend *b, struct ds_bstream *s, struct sim_cond_run *r)
{
    if (r->flags & CU_GRAPH_COND_ASSIGN_DEFAULT)
        r->value = r->dflt;
    switch (r->type) {
    case CU_GRAPH_COND_TYPE_IF:
        if (r->value != 0)
            return run_list(b, s, r->bodies[0]);
        return r->n > 1 ? run_list(b, s, r->bodies[1]) : 0;
    case CU_GRAPH_COND_TYPE_WHILE:
        return r->value != 0 ? DS_ECU(CUDA_ERROR_NOT_SUPPORTED) : 0;
    default:
        return r->value < r->n ? run_list(b, s, r->bodies[r->value]) : 0;
    }
}

static int run_list(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w)
{
    for (; w != NULL; w = w->next) {
        int rc = w->off ? 0 : w->kind == W_COND ? run_cond(b, s, w->cond)
                                                : ds__sim_work_run(b, s, w);

        if (rc != 0)
            return rc;
    }
    return 0;
}

int ds__sim_graph_launch(struct ds_backend *b, struct ds_bgexec *e, struct ds_bstream *s)
{
    if (s != NULL && s->capturing)
        return CAPTURE_UNSUPPORTED;
    return run_list(b, s, e->work);
}

int ds__sim_graph_node_count(struct ds_backend *b, struct ds_bgraph *g, uint64_t *n)
{
    (void)b;
    *n = 0;
    for (const struct sim_work *w = g->work; w != NULL; w = w->next)
        (*n)++;
    for (const struct ds_bnode *v = g->nodes; v != NULL; v = v->next)
        (*n)++;
    return 0;
}

static void free_node(struct ds_bnode *n)
{
    ds__sim_free_work(n->body);
    free(n->bodies);
    free(n->deps);
    free(n);
}

void ds__sim_graph_destroy(struct ds_backend *b, struct ds_bgraph *g)
{
    (void)b;
    ds__sim_free_work(g->work);
    DS_LIST_FREE(struct ds_bnode, g->nodes, free_node);
    DS_LIST_FREE(struct ds_bcond, g->conds, free);
    free(g);
}

int ds__sim_graph_cond_create(struct ds_backend *b, struct ds_bgraph *g, unsigned dflt,
                              unsigned flags, struct ds_bcond **out, uint64_t *value)
{
    struct ds_bcond *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return DS_ENOMEM;
    c->dflt = dflt;
    c->flags = flags;
    c->next = g->conds;
    g->conds = c;
    *value = ++b->next_node_id;
    *out = c;
    return 0;
}

void ds__sim_graph_exec_destroy(struct ds_backend *b, struct ds_bgexec *e)
{
    (void)b;
    ds__sim_free_work(e->work);
    free_runs(e->conds);
    free(e);
}

int ds__sim_graph_create(struct ds_backend *b, unsigned flags, struct ds_bgraph **out)
{
    (void)b;
    (void)flags;
    *out = calloc(1, sizeof(**out));
    return *out == NULL ? DS_ENOMEM : 0;
}

/* What node d does when the graph runs, as the stream work it stands for. */
static void node_work(struct ds_backend *b, const struct ds_gnode_desc *d, struct sim_work *w)
{
    memset(w, 0, sizeof(*w));
    switch (d->kind) {
    case DS_GNODE_KERNEL:
        ds__sim_kernel_work(b, &d->l, 0, w);
        break;
    case DS_GNODE_MEMSET:
        *w = (struct sim_work){ .kind = W_FILL, .dst = d->dst, .pitch = d->pitch,
                                .value = d->value, .elem = d->elem_size, .width = d->width,
                                .height = d->height };
        break;
    case DS_GNODE_MEMCPY:
        *w = (struct sim_work){ .kind = W_COPY, .dst = d->dst, .src = d->src, .n = d->n };
        break;
    case DS_GNODE_EVENT_RECORD:
    case DS_GNODE_EVENT_WAIT:
        w->kind = d->kind == DS_GNODE_EVENT_RECORD ? W_RECORD : W_WAIT;
        w->event = d->event;
        break;
    default:
        w->kind = W_NONE;
    }
}

/* A conditional node's body graphs, new and empty, in d->bodies; the node keeps them in
 * its own array but not their ownership (graph_destroy frees each). */
static int add_bodies(struct ds_bnode *n, const struct ds_gnode_desc *d)
{
    if ((n->bodies = calloc(d->nbodies, sizeof(*n->bodies))) == NULL)
        return DS_ENOMEM;
    for (unsigned i = 0; i < d->nbodies; i++) {
        if ((d->bodies[i] = calloc(1, sizeof(**d->bodies))) == NULL) {
            while (i-- > 0) {
                free(d->bodies[i]);
                d->bodies[i] = NULL;
            }
            return DS_ENOMEM;
        }
        n->bodies[i] = d->bodies[i];
    }
    n->cond = d->cond;
    n->cond_type = d->cond_type;
    n->nbodies = d->nbodies;
    return 0;
}

int ds__sim_graph_add_node(struct ds_backend *b, struct ds_bgraph *g,
                           const struct ds_gnode_desc *d, struct ds_bnode *const *deps,
                           size_t ndeps, struct ds_bnode **out)
{
    struct ds_bnode *n = calloc(1, sizeof(*n)), **at = &g->nodes;
    int rc;

    if (n == NULL || (ndeps > 0 && (n->deps = malloc(ndeps * sizeof(*deps))) == NULL)) {
        free(n);
        return DS_ENOMEM;
    }
    if (ndeps > 0)
        memcpy(n->deps, deps, ndeps * sizeof(*deps));
    n->ndeps = ndeps;
    n->id = ++b->next_node_id;
    node_work(b, d, &n->w);
    if (d->kind == DS_GNODE_CHILD && (rc = flatten(d->child, &n->body, NULL)) != 0) {
        free_node(n);
        return rc;
    }
    if (d->kind == DS_GNODE_MEMOP &&
        (rc = ds__sim_memop_list(d->memops, d->nmemops, &n->body)) != 0) {
        free_node(n);
        return rc;
    }
    if (d->kind == DS_GNODE_COND && (rc = add_bodies(n, d)) != 0) {
        free_node(n);
        return rc;
    }
    while (*at != NULL)
        at = &(*at)->next;
    *at = n;
    *out = n;
    return 0;
}

/* Take `from` out of n's dependencies; 1 when it was one. */
static int drop_dep(struct ds_bnode *n, const struct ds_bnode *from)
{
    for (size_t i = 0; i < n->ndeps; i++) {
        if (n->deps[i] == from) {
            n->deps[i] = n->deps[--n->ndeps];
            return 1;
        }
    }
    return 0;
}

void ds__sim_graph_node_destroy(struct ds_backend *b, struct ds_bgraph *g, struct ds_bnode *n)
{
    struct ds_bnode **at = &g->nodes;

    (void)b;
    for (struct ds_bnode *v = g->nodes; v != NULL; v = v->next)
        while (drop_dep(v, n))
            ;
    while (*at != n)
        at = &(*at)->next;
    *at = n->next;
    free_node(n);
}

int ds__sim_graph_edge(struct ds_backend *b, struct ds_bgraph *g, struct ds_bnode *from,
                       struct ds_bnode *to, int add)
{
    struct ds_bnode **deps;

    (void)b;
    (void)g;
    if (!add)
        return drop_dep(to, from) ? 0 : DS_EINVAL;
    deps = realloc(to->deps, (to->ndeps + 1) * sizeof(*deps));
    if (deps == NULL)
        return DS_ENOMEM;
    deps[to->ndeps++] = from;
    to->deps = deps;
    return 0;
}

/* How many work items from `from` on belong to node `id`. */
static long run_of(const struct sim_work *from, uint64_t id)
{
    long n = 0;

    for (; from != NULL && from->node == id; from = from->next)
        n++;
    return n;
}

/* Whether the n items from x on have the kinds of list w's, which has n items. */
static int same_kinds(const struct sim_work *x, const struct sim_work *w, long n)
{
    for (long i = 0; i < n; i++, x = x->next, w = w->next)
        if (w == NULL || x->kind != w->kind)
            return 0;
    return w == NULL;
}

/* A child graph node's new graph, or a batch memory operation node's new operations, in
 * e: the node's new work (body, which is freed) replaces its old, item for item, when it
 * has the same shape (as CUDA requires of an update), else `mismatch`: what the driver
 * answers differs between the two. */
static int set_body(struct ds_bgexec *e, struct ds_bnode *n, struct sim_work *body,
                    CUresult mismatch)
{
    struct sim_work *x = e->work;
    long have;

    while (x != NULL && x->node != n->id)
        x = x->next;
    have = run_of(x, n->id);
    if (!same_kinds(x, body, have)) {
        ds__sim_free_work(body);
        return DS_ECU(mismatch);
    }
    for (const struct sim_work *w = body; w != NULL; w = w->next, x = x->next) {
        struct sim_work *next = x->next;

        *x = *w;
        x->node = n->id;
        x->next = next;
    }
    ds__sim_free_work(body);
    return 0;
}

static int set_child(struct ds_bgexec *e, struct ds_bnode *n, const struct ds_gnode_desc *d)
{
    struct sim_work *body;
    int rc = flatten(d->child, &body, NULL);

    /* As the driver on an H100 (run 80). */
    return rc != 0 ? rc : set_body(e, n, body, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
}

/* A batch memory operation node's new operations: in its graph, its list replaced. */
static int set_memops(struct ds_bgexec *e, struct ds_bnode *n, const struct ds_gnode_desc *d)
{
    struct sim_work *body;
    int rc = ds__sim_memop_list(d->memops, d->nmemops, &body);

    if (rc != 0 || e != NULL)
        return rc != 0 ? rc : set_body(e, n, body, CUDA_ERROR_INVALID_VALUE);
    ds__sim_free_work(n->body);
    n->body = body;
    return 0;
}

/* A kernel node's new launch changes only its modelled time (kernels compute nothing),
 * an event node's only its event, a fill's or copy's its range. */
int ds__sim_graph_node_set(struct ds_backend *b, struct ds_bgraph *g, struct ds_bgexec *e,
                           struct ds_bnode *n, const struct ds_gnode_desc *d)
{
    struct sim_work w;

    (void)g;
    if (d->kind == DS_GNODE_CHILD)
        return e != NULL ? set_child(e, n, d) : DS_EINVAL;
    if (d->kind == DS_GNODE_MEMOP)
        return set_memops(e, n, d);
    node_work(b, d, &w);
    if (e == NULL) {
        n->w = w;
        return 0;
    }
    for (struct sim_work *x = e->work; x != NULL; x = x->next) {
        if (x->node == n->id) {
            struct sim_work *next = x->next;
            int off = x->off;

            *x = w;
            x->node = n->id;
            x->off = off;
            x->next = next;
            return 0;
        }
    }
    return DS_ECU(CUDA_ERROR_INVALID_VALUE);
}

/* Whether lists a and b have as many items, of the same kinds, W_COND items' bodies
 * included. */
static int same_shape(const struct sim_work *a, const struct sim_work *b)
{
    for (; a != NULL && b != NULL; a = a->next, b = b->next) {
        if (a->kind != b->kind)
            return 0;
        if (a->kind != W_COND)
            continue;
        if (a->cond->type != b->cond->type || a->cond->n != b->cond->n)
            return 0;
        for (unsigned i = 0; i < a->cond->n; i++)
            if (!same_shape(a->cond->bodies[i], b->cond->bodies[i]))
                return 0;
    }
    return a == NULL && b == NULL;
}

/* g's work, flattened as an instantiation would, replaces e's item for item; each item
 * keeps the node it stood for in e, so that e's nodes can still be named. */
int ds__sim_graph_exec_update(struct ds_backend *b, struct ds_bgexec *e, struct ds_bgraph *g,
                              int *result)
{
    struct sim_cond_run *runs = NULL;
    struct sim_work *work;
    int rc;

    (void)b;
    if ((rc = flatten(g, &work, &runs)) != 0) {
        free_runs(runs);
        return rc;
    }
    if (!same_shape(e->work, work)) {
        *result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        ds__sim_free_work(work);
        free_runs(runs);
        return 0;
    }
    for (struct sim_work *x = e->work, *w = work; x != NULL; x = x->next, w = w->next) {
        struct sim_work *next = x->next;
        uint64_t node = x->node;
        int off = x->off;

        *x = *w;
        x->node = node;
        x->off = off;
        x->next = next;
    }
    ds__sim_free_work(work);
    free_runs(e->conds);
    e->conds = runs;
    *result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    return 0;
}

/* A disabled node's work items stay in place, skipped, so that enabling it again puts
 * it back where it ran. */
int ds__sim_graph_node_enable(struct ds_backend *b, struct ds_bgexec *e, struct ds_bnode *n,
                              int on)
{
    (void)b;
    for (struct sim_work *x = e->work; x != NULL; x = x->next)
        if (x->node == n->id)
            x->off = !on;
    return 0;
}
