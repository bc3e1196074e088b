/*
 * The metrics endpoint (`--metrics tcp:HOST:PORT` or `unix:PATH`): a minimal HTTP/1.x
 * server in the control process's libuv loop that answers `GET /metrics` (and HEAD) with
 * the text a hook renders, 404 for any other path, 405 for another method and 400 for a
 * request that is malformed or larger than DS_METRICS_MAX_REQUEST; one request per
 * connection, closed after the answer.  A client gets DS_METRICS_TIMEOUT_MS for its
 * whole exchange, and at most DS_METRICS_MAX_CONNS are open at once (a new one closes
 * the oldest), so slow or silent clients cost a bounded amount of memory, never hold the
 * loop up and cannot lock a scraper out.
 */
#ifndef DS_METRICS_H
#define DS_METRICS_H

#include "ds_addr.h"

#include <stddef.h>
#include <uv.h>

#define DS_METRICS_MAX_REQUEST 8192
#define DS_METRICS_TIMEOUT_MS 5000
#define DS_METRICS_MAX_CONNS 32

struct ds_metrics;

/* Returns the exposition, NUL-terminated, in a buffer the caller frees, its length in
 * *len; NULL when out of memory (the client then gets 500). */
typedef char *(*ds_metrics_render)(void *ctx, size_t *len);

/* Listen on `addr` in `loop`.  Returns 0, or a libuv error after logging why. */
int ds_metrics_open(uv_loop_t *loop, const struct ds_addr *addr, ds_metrics_render render,
                    void *ctx, struct ds_metrics **out);

/* Stop listening and close every metrics connection (and remove a Unix socket file). */
void ds_metrics_close(struct ds_metrics *m);

#endif
