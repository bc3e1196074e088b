/*
 * Handlers for every procedure in common/ds_procs.h, one per procedure, grouped by area
 * (ops_ctx.c, ops_mem.c, ops_stream.c, ops_event.c, executor.c for hello).  A handler
 * validates all of its arguments against the tenant's own objects, acts, fills the
 * success arm of the result, and returns the CUresult that goes into the reply (for
 * batched procedures, the one held for the next synchronous call).
 */
#ifndef DS_OPS_H
#define DS_OPS_H

#include "ds_procs.h"
#include "tenant.h"

#define DS_OPS_DECL_S(n, P, A, R) CUresult ds__ops_##n(struct ds_tenant *t, const A *a, R *r);
#define DS_OPS_DECL_B(n, P, A) CUresult ds__ops_##n(struct ds_tenant *t, const A *a);
DS_PROCS(DS_OPS_DECL_S, DS_OPS_DECL_B)
#undef DS_OPS_DECL_S
#undef DS_OPS_DECL_B

/* Create the tenant's primary context, inactive until retained, so that its handle is
 * known from the handshake on (cudart asks for it before retaining it).  0 or DS_E*. */
int ds__ops_make_primary(struct ds_tenant *t);

#endif
