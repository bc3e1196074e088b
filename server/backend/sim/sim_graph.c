/* The sim device's stream capture and graphs: captured work is recorded, and replayed
 * with its data effects each time the graph is launched. */
#include "sim.h"

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

int ds__sim_graph_instantiate(struct ds_backend *b, struct ds_bgraph *g, uint64_t flags,
                              struct ds_bgexec **out)
{
    struct ds_bgexec *e = calloc(1, sizeof(*e));
    struct sim_work **tail;

    (void)b;
    (void)flags;
    if (e == NULL)
        return DS_ENOMEM;
    tail = &e->work;
    for (const struct sim_work *w = g->work; w != NULL; w = w->next) {
        *tail = malloc(sizeof(**tail));
        if (*tail == NULL) {
            ds__sim_free_work(e->work);
            free(e);
            return DS_ENOMEM;
        }
        **tail = *w;
        (*tail)->next = NULL;
        tail = &(*tail)->next;
    }
    *out = e;
    return 0;
}

int ds__sim_graph_launch(struct ds_backend *b, struct ds_bgexec *e, struct ds_bstream *s)
{
    if (s != NULL && s->capturing)
        return CAPTURE_UNSUPPORTED;
    for (const struct sim_work *w = e->work; w != NULL; w = w->next) {
        int rc = ds__sim_work_run(b, s, w);

        if (rc != 0)
            return rc;
    }
    return 0;
}

int ds__sim_graph_node_count(struct ds_backend *b, struct ds_bgraph *g, uint64_t *n)
{
    (void)b;
    *n = 0;
    for (const struct sim_work *w = g->work; w != NULL; w = w->next)
        (*n)++;
    return 0;
}

void ds__sim_graph_destroy(struct ds_backend *b, struct ds_bgraph *g)
{
    (void)b;
    ds__sim_free_work(g->work);
    free(g);
}

void ds__sim_graph_exec_destroy(struct ds_backend *b, struct ds_bgexec *e)
{
    (void)b;
    ds__sim_free_work(e->work);
    free(e);
}
