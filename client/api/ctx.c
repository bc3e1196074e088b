/* Contexts.  The server owns them (and everything created in them); the client keeps
 * only which one is current in each thread. */
#include "cuda_api.h"
#include "ctx.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "quiet.h"
#include "rpc.h"

#define CTX_STACK_MAX 64

/* This process's references to each device's primary context, mirroring the executors'
 * counts so that the client knows when a context ends (context-local storage goes with
 * it). */
static atomic_uint primary_refs[DS_ROUTE_MAX];
static _Atomic(ds_ctx_end_fn) end_hooks[DS_CTX_END_HOOKS];

static _Thread_local CUcontext stack[CTX_STACK_MAX];
static _Thread_local int depth;

/*
 * What the server says about contexts changes only through this process's own calls
 * (one tenant is one process), so answers are kept until one of those calls: frameworks
 * ask cuCtxGetDevice and cuDevicePrimaryCtxGetState around every operation, and a round
 * trip each would dominate small kernels.  Every call that can change an answer forgets
 * them all.
 */
#define INFO_CACHE 16

static struct {
    pthread_mutex_t lock;
    struct {
        uint64_t h;
        ds_ctx_info info;
    } info[INFO_CACHE];
    unsigned ninfo, next;
    ds_pstate primary;
    int primary_known;
    /* CUlimit values as last read back, per context (limits change only through this
     * process; transformers' decoding read one before every launch, 176 us each). */
    uint64_t limit_ctx[CU_LIMIT_MAX];
    size_t limit[CU_LIMIT_MAX];
} known = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void known_forget(void)
{
    pthread_mutex_lock(&known.lock);
    known.ninfo = 0;
    known.primary_known = 0;
    memset(known.limit_ctx, 0, sizeof(known.limit_ctx));
    pthread_mutex_unlock(&known.lock);
}

static int known_info(uint64_t h, ds_ctx_info *out)
{
    int found = 0;

    pthread_mutex_lock(&known.lock);
    for (unsigned i = 0; i < known.ninfo && !found; i++) {
        if (known.info[i].h == h) {
            *out = known.info[i].info;
            found = 1;
        }
    }
    pthread_mutex_unlock(&known.lock);
    return found;
}

static void known_info_put(uint64_t h, const ds_ctx_info *info)
{
    unsigned i;

    pthread_mutex_lock(&known.lock);
    if (known.ninfo < INFO_CACHE)
        i = known.ninfo++;
    else
        i = known.next++ % INFO_CACHE;
    known.info[i].h = h;
    known.info[i].info = *info;
    pthread_mutex_unlock(&known.lock);
}

static uint64_t handle_of(CUcontext c)
{
    return (uint64_t)(uintptr_t)c;
}

void ds__ctx_on_end(ds_ctx_end_fn fn)
{
    for (int i = 0; i < DS_CTX_END_HOOKS; i++) {
        ds_ctx_end_fn seen = NULL;

        if (atomic_compare_exchange_strong(&end_hooks[i], &seen, fn) || seen == fn)
            return;
    }
}

/* Context h has ended: what was kept for it goes. */
static void ended(uint64_t h)
{
    for (int i = 0; i < DS_CTX_END_HOOKS; i++) {
        ds_ctx_end_fn fn = atomic_load(&end_hooks[i]);

        if (fn != NULL)
            fn(h);
    }
}

/* The calling thread's calls that name nothing of their own go to its current
 * context's device (route.h): told whenever the top of the stack changes. */
static void now_current(void)
{
    ds__route_set_current(depth ? handle_of(stack[depth - 1]) : 0);
}

