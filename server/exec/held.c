#include "held.h"

#include "detshare.h"
#include "ds_clock.h"
#include "ds_error.h"

#include <stdlib.h>

void ds__held_init(struct ds_held *q)
{
    q->head = NULL;
    q->tail = &q->head;
    q->count = 0;
    q->since_ns = 0;
}

int ds__held_is_launch(unsigned long proc)
{
    return proc == DS_LAUNCH || proc == DS_GRAPH_LAUNCH;
}

/* The calls that neither read nor change anything held work could touch, so need not
 * wait behind it: they make new objects, or read what no stream-ordered work alters.
 * Everything else (a procedure added later too) keeps its place in line. */
static int runs_ahead(unsigned long proc)
{
    switch (proc) {
    case DS_HELLO:
    case DS_PRIMARY_GET_STATE:
    case DS_CTX_GET_INFO:
    case DS_CTX_QUERY:
    case DS_DEV_QUERY:
    case DS_CTX_SET_FLAGS:
    case DS_MEM_ALLOC:
    case DS_MEM_ALLOC_PITCH:
    case DS_MEM_GET_INFO:
    case DS_MEM_GET_RANGE:
    case DS_HOST_MAP:
    case DS_STREAM_CREATE:
    case DS_STREAM_GET_INFO:
    case DS_EVENT_CREATE:
    case DS_MODULE_LOAD:
    case DS_MODULE_GET_FUNCTION:
    case DS_MODULE_GET_GLOBAL:
    case DS_MODULE_KERNELS:
    case DS_FUNC_GET_ATTRIBUTE:
    case DS_OCCUPANCY:
    case DS_GRAPH_NODE_COUNT:
    case DS_GRAPH_CREATE:
    case DS_GRAPH_ADD_NODE:
    case DS_GRAPH_EDGES:
    case DS_GRAPH_QUERY:
    case DS_GRAPH_NODE_INFO:
    case DS_GRAPH_CLONE:
    case DS_VMM_GRANULARITY:
    case DS_VMM_RESERVE:
    case DS_VMM_CREATE:
    case DS_VMM_GET_ACCESS:
    case DS_VMM_GET_PROP:
    case DS_TENSORMAP_TILED:
    case DS_TENSORMAP_IM2COL:
    case DS_TENSORMAP_IM2COL_WIDE:
    case DS_TENSORMAP_REPLACE:
    case DS_IPC_MEM_EXPORT:
    case DS_IPC_MEM_OPEN:
    case DS_IPC_EVENT_OPEN:
    case DS_PEER_EXPORT:
    case DS_PEER_OPEN:
    case DS_PEER_EVENT_OPEN:
        return 1;
    default:
        return 0;
    }
}

int ds__held_must_hold(const struct ds_held *q, unsigned long proc, int (*gate_closed)(void))
{
    if (q->count > 0)
        return !runs_ahead(proc);
    return ds__held_is_launch(proc) && gate_closed();
}

int ds__held_push(struct ds_held *q, unsigned long proc, uint32_t xid, void *args)
{
    struct ds_held_call *c = malloc(sizeof(*c));

    if (c == NULL)
        return DS_ENOMEM;
    *c = (struct ds_held_call){ .proc = proc, .xid = xid, .args = args };
    if (q->count++ == 0)
        q->since_ns = ds_now_ns();
    *q->tail = c;
    q->tail = &c->next;
    return 0;
}

struct ds_held_call *ds__held_pop(struct ds_held *q, uint64_t *held_ns)
{
    struct ds_held_call *c = q->head;

    *held_ns = 0;
    if (c == NULL)
        return NULL;
    q->head = c->next;
    if (--q->count == 0) {
        q->tail = &q->head;
        *held_ns = ds_now_ns() - q->since_ns;
    }
    return c;
}
