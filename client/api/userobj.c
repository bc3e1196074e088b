/*
 * User objects: a pointer, its destructor and a reference count, all in this process, so
 * the destructor runs here, on the thread that lets go of the last reference.  Graphs
 * hold references (cuGraphRetainUserObject), which instantiated graphs and clones of
 * them share; a graph's go when it is destroyed, an instance's when it is destroyed,
 * after the context's work has finished (CUDA defers the destructor until the instance's
 * launches are done; waiting for the context is the plain way to be as late).
 *
 * What differs from CUDA: a child graph node's copy holds no references of its own (the
 * graph it was copied from keeps its own until destroyed).
 */
#include "cuda_api.h"
#include "userobj.h"

#include "rpc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define MAGIC 0x7573726fu

struct uobj {
    uint32_t magic;
    atomic_uint refs;
    void *ptr;
    CUhostFn destroy;
};

/* References owner holds on obj. */
struct hold {
    uint64_t owner;
    struct uobj *obj;
    unsigned count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct hold *holds;
static size_t nholds;

static struct uobj *uobj_of(CUuserObject o)
{
    struct uobj *u = (struct uobj *)o;

    return u != NULL && u->magic == MAGIC ? u : NULL;
}

CUresult cuUserObjectCreate(CUuserObject *out, void *ptr, CUhostFn destroy,
                            unsigned int refs, unsigned int flags)
{
    struct uobj *u;

    DS_NEED_INIT();
    if (out == NULL || destroy == NULL || refs == 0 || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
        return CUDA_ERROR_INVALID_VALUE;
    if ((u = calloc(1, sizeof(*u))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    u->magic = MAGIC;
    atomic_init(&u->refs, refs);
    u->ptr = ptr;
    u->destroy = destroy;
    *out = (CUuserObject)u;
    return CUDA_SUCCESS;
}

CUresult cuUserObjectRetain(CUuserObject o, unsigned int count)
{
    struct uobj *u = uobj_of(o);

    if (u == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_fetch_add(&u->refs, count);
    return CUDA_SUCCESS;
}

/* Releasing more references than exist is the caller's error, as with CUDA; the count
 * never wraps here. */
static void release(struct uobj *u, unsigned count)
{
    unsigned old = atomic_load(&u->refs);

    do {
        if (count > old)
            count = old;
    } while (!atomic_compare_exchange_weak(&u->refs, &old, old - count));
    if (old == count && count > 0) {
        u->magic = 0;
        u->destroy(u->ptr);
        free(u);
    }
}

CUresult cuUserObjectRelease(CUuserObject o, unsigned int count)
{
    struct uobj *u = uobj_of(o);

    if (u == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    release(u, count);
    return CUDA_SUCCESS;
}

/* Add count references of owner's on u; called with the lock held. */
static CUresult hold(uint64_t owner, struct uobj *u, unsigned count)
{
    struct hold *grown;

    for (size_t i = 0; i < nholds; i++) {
        if (holds[i].owner == owner && holds[i].obj == u) {
            holds[i].count += count;
            return CUDA_SUCCESS;
        }
    }
    if ((grown = realloc(holds, (nholds + 1) * sizeof(*grown))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    holds = grown;
    holds[nholds++] = (struct hold){ .owner = owner, .obj = u, .count = count };
    return CUDA_SUCCESS;
}

/* A graph that the executor knows: its node count answers for it. */
static CUresult graph_exists(CUgraph graph)
{
    ds_handle h = (ds_handle)(uintptr_t)graph;
    ds_hyper_res r;

    return ds_rpc_graph_node_count(&h, &r);
}

CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject o, unsigned int count,
                                 unsigned int flags)
{
    struct uobj *u = uobj_of(o);
    CUresult rc;

    DS_NEED_INIT();
    if (u == NULL || count == 0 || (flags & ~(unsigned)CU_GRAPH_USER_OBJECT_MOVE) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = graph_exists(graph)) != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    rc = hold((uint64_t)(uintptr_t)graph, u, count);
    pthread_mutex_unlock(&lock);
    if (rc == CUDA_SUCCESS && !(flags & CU_GRAPH_USER_OBJECT_MOVE))
        atomic_fetch_add(&u->refs, count);
    return rc;
}

CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject o, unsigned int count)
{
    struct uobj *u = uobj_of(o);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;

    DS_NEED_INIT();
    if (u == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nholds; i++) {
        if (holds[i].owner == (uint64_t)(uintptr_t)graph && holds[i].obj == u &&
            holds[i].count >= count) {
            holds[i].count -= count;
            if (holds[i].count == 0)
                holds[i] = holds[--nholds];
            rc = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    if (rc == CUDA_SUCCESS)
        release(u, count);
    return rc;
}

CUresult ds__userobj_share(uint64_t from, uint64_t to)
{
    CUresult rc = CUDA_SUCCESS;
    size_t n;

    pthread_mutex_lock(&lock);
    n = nholds;
    for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++) {
        if (holds[i].owner != from)
            continue;
        if ((rc = hold(to, holds[i].obj, holds[i].count)) == CUDA_SUCCESS)
            atomic_fetch_add(&holds[i].obj->refs, holds[i].count);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void ds__userobj_drop(uint64_t owner, int sync)
{
    struct hold *gone = NULL;
    size_t ngone = 0;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nholds; i++)
        if (holds[i].owner == owner)
            ngone++;
    if (ngone > 0 && (gone = malloc(ngone * sizeof(*gone))) != NULL) {
        ngone = 0;
        for (size_t i = nholds; i-- > 0;) {
            if (holds[i].owner == owner) {
                gone[ngone++] = holds[i];
                holds[i] = holds[--nholds];
            }
        }
    }
    pthread_mutex_unlock(&lock);
    if (gone == NULL)
        return;
    if (sync)
        cuCtxSynchronize();
    /* Destructors run outside the lock: one may release other objects. */
    for (size_t i = 0; i < ngone; i++)
        release(gone[i].obj, gone[i].count);
    free(gone);
}
