/*
 * The waker: one thread per executor that synchronises on events the serving thread
 * hands it, in order, and writes an eventfd when the device passes each, so that the
 * serving thread can sleep on its socket and that eventfd instead of spinning.
 *
 * Why not a host function (cuLaunchHostFunc), the driver's own way to be called back?
 * Under MPS, a host function queued behind work that then fails a device assert hangs
 * the process: every later driver call of it waits on a lock that the driver's event
 * thread never gives back (H100, driver 580, run 86: 4 of 4 natively under a private
 * MPS daemon, 0 of 3 without MPS).  A synchronisation on an event there returns the
 * context's error instead (run 87), so the waker's thread does that.  Its events are
 * made with CU_EVENT_BLOCKING_SYNC: the thread sleeps in the driver, it does not spin.
 *
 * One thread serves the events in the order they came, so a wake-up queued behind a
 * long wait comes late; the serving thread asks its fences again at least every 20 ms
 * (server/exec/waits.c) all the same.
 */
#include "cuda_backend.h"

#include "ds_error.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>

struct waker_item {
    CUevent ev;
    int efd;
    struct waker_item *next;
};

struct ds_cuda_waker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t more;
    CUcontext ctx;
    /* The driver's, copied: a thread left running outlives the backend (stop). */
    CUresult (*set_current)(CUcontext);
    CUresult (*synchronize)(CUevent);
    struct waker_item *head, **tail; /* handed over, not yet passed */
    struct waker_item *spare;        /* passed, their events kept for reuse */
    int stop;
    int busy; /* the thread is synchronising on an item it took */
};

static void *waker_main(void *arg)
{
    struct ds_cuda_waker *w = arg;

    w->set_current(w->ctx);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        struct waker_item *it;

        while (w->head == NULL && !w->stop)
            pthread_cond_wait(&w->more, &w->lock);
        if (w->stop)
            break;
        it = w->head;
        w->head = it->next;
        if (w->head == NULL)
            w->tail = &w->head;
        w->busy = 1;
        pthread_mutex_unlock(&w->lock);
        /* Its error, if any, is the serving thread's to find when it asks the fence. */
        w->synchronize(it->ev);
        eventfd_write(it->efd, 1);
        pthread_mutex_lock(&w->lock);
        w->busy = 0;
        it->next = w->spare;
        w->spare = it;
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static int waker_start(struct ds_backend *b)
{
    struct ds_cuda_waker *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return DS_ENOMEM;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->more, NULL);
    w->ctx = b->ctx;
    w->set_current = b->cu.cuCtxSetCurrent;
    w->synchronize = b->cu.cuEventSynchronize;
    w->tail = &w->head;
    if (pthread_create(&w->thread, NULL, waker_main, w) != 0) {
        pthread_cond_destroy(&w->more);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return DS_ENOMEM;
    }
    b->waker = w;
    return 0;
}

static int take_item(struct ds_backend *b, struct waker_item **out)
{
    struct ds_cuda_waker *w = b->waker;
    struct waker_item *it;
    CUresult r;

    pthread_mutex_lock(&w->lock);
    it = w->spare;
    if (it != NULL)
        w->spare = it->next;
    pthread_mutex_unlock(&w->lock);
    if (it == NULL) {
        if ((it = calloc(1, sizeof(*it))) == NULL)
            return DS_ENOMEM;
        r = b->cu.cuEventCreate(&it->ev, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
        if (r != CUDA_SUCCESS) {
            free(it);
            return ds__cuda_err(r);
        }
    }
    *out = it;
    return 0;
}

static void give_back(struct ds_cuda_waker *w, struct waker_item *it)
{
    pthread_mutex_lock(&w->lock);
    it->next = w->spare;
    w->spare = it;
    pthread_mutex_unlock(&w->lock);
}

int ds__cuda_waker_add(struct ds_backend *b, CUstream s, int efd)
{
    struct waker_item *it = NULL;
    struct ds_cuda_waker *w;
    CUresult r;
    int rc;

    if (b->waker == NULL && (rc = waker_start(b)) != 0)
        return rc;
    w = b->waker;
    if ((rc = take_item(b, &it)) != 0)
        return rc;
    if ((r = b->cu.cuEventRecord(it->ev, s)) != CUDA_SUCCESS) {
        give_back(w, it);
        return ds__cuda_err(r);
    }
    it->efd = efd;
    it->next = NULL;
    pthread_mutex_lock(&w->lock);
    *w->tail = it;
    w->tail = &it->next;
    pthread_cond_signal(&w->more);
    pthread_mutex_unlock(&w->lock);
    return 0;
}

static void free_items(const struct driver *cu, struct waker_item *it)
{
    while (it != NULL) {
        struct waker_item *next = it->next;

        cu->cuEventDestroy(it->ev);
        free(it);
        it = next;
    }
}

/* A thread synchronising on an event that never passes (a gate left closed, a kernel
 * that does not end) cannot be joined: it is left to the process's exit, with its item
 * and the waker, which is what an executor does next. */
void ds__cuda_waker_stop(struct ds_backend *b)
{
    struct ds_cuda_waker *w = b->waker;
    int busy;

    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    busy = w->busy;
    pthread_cond_signal(&w->more);
    pthread_mutex_unlock(&w->lock);
    b->waker = NULL;
    if (busy) {
        pthread_detach(w->thread);
        return;
    }
    pthread_join(w->thread, NULL);
    free_items(&b->cu, w->head);
    free_items(&b->cu, w->spare);
    pthread_cond_destroy(&w->more);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
