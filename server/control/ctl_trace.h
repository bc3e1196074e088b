/* detshare-ctl trace's output: the admin API's trace (docs/admin.md) as a Chrome trace
 * (JSON object format), which Perfetto's UI and chrome://tracing read. */
#ifndef DS_CTL_TRACE_H
#define DS_CTL_TRACE_H

#include <msgpack.h>
#include <stdio.h>

/* Write the "trace" map of a stop reply to out.  Returns 0, or -1 when it is not the map
 * the server sends. */
int ds_ctl_trace_write(const msgpack_object *trace, FILE *out);

#endif
