/*
 * Replies that wait for the device.  A synchronising call (a stream, event or context
 * synchronize; a copy or fill that completes before it returns) does not hold the
 * executor while the device works: its handler leaves a fence (backend.h), the reply
 * waits here, and it leaves once the device has passed the fence.  Meanwhile the
 * executor serves the tenant's other threads, as the driver would: a call from another
 * thread is not held up by this one's wait, and a synchronisation covers the work
 * submitted before it, not what comes after.
 *
 * Only calls whose reply carries nothing but a CUresult (ds_void_res) wait here.
 */
#ifndef DS_WAITS_H
#define DS_WAITS_H

#include "backend.h"
#include "conn.h"

struct ds_wait;

struct ds_waits {
    struct ds_wait *head;
    int efd;        /* completions: written by the backend when an armed fence passes */
    unsigned count; /* replies waiting */
};

/* Returns 0 or DS_EIO when no eventfd could be made. */
int ds__waits_init(struct ds_waits *w);

/* Keep the reply to call `call` until fence f passes; f is taken over.  Returns 0 or
 * DS_ENOMEM (f is then destroyed). */
int ds__waits_add(struct ds_waits *w, const struct ds_backend_ops *ops, struct ds_backend *b,
                  const struct ds_call *call, struct ds_bfence *f);

/* Send the replies whose fences have passed, with CUDA_SUCCESS or the error the work
 * ended with.  Returns how many were sent, or DS_EIO when the connection failed. */
int ds__waits_reap(struct ds_waits *w, const struct ds_backend_ops *ops, struct ds_backend *b,
                   struct ds_conn *c);

/* Before the executor sleeps: have every fence wake it when it passes.  Returns the
 * ds_now_ns() time at which to look again without being woken, or 0 for none (no
 * fences): with fences waiting there is always one, since a device that faulted wakes
 * nobody (waits.c). */
uint64_t ds__waits_arm(struct ds_waits *w, const struct ds_backend_ops *ops,
                       struct ds_backend *b);

/* After a sleep: empty the eventfd. */
void ds__waits_woken(struct ds_waits *w);

/* Drop every waiting reply (the tenant left); the backend must still be open. */
void ds__waits_drop(struct ds_waits *w, const struct ds_backend_ops *ops, struct ds_backend *b);

/* Close the eventfd, once the backend is closed and can write to it no more. */
void ds__waits_fini(struct ds_waits *w);

#endif
