/*
 * Waits across two servers' devices (xwait.h).  Each wait asks the event's server to
 * record the event's shadow behind the event's last record, synchronously, so that the
 * shadow's record is made before the stream's server, told next, waits for it: one
 * round trip to the event's server, and none to the stream's (the wait is batched).
 * The first wait of an event on a device also opens the shadow there, kept until the
 * tenant destroys the event or the context it was opened in ends.
 */
#include "xwait.h"

#include "ctx.h"
#include "ds_log.h"
#include "rpc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* An event's shadow as device dev's server opened it in context ctx; shadow 0: it could
 * not be, and that device's streams wait for the event on the host. */
struct opened {
    ds_handle event, shadow, ctx;
    int dev;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct opened *v;
static size_t n, cap;
static atomic_int said_device, said_host;
static atomic_int over_tcp; /* the servers refuse shadows to this tenant: never ask again */

int ds__xwait_across(ds_handle stream, ds_handle event, int *sdev)
{
    int edev;

    if (ds__rpc_devices() < 2)
        return 0;
    *sdev = ds__rpc_device_of(DS_STREAM_QUERY, (xdrproc_t)xdr_ds_handle, &stream);
    edev = ds__rpc_device_of(DS_EVENT_QUERY, (xdrproc_t)xdr_ds_handle, &event);
    return *sdev >= 0 && edev >= 0 && *sdev != edev;
}

/* The entry of event's shadow on dev, or NULL; lock held. */
static struct opened *find(ds_handle event, int dev)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].event == event && v[i].dev == dev)
            return &v[i];
    return NULL;
}

/* 1 with the shadow (0: none can be opened) when event's shadow on dev is known. */
static int known(ds_handle event, int dev, ds_handle *shadow)
{
    struct opened *o;

    pthread_mutex_lock(&lock);
    o = find(event, dev);
    if (o != NULL)
        *shadow = o->shadow;
    pthread_mutex_unlock(&lock);
    return o != NULL;
}

static void destroy(ds_handle shadow)
{
    ds_void_res r;

    ds_rpc_event_destroy(&shadow, &r);
}

/* A context ended: the shadows opened in it went with it, on its server. */
static void ctx_ended(uint64_t ctx)
{
    pthread_mutex_lock(&lock);
    for (size_t i = n; i-- > 0;)
        if (v[i].ctx == ctx)
            v[i] = v[--n];
    pthread_mutex_unlock(&lock);
}

/* Note *shadow as event's on dev, opened in ctx; where another thread noted one first,
 * that one is used (in *shadow) and this one destroyed. */
static CUresult note(ds_handle event, int dev, ds_handle ctx, ds_handle *shadow)
{
    ds_handle extra = 0;
    struct opened *o, *p;
    CUresult rc = CUDA_SUCCESS;

    ds__ctx_on_end(ctx_ended);
    pthread_mutex_lock(&lock);
    if ((o = find(event, dev)) != NULL) {
        extra = *shadow;
        *shadow = o->shadow;
    } else if (n == cap && (p = realloc(v, (cap ? 2 * cap : 8) * sizeof(*v))) == NULL) {
        extra = *shadow;
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        if (n == cap) {
            v = p;
            cap = cap ? 2 * cap : 8;
        }
        v[n++] = (struct opened){ event, *shadow, ctx, dev };
    }
    pthread_mutex_unlock(&lock);
    if (extra != 0)
        destroy(extra);
    return rc;
}

/* The context stream's work runs in, for its server to open the shadow in. */
static CUresult stream_ctx(ds_handle stream, ds_handle *ctx)
{
    ds_stream_info_res r;
    CUresult rc;

    if (stream == 0 || stream == (ds_handle)(uintptr_t)CU_STREAM_LEGACY)
        return ds__ctx_current(ctx);
    rc = ds_rpc_stream_get_info(&stream, &r);
    if (rc == CUDA_SUCCESS)
        *ctx = r.ds_stream_info_res_u.info.ctx;
    return rc;
}

/* Open the shadow that tok names on stream's device dev, noted for event, into *shadow
 * (0 when that server cannot open it: the wait is then made on the host). */
static CUresult open_on(ds_handle event, int dev, ds_handle stream, const ds_peer_token *tok,
                        ds_handle *shadow)
{
    ds_peer_open_args a = { .token = *tok };
    ds_handle_res r;
    const char *name = NULL;
    CUresult rc;

    if ((rc = stream_ctx(stream, &a.ctx)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_peer_event_open(&a, &r);
    if (rc == CUDA_ERROR_DEVICE_UNAVAILABLE)
        return rc;
    *shadow = rc == CUDA_SUCCESS ? r.ds_handle_res_u.handle : 0;
    if (rc != CUDA_SUCCESS && !atomic_exchange(&said_host, 1)) {
        cuGetErrorName(rc, &name);
        ds_warn("device %d cannot open another device's interprocess event (%s): its "
                "streams wait for such events on the host, the calling thread waiting "
                "until each completes", dev, name != NULL ? name : "?");
    }
    return note(event, dev, a.ctx, shadow);
}

/* The wait made on the host: once the event completes, the stream's later work, given
 * after this returns, cannot run before it. */
static CUresult on_host(ds_handle event, const char *why)
{
    ds_void_res r;

    if (why != NULL && !atomic_exchange(&said_host, 1))
        ds_warn("streams wait for another device's event on the host (%s): the calling "
                "thread waits until the event completes",
                why);
    return ds_rpc_event_synchronize(&event, &r);
}

static int host_only(void)
{
    const char *mode = getenv("DETSHARE_XDEV_WAIT");

    return mode != NULL && strcmp(mode, "host") == 0;
}

CUresult ds__xwait(ds_handle stream, int sdev, ds_handle event, unsigned flags)
{
    ds_wait_event_args a = { .stream = stream, .flags = flags };
    ds_peer_token_res tok;
    int seen;
    CUresult rc;

    if (flags != 0 && flags != CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    if (host_only())
        return on_host(event, "DETSHARE_XDEV_WAIT=host");
    if (atomic_load(&over_tcp))
        return on_host(event, NULL);
    seen = known(event, sdev, &a.event);
    if (seen && a.event == 0)
        return on_host(event, NULL);
    rc = ds_rpc_peer_event_export(&event, &tok);
    if (rc == CUDA_ERROR_NOT_SUPPORTED) {
        atomic_store(&over_tcp, 1);
        return on_host(event, "the event's server shares no interprocess events with a "
                              "tenant over TCP");
    }
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_INVALID_HANDLE &&
        rc != CUDA_ERROR_DEVICE_UNAVAILABLE)
        return on_host(event, "the event's server could not make an interprocess event");
    if (rc == CUDA_SUCCESS && !seen)
        rc = open_on(event, sdev, stream, &tok.ds_peer_token_res_u.token, &a.event);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (a.event == 0)
        return on_host(event, NULL);
    if (!atomic_exchange(&said_device, 1))
        ds_info("streams wait for another device's event on the device, through an "
                "interprocess event");
    return ds_rpc_stream_wait_event(&a);
}

void ds__xwait_event_gone(ds_handle event)
{
    for (;;) {
        ds_handle shadow = 0;
        int found = 0;

        pthread_mutex_lock(&lock);
        for (size_t i = 0; i < n && !found; i++)
            if (v[i].event == event) {
                shadow = v[i].shadow;
                v[i] = v[--n];
                found = 1;
            }
        pthread_mutex_unlock(&lock);
        if (!found)
            return;
        if (shadow != 0)
            destroy(shadow);
    }
}
