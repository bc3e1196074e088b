/* Streams and events: handles issued by the executor, passed back as they are. */
#include "cuda_api.h"
#include "stream.h"

#include "ctx.h"
#include "ipc.h"
#include "quiet.h"
#include "rpc.h"
#include "xwait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static _Atomic(ds_stream_end_fn) end_hook;

static ds_handle hv(const void *p)
{
    return (ds_handle)(uintptr_t)p;
}

/* A stream's flags, priority, context and id never change: each is asked once.  The
 * legacy and per-thread values mean a different stream in each context, so they are
 * always asked. */
#define INFO_CACHE 64

static struct {
    pthread_mutex_t lock;
    struct {
        ds_handle h;
        ds_stream_info info;
    } e[INFO_CACHE];
    unsigned n, next;
} infos = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int info_cacheable(ds_handle h)
{
    return h != 0 && h != (ds_handle)(uintptr_t)CU_STREAM_LEGACY &&
           h != (ds_handle)(uintptr_t)CU_STREAM_PER_THREAD;
}

static int info_known(ds_handle h, ds_stream_info *out)
{
    int found = 0;

    pthread_mutex_lock(&infos.lock);
    for (unsigned i = 0; i < infos.n && !found; i++) {
        if (infos.e[i].h == h) {
            *out = infos.e[i].info;
            found = 1;
        }
    }
    pthread_mutex_unlock(&infos.lock);
    return found;
}

static void info_put(ds_handle h, const ds_stream_info *info)
{
    unsigned i;

    pthread_mutex_lock(&infos.lock);
    i = infos.n < INFO_CACHE ? infos.n++ : infos.next++ % INFO_CACHE;
    infos.e[i].h = h;
    infos.e[i].info = *info;
    pthread_mutex_unlock(&infos.lock);
}

static void info_forget(ds_handle h)
{
    pthread_mutex_lock(&infos.lock);
    for (unsigned i = 0; i < infos.n; i++) {
        if (infos.e[i].h == h) {
            infos.e[i] = infos.e[--infos.n];
            break;
        }
    }
    pthread_mutex_unlock(&infos.lock);
}

static pthread_key_t per_thread_key;
static pthread_once_t per_thread_once = PTHREAD_ONCE_INIT;

static void per_thread_gone(void *value)
{
    ds_handle h = (ds_handle)(uintptr_t)value;
    ds_void_res r;

    ds_rpc_stream_destroy(&h, &r);
}

static void per_thread_init(void)
{
    pthread_key_create(&per_thread_key, per_thread_gone);
}

ds_handle ds__stream_of(CUstream s)
{
    ds_stream_create_args a = { .flags = CU_STREAM_DEFAULT };
    ds_handle_res r;
    void *mine;

    if (s != CU_STREAM_PER_THREAD)
        return hv(s);
    pthread_once(&per_thread_once, per_thread_init);
    mine = pthread_getspecific(per_thread_key);
    if (mine != NULL)
        return hv(mine);
    if (ds__ctx_current(&a.ctx) != CUDA_SUCCESS || ds_rpc_stream_create(&a, &r) != CUDA_SUCCESS)
        return hv(s);
    pthread_setspecific(per_thread_key, (void *)(uintptr_t)r.ds_handle_res_u.handle);
    return r.ds_handle_res_u.handle;
}

