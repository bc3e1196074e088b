#include "waits.h"

#include "detshare.h"
#include "ds_clock.h"
#include "ds_error.h"
#include "ds_log.h"
#include "ds_procs.h"

#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* A fence whose backend could not arm it is looked at again this soon. */
#define UNARMED_RETRY_NS (100 * 1000u)

/* An armed fence wakes the executor when the device passes it, but not when the device
 * never will: once a kernel faults (an illegal address is sticky, and under MPS a
 * neighbour's fault ends this context too), the backend's wake-up may never come, and
 * the tenant's synchronisation waited forever (seen on the H100, run 65).  So
 * a sleep with fences armed ends this soon anyway and asks them again: the tenant gets
 * the fault's error within that time, as a native program gets it at once. */
#define ARMED_LOOK_NS (20 * 1000 * 1000u)

struct ds_wait {
    struct ds_bfence *fence;
    struct ds_call call; /* only xid and proc are kept: the arguments are gone */
    int armed;
    uint64_t wake_ns;
    struct ds_wait *next;
};

int ds__waits_init(struct ds_waits *w)
{
    w->head = NULL;
    w->count = 0;
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return w->efd >= 0 ? 0 : DS_EIO;
}

int ds__waits_add(struct ds_waits *w, const struct ds_backend_ops *ops, struct ds_backend *b,
                  const struct ds_call *call, struct ds_bfence *f)
{
    struct ds_wait *x = calloc(1, sizeof(*x));

    if (x == NULL) {
        ops->fence_destroy(b, f);
        return DS_ENOMEM;
    }
    x->fence = f;
    x->call.xid = call->xid;
    x->call.proc = call->proc;
    x->next = w->head;
    w->head = x;
    w->count++;
    return 0;
}

static int send_reply(struct ds_conn *c, const struct ds_wait *x, int rc)
{
    ds_void_res r = { .err = ds_error_to_cu(rc) };

    if (r.err != CUDA_SUCCESS)
        ds_debug("%s -> %d", ds_proc_name(x->call.proc), r.err);
    return ds_conn_reply(c, &x->call, (xdrproc_t)xdr_ds_void_res, &r);
}

int ds__waits_reap(struct ds_waits *w, const struct ds_backend_ops *ops, struct ds_backend *b,
                   struct ds_conn *c)
{
    struct ds_wait **p = &w->head;
    int sent = 0, failed = 0;

    while (*p != NULL) {
        struct ds_wait *x = *p;
        int rc = ops->fence_query(b, x->fence);

        if (rc == DS_ENOTREADY) {
            p = &x->next;
            continue;
        }
        failed |= send_reply(c, x, rc) != 0;
        *p = x->next;
        ops->fence_destroy(b, x->fence);
        free(x);
        w->count--;
        sent++;
    }
    return failed ? DS_EIO : sent;
}

uint64_t ds__waits_arm(struct ds_waits *w, const struct ds_backend_ops *ops,
                       struct ds_backend *b)
{
    uint64_t soonest = 0;

    /* A fence with a time to look again is asked again each time: the sim's device
     * clock slips against the host's. */
    for (struct ds_wait *x = w->head; x != NULL; x = x->next) {
        uint64_t look;

        if (!x->armed || x->wake_ns != 0) {
            if (ops->fence_arm(b, x->fence, w->efd, &x->wake_ns) == 0) {
                x->armed = 1;
            } else {
                ds_debug("a fence could not be armed: looking again in %u us",
                         UNARMED_RETRY_NS / 1000);
                x->wake_ns = ds_now_ns() + UNARMED_RETRY_NS;
            }
        }
        look = x->wake_ns != 0 ? x->wake_ns : ds_now_ns() + ARMED_LOOK_NS;
        if (soonest == 0 || look < soonest)
            soonest = look;
    }
    return soonest;
}

void ds__waits_woken(struct ds_waits *w)
{
    eventfd_t n;

    eventfd_read(w->efd, &n);
}

void ds__waits_drop(struct ds_waits *w, const struct ds_backend_ops *ops, struct ds_backend *b)
{
    while (w->head != NULL) {
        struct ds_wait *x = w->head;

        w->head = x->next;
        ops->fence_destroy(b, x->fence);
        free(x);
    }
    w->count = 0;
}

void ds__waits_fini(struct ds_waits *w)
{
    if (w->efd >= 0)
        close(w->efd);
    w->efd = -1;
}
