/*
 * What an executor does once its tenant's device context has failed for good (a kernel's
 * fault: its own, or under MPS a neighbour's): write in its slot of the control block
 * whose fault it was, for the control process's log, status and metrics, and tell a
 * tenant that lost its context to a neighbour so, on the tenant's own stderr, since
 * the error CUDA returns cannot say it (docs/reliability.md, "A kernel's fault").
 *
 * Whose fault it was: what the backend wrote in the slot (the sim knows), else the
 * tenant's own when its executor is no MPS client (nobody else can end such a context),
 * else not known (under MPS every client gets the same error; MPS's own log names a
 * victim as often as the culprit: lab/results/h200-2026-11-27, run 114).
 */
#ifndef DS_EXEC_FAULT_H
#define DS_EXEC_FAULT_H

#include "tenant.h"

/* Tenant t's context failed with CUresult cu, just now. */
void ds__fault_record(struct ds_tenant *t, int cu);

#endif