CUresult cuStreamCreateWithPriority(CUstream *ps, unsigned int flags, int priority)
{
    ds_stream_create_args a = { .flags = flags, .priority = priority };
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (ps == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_stream_create(&a, &r);
    if (rc == CUDA_SUCCESS)
        *ps = (CUstream)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

CUresult cuStreamCreate(CUstream *ps, unsigned int flags)
{
    return cuStreamCreateWithPriority(ps, flags, 0);
}

void ds__stream_on_destroy(ds_stream_end_fn fn)
{
    atomic_store(&end_hook, fn);
}

static void ended(ds_handle h)
{
    ds_stream_end_fn fn = atomic_load(&end_hook);

    if (fn != NULL)
        fn(h);
}

CUresult cuStreamDestroy_v2(CUstream s)
{
    ds_handle h = hv(s);
    ds_void_res r;

    DS_NEED_INIT();
    info_forget(h);
    ended(h);
    return ds_rpc_stream_destroy(&h, &r);
}

CUresult cuStreamSynchronize(CUstream s)
{
    ds_handle h;
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    h = ds__stream_of(s);
    if (ds__quiet_is(h, 0))
        return CUDA_SUCCESS;
    rc = ds_rpc_stream_synchronize(&h, &r);
    if (rc == CUDA_SUCCESS)
        ds__quiet_mark(h, 0);
    return rc;
}

CUresult cuStreamQuery(CUstream s)
{
    ds_handle h;
    ds_void_res r;

    DS_NEED_INIT();
    h = ds__stream_of(s);
    if (ds__quiet_is(h, 0))
        return CUDA_SUCCESS;
    return ds_rpc_stream_query(&h, &r);
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    ds_wait_event_args a = { .stream = ds__stream_of(s), .event = hv(e), .flags = flags };
    int sdev;

    DS_NEED_INIT();
    if (ds__xwait_across(a.stream, a.event, &sdev))
        return ds__xwait(a.stream, sdev, a.event, flags);
    return ds_rpc_stream_wait_event(&a);
}

static CUresult stream_info(CUstream s, ds_stream_info *out)
{
    ds_stream_info_res r;
    ds_handle h;
    CUresult rc;

    DS_NEED_INIT();
    h = ds__stream_of(s);
    if (info_cacheable(h) && info_known(h, out))
        return CUDA_SUCCESS;
    rc = ds_rpc_stream_get_info(&h, &r);
    if (rc == CUDA_SUCCESS) {
        *out = r.ds_stream_info_res_u.info;
        if (info_cacheable(h))
            info_put(h, out);
    }
    return rc;
}

CUresult cuStreamGetFlags(CUstream s, unsigned int *flags)
{
    ds_stream_info i;
    CUresult rc;

    if (flags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_info(s, &i)) == CUDA_SUCCESS)
        *flags = i.flags;
    return rc;
}

CUresult cuStreamGetPriority(CUstream s, int *priority)
{
    ds_stream_info i;
    CUresult rc;

    if (priority == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_info(s, &i)) == CUDA_SUCCESS)
        *priority = i.priority;
    return rc;
}

CUresult cuStreamGetId(CUstream s, unsigned long long *id)
{
    ds_stream_info i;
    CUresult rc;

    if (id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_info(s, &i)) == CUDA_SUCCESS)
        *id = i.id;
    return rc;
}

CUresult cuStreamGetCtx(CUstream s, CUcontext *pctx)
{
    ds_stream_info i;
    CUresult rc;

    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_info(s, &i)) == CUDA_SUCCESS)
        *pctx = (CUcontext)(uintptr_t)i.ctx;
    return rc;
}

CUresult cuEventCreate(CUevent *pe, unsigned int flags)
{
    ds_event_create_args a = { .flags = flags };
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (pe == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_event_create(&a, &r);
    if (rc == CUDA_SUCCESS) {
        *pe = (CUevent)(uintptr_t)r.ds_handle_res_u.handle;
        if (flags & CU_EVENT_INTERPROCESS)
            ds__ipc_event_note(*pe, 1);
    }
    return rc;
}

CUresult cuEventDestroy_v2(CUevent e)
{
    ds_handle h = hv(e);
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    rc = ds_rpc_event_destroy(&h, &r);
    if (rc == CUDA_SUCCESS) {
        ds__ipc_event_note(e, 0);
        ds__xwait_event_gone(h);
    }
    return rc;
}

CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags)
{
    ds_record_args a = { .event = hv(e), .stream = ds__stream_of(s), .flags = flags };
    CUresult rc;

    DS_NEED_INIT();
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    rc = ds_rpc_event_record(&a);
    return rc == CUDA_SUCCESS ? ds__ipc_event_recorded(e) : rc;
}

CUresult cuEventRecord(CUevent e, CUstream s)
{
    return cuEventRecordWithFlags(e, s, 0);
}

CUresult cuEventQuery(CUevent e)
{
    ds_handle h = hv(e);
    ds_void_res r;

    DS_NEED_INIT();
    return ds_rpc_event_query(&h, &r);
}

CUresult cuEventSynchronize(CUevent e)
{
    ds_handle h = hv(e);
    ds_void_res r;

    DS_NEED_INIT();
    return ds_rpc_event_synchronize(&h, &r);
}

CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end)
{
    ds_elapsed_args a = { .start = hv(start), .end = hv(end) };
    ds_elapsed_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (ms == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_event_elapsed(&a, &r);
    if (rc == CUDA_SUCCESS)
        *ms = r.ds_elapsed_res_u.ms;
    return rc;
}

CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
    return cuEventElapsedTime_v2(ms, start, end);
}
