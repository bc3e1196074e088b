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
    return ds__cuda_err(r);
}

int ds__cuda_capture_end(struct ds_backend *b, struct ds_bstream *s, struct ds_bgraph **out)
{
    struct ds_bgraph *g = calloc(1, sizeof(*g));
    CUresult r;

    if (g == NULL)
        return DS_ENOMEM;
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
    b->cu.cuGraphDestroy(g->g);
    free(g);
}

void ds__cuda_graph_exec_destroy(struct ds_backend *b, struct ds_bgexec *e)
{
    b->cu.cuGraphExecDestroy(e->e);
    free(e);
}
