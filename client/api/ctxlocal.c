#include "cuda_api.h"
#include "ctxlocal.h"

#include "ctx.h"

#include <pthread.h>
#include <stdlib.h>

struct cls_entry {
    uint64_t ctx;
    void *key, *value;
    ds_ctxlocal_dtor dtor;
    struct cls_entry *next;
};

static pthread_mutex_t cls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cls_entry *cls;

/* NULL means the calling thread's current context. */
static CUresult cls_ctx(CUcontext ctx, uint64_t *out)
{
    if (ctx != NULL) {
        *out = (uint64_t)(uintptr_t)ctx;
        return CUDA_SUCCESS;
    }
    return ds__ctx_current(out);
}

static struct cls_entry **cls_find(uint64_t ctx, void *key)
{
    struct cls_entry **p;

    for (p = &cls; *p != NULL; p = &(*p)->next)
        if ((*p)->ctx == ctx && (*p)->key == key)
            break;
    return p;
}

static void ctx_ended(uint64_t ctx);

CUresult ds__ctxlocal_put(CUcontext ctx, void *key, void *value, ds_ctxlocal_dtor dtor)
{
    struct cls_entry **p;
    uint64_t c;
    CUresult rc = cls_ctx(ctx, &c);

    if (rc != CUDA_SUCCESS)
        return rc;
    ds__ctx_on_end(ctx_ended);
    pthread_mutex_lock(&cls_lock);
    p = cls_find(c, key);
    if (*p == NULL && (*p = calloc(1, sizeof(**p))) == NULL) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        (*p)->ctx = c;
        (*p)->key = key;
        (*p)->value = value;
        (*p)->dtor = dtor;
    }
    pthread_mutex_unlock(&cls_lock);
    return rc;
}

CUresult ds__ctxlocal_del(CUcontext ctx, void *key)
{
    struct cls_entry **p, *e;
    uint64_t c;
    CUresult rc = cls_ctx(ctx, &c);

    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&cls_lock);
    p = cls_find(c, key);
    e = *p;
    if (e != NULL)
        *p = e->next;
    pthread_mutex_unlock(&cls_lock);
    free(e);
    return e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult ds__ctxlocal_get(void **value, CUcontext ctx, void *key)
{
    struct cls_entry *e;
    uint64_t c;
    CUresult rc = cls_ctx(ctx, &c);

    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&cls_lock);
    e = *cls_find(c, key);
    if (e != NULL && value != NULL)
        *value = e->value;
    pthread_mutex_unlock(&cls_lock);
    return e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Context ctx has ended: run and forget its entries, each destructor outside any lock. */
static void ctx_ended(uint64_t ctx)
{
    struct cls_entry *gone = NULL, **p, *e;

    pthread_mutex_lock(&cls_lock);
    for (p = &cls; (e = *p) != NULL;) {
        if (e->ctx == ctx) {
            *p = e->next;
            e->next = gone;
            gone = e;
        } else {
            p = &e->next;
        }
    }
    pthread_mutex_unlock(&cls_lock);
    /* Destructors may call back into the driver: never under the lock. */
    while ((e = gone) != NULL) {
        gone = e->next;
        if (e->dtor != NULL)
            e->dtor((CUcontext)(uintptr_t)e->ctx, e->key, e->value);
        free(e);
    }
}
