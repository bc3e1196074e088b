/* Stream attributes, kept in the client and carried by the stream's launches (streamattr.h). */
#include "cuda_api.h"
#include "streamattr.h"

#include "rpc.h"
#include "stream.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* The attributes a stream has (cuda.h: CUstreamAttrID), one bit each in `set`. */
#define STREAMS 256

struct attrs {
    ds_handle h;
    unsigned set; /* bit id: value[id] was set */
    CUstreamAttrValue value[CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN + 1];
};

static struct {
    pthread_mutex_t lock;
    struct attrs e[STREAMS];
    unsigned n;
    atomic_uint kept; /* n, for launches to read without the lock */
} tab = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int stream_attr(CUstreamAttrID id)
{
    return id == CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW ||
           id == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY ||
           id == CU_LAUNCH_ATTRIBUTE_PRIORITY || id == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP ||
           id == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
}

static void forget(ds_handle h);

/* Under tab.lock: h's entry, made when make != 0 and there is room; else NULL. */
static struct attrs *entry(ds_handle h, int make)
{
    for (unsigned i = 0; i < tab.n; i++)
        if (tab.e[i].h == h)
            return &tab.e[i];
    if (!make || tab.n == STREAMS)
        return NULL;
    ds__stream_on_destroy(forget);
    memset(&tab.e[tab.n], 0, sizeof(tab.e[tab.n]));
    tab.e[tab.n].h = h;
    atomic_store_explicit(&tab.kept, tab.n + 1, memory_order_release);
    return &tab.e[tab.n++];
}

/* Stream h is gone: its attributes with it. */
static void forget(ds_handle h)
{
    struct attrs *a;

    pthread_mutex_lock(&tab.lock);
    if ((a = entry(h, 0)) != NULL) {
        *a = tab.e[--tab.n];
        atomic_store_explicit(&tab.kept, tab.n, memory_order_release);
    }
    pthread_mutex_unlock(&tab.lock);
}

ds_launch_attr *ds__streamattr_merge(ds_handle h, ds_launch_attr *given,
                                     unsigned *n, ds_launch_attr *room, unsigned max)
{
    struct attrs *a;
    unsigned k = *n;

    /* Most programs set no stream attribute: their launches take no lock here. */
    if (atomic_load_explicit(&tab.kept, memory_order_acquire) == 0)
        return given;
    pthread_mutex_lock(&tab.lock);
    a = entry(h, 0);
    for (unsigned id = 0; a != NULL && id <= CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN && k < max; id++) {
        unsigned i = 0;

        if (!(a->set & (1u << id)))
            continue;
        while (i < *n && given[i].id != (int)id)
            i++;
        if (i < *n)
            continue;
        if (k == *n && k > 0)
            memcpy(room, given, k * sizeof(*given));
        room[k].id = (int)id;
        memcpy(room[k].value, &a->value[id], sizeof(room[k].value));
        k++;
    }
    pthread_mutex_unlock(&tab.lock);
    if (k == *n)
        return given;
    *n = k;
    return room;
}

/* What a stream has before anything is set: CUDA's defaults, and its own priority. */
static CUresult default_value(CUstream s, CUstreamAttrID id, CUstreamAttrValue *v)
{
    unsigned flags;

    memset(v, 0, sizeof(*v));
    if (id == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY)
        v->syncPolicy = CU_SYNC_POLICY_AUTO;
    if (id == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP)
        v->memSyncDomainMap.remote = 1;
    if (id == CU_LAUNCH_ATTRIBUTE_PRIORITY)
        return cuStreamGetPriority(s, &v->priority);
    return cuStreamGetFlags(s, &flags);
}

CUresult cuStreamGetAttribute(CUstream s, CUstreamAttrID id, CUstreamAttrValue *v)
{
    ds_handle h;
    struct attrs *a;
    int known = 0;

    DS_NEED_INIT();
    if (v == NULL || !stream_attr(id))
        return CUDA_ERROR_INVALID_VALUE;
    h = ds__stream_of(s);
    pthread_mutex_lock(&tab.lock);
    if ((a = entry(h, 0)) != NULL && (a->set & (1u << id))) {
        *v = a->value[id];
        known = 1;
    }
    pthread_mutex_unlock(&tab.lock);
    return known ? CUDA_SUCCESS : default_value(s, id, v);
}

/* The stream must be one of the tenant's; values are checked by the executor when a
 * launch carries them, as a launch's own attributes are. */
CUresult cuStreamSetAttribute(CUstream s, CUstreamAttrID id, const CUstreamAttrValue *v)
{
    CUstreamAttrValue cur;
    struct attrs *a;
    ds_handle h;
    CUresult rc;

    DS_NEED_INIT();
    if (v == NULL || !stream_attr(id))
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = default_value(s, id, &cur)) != CUDA_SUCCESS)
        return rc;
    h = ds__stream_of(s);
    pthread_mutex_lock(&tab.lock);
    if ((a = entry(h, 1)) != NULL) {
        a->value[id] = *v;
        a->set |= 1u << id;
    }
    pthread_mutex_unlock(&tab.lock);
    return a != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuStreamCopyAttributes(CUstream dst, CUstream src)
{
    CUstreamAttrValue v;
    CUresult rc = CUDA_SUCCESS;

    DS_NEED_INIT();
    for (unsigned id = 0; id <= CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN && rc == CUDA_SUCCESS; id++)
        if (stream_attr((CUstreamAttrID)id) &&
            (rc = cuStreamGetAttribute(src, (CUstreamAttrID)id, &v)) == CUDA_SUCCESS)
            rc = cuStreamSetAttribute(dst, (CUstreamAttrID)id, &v);
    return rc;
}