CUresult ds__ctx_pin(CUdevice dev)
{
    if (ds__rpc_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    ds__route_pin(dev);
    return CUDA_SUCCESS;
}

int ds__ctx_loc_id(int type, int id, int dev)
{
    if (type != CU_MEM_LOCATION_TYPE_DEVICE || ds__rpc_device(id) == NULL)
        return id;
    return id == dev ? 0 : -1;
}

CUresult ds__ctx_pin_location(int type, int id, int *wire_id)
{
    *wire_id = id;
    if (type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_SUCCESS;
    *wire_id = 0;
    return ds__ctx_pin(id);
}

CUresult ds__ctx_current(uint64_t *h)
{
    if (depth == 0 || stack[depth - 1] == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    *h = handle_of(stack[depth - 1]);
    return CUDA_SUCCESS;
}

/* The server has dropped this context.  Only the calling thread's stack is ours to
 * edit; other threads get INVALID_CONTEXT from the server when they use it. */
static void forget(CUcontext c)
{
    for (int i = 0; i < depth; i++)
        if (stack[i] == c)
            stack[i] = NULL;
    now_current();
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    DS_NEED_INIT();
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = depth ? stack[depth - 1] : NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    DS_NEED_INIT();
    if (depth == 0)
        depth = 1;
    stack[depth - 1] = ctx;
    now_current();
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    DS_NEED_INIT();
    if (ctx == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = ctx;
    now_current();
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    DS_NEED_INIT();
    if (depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    depth--;
    if (pctx != NULL)
        *pctx = stack[depth];
    now_current();
    return CUDA_SUCCESS;
}

static CUresult create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    ds_ctx_create_args a = { .dev = 0, .flags = flags };
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (depth == CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_ctx_create(&a, &r);
    ds__route_unpin();
    if (rc != CUDA_SUCCESS)
        return rc;
    *pctx = (CUcontext)(uintptr_t)r.ds_handle_res_u.handle;
    stack[depth++] = *pctx;
    now_current();
    ds__rpc_sched_flags(flags);
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int nparams,
                        unsigned int flags, CUdevice dev)
{
    if (params != NULL && nparams > 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    return create(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                        CUdevice dev)
{
    /* Execution-affinity and CIG parameters are not served yet. */
    if (params != NULL && (params->execAffinityParams != NULL || params->cigParams != NULL))
        return CUDA_ERROR_NOT_SUPPORTED;
    return create(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    ds_handle h = handle_of(ctx);
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (ctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_ctx_destroy(&h, &r);
    known_forget();
    if (rc == CUDA_SUCCESS) {
        ended(h);
        forget(ctx);
        /* A destroyed context that was current is popped, as in CUDA. */
        while (depth > 0 && stack[depth - 1] == NULL)
            depth--;
        now_current();
    }
    return rc;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    ds_handle h = handle_of(ctx);
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (ctx == NULL && (rc = ds__ctx_current(&h)) != CUDA_SUCCESS)
        return rc;
    if (ds__quiet_is(h, 1))
        return CUDA_SUCCESS;
    rc = ds_rpc_ctx_synchronize(&h, &r);
    if (rc == CUDA_SUCCESS)
        ds__quiet_mark(h, 1);
    return rc;
}

CUresult cuCtxSynchronize(void)
{
    return cuCtxSynchronize_v2(NULL);
}

/* What the server says of ctx (NULL: the current context), its device as the tenant
 * numbers it: each server has one, its device 0. */
static CUresult info(CUcontext ctx, ds_ctx_info *out)
{
    ds_handle h;
    ds_ctx_info_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (ctx != NULL)
        h = handle_of(ctx);
    else if ((rc = ds__ctx_current(&h)) != CUDA_SUCCESS)
        return rc;
    if (known_info(h, out))
        return CUDA_SUCCESS;
    rc = ds_rpc_ctx_get_info(&h, &r);
    if (rc == CUDA_SUCCESS) {
        *out = r.ds_ctx_info_res_u.info;
        out->dev += ds__route_dev_of(h);
        known_info_put(h, out);
    }
    return rc;
}

CUresult cuCtxGetDevice(CUdevice *dev)
{
    return cuCtxGetDevice_v2(dev, NULL);
}

CUresult cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
    ds_ctx_info i;
    CUresult rc;

    if (dev == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = info(ctx, &i);
    if (rc == CUDA_SUCCESS)
        *dev = i.dev;
    return rc;
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
    ds_ctx_info i;
    CUresult rc;

    if (flags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = info(NULL, &i);
    if (rc == CUDA_SUCCESS)
        *flags = i.flags;
    return rc;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    ds_ctx_info i;
    CUresult rc;

    if (version == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = info(ctx, &i);
    if (rc == CUDA_SUCCESS)
        *version = i.api_version;
    return rc;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
    ds_ctx_info i;
    CUresult rc;

    if (id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = info(ctx, &i);
    if (rc == CUDA_SUCCESS)
        *id = i.id;
    return rc;
}

static CUresult limit(CUlimit which, int set, size_t *value)
{
    ds_limit_args a = { .limit = which, .set = set, .value = *value };
    ds_hyper_res r;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    if ((unsigned)which < CU_LIMIT_MAX) {
        int hit;

        pthread_mutex_lock(&known.lock);
        hit = known.limit_ctx[which] == a.ctx && (!set || known.limit[which] == *value);
        if (hit)
            *value = known.limit[which];
        pthread_mutex_unlock(&known.lock);
        if (hit)
            return CUDA_SUCCESS;
    }
    rc = ds_rpc_ctx_limit(&a, &r);
    if (rc == CUDA_SUCCESS) {
        *value = r.ds_hyper_res_u.value;
        if ((unsigned)which < CU_LIMIT_MAX) {
            pthread_mutex_lock(&known.lock);
            known.limit_ctx[which] = a.ctx;
            known.limit[which] = *value;
            pthread_mutex_unlock(&known.lock);
        }
    }
    return rc;
}

CUresult cuCtxGetLimit(size_t *value, CUlimit which)
{
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return limit(which, 0, value);
}

CUresult cuCtxSetLimit(CUlimit which, size_t value)
{
    return limit(which, 1, &value);
}

CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    DS_NEED_INIT();
    if (least != NULL)
        *least = 0;
    if (greatest != NULL)
        *greatest = -5;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ds_handle_res r;
    int d = 0; /* the device as its server numbers it */
    CUresult rc;

    DS_NEED_INIT();
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_primary_retain(&d, &r);
    ds__route_unpin();
    known_forget();
    if (rc == CUDA_SUCCESS) {
        *pctx = (CUcontext)(uintptr_t)r.ds_handle_res_u.handle;
        atomic_fetch_add(&primary_refs[dev], 1);
    }
    return rc;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    ds_void_res r;
    int d = 0; /* the device as its server numbers it */
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_primary_release(&d, &r);
    ds__route_unpin();
    known_forget();
    if (rc == CUDA_SUCCESS && atomic_fetch_sub(&primary_refs[dev], 1) == 1)
        ended(ds__rpc_primary(dev));
    return rc;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    ds_pstate_res r;
    int d = 0; /* the device as its server numbers it */
    CUresult rc;

    DS_NEED_INIT();
    if (flags == NULL || active == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&known.lock);
    if (known.primary_known && dev == 0) {
        *flags = known.primary.flags;
        *active = known.primary.active;
        pthread_mutex_unlock(&known.lock);
        return CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&known.lock);
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_primary_get_state(&d, &r);
    ds__route_unpin();
    if (rc == CUDA_SUCCESS) {
        *flags = r.ds_pstate_res_u.state.flags;
        *active = r.ds_pstate_res_u.state.active;
    }
    /* Device 0's is the one frameworks ask about around every operation. */
    if (rc == CUDA_SUCCESS && dev == 0) {
        pthread_mutex_lock(&known.lock);
        known.primary = r.ds_pstate_res_u.state;
        known.primary_known = 1;
        pthread_mutex_unlock(&known.lock);
    }
    return rc;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    ds_pflags_args a = { .dev = 0, .flags = flags };
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_primary_set_flags(&a, &r);
    ds__route_unpin();
    known_forget();
    if (rc == CUDA_SUCCESS)
        ds__rpc_sched_flags(flags);
    return rc;
}

/* The current context's flags, primary or not; the scheduling part decides how this
 * process waits, as the primary's does. */
CUresult cuCtxSetFlags(unsigned int flags)
{
    ds_ctx_flags_args a = { .flags = flags };
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_ctx_set_flags(&a, &r);
    known_forget();
    if (rc == CUDA_SUCCESS)
        ds__rpc_sched_flags(flags);
    return rc;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    ds_void_res r;
    int d = 0; /* the device as its server numbers it */
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_primary_reset(&d, &r);
    ds__route_unpin();
    known_forget();
    if (rc == CUDA_SUCCESS) {
        atomic_store(&primary_refs[dev], 0);
        ended(ds__rpc_primary(dev));
    }
    return rc;
}

/* Pre-11.0 names with the same contract. */
CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return cuDevicePrimaryCtxReset_v2(dev);
}
