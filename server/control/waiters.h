/*
 * Tenants whose preface was read but who wait before an executor is chosen for them: for
 * their group's MPS daemon to take clients (group.h), or for their domain to recover from
 * a fault (recovery.h).  A list keeps them oldest first; serving it hands each to
 * ds__intake_serve, in the order they came.
 */
#ifndef DS_CONTROL_WAITERS_H
#define DS_CONTROL_WAITERS_H

#include <stdint.h>
#include <uv.h>

struct listener;
struct ds_waiter;

/* Tenant `name` on client (vouched: a token was checked for it), to be served in domain
 * isolation and group, waits at the end of *list: 0, or -1 out of memory (client then
 * still the caller's). */
int ds__waiters_add(struct ds_waiter **list, struct listener *l, uv_stream_t *client,
                    const char *name, int vouched, uint32_t isolation, unsigned group);

/* Serve every tenant of *list and empty it; own: in a domain of their own instead of the
 * one they waited for.  Returns how many were served. */
int ds__waiters_serve(struct ds_waiter **list, int own);

#endif
