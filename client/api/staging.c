#include "staging.h"

#include "ds_log.h"
#include "hostreg.h"
#include "mem.h"
#include "rpc.h"
#include "stream.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

/* One event per slot marks the end of the last DMA that used it: a slot is reused only
 * once its event has completed.  The events live in the primary context, which lasts
 * as long as the connection. */
static struct {
    pthread_mutex_t lock;
    int state; /* 0 not tried, 1 ready, -1 unavailable */
    unsigned char *base;
    uint64_t offset; /* base's place in the arena */
    ds_handle ev[DS_STAGING_SLOTS];
    int busy[DS_STAGING_SLOTS];
    unsigned next;
} ring = { .lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * A second thread copies half of each chunk between the tenant's memory and a slot: one
 * core's memcpy (about 7 GB/s on the H100 box's Xeon) is slower than the DMA, and the
 * driver's own pageable copies reach 14 GB/s device to host.  It sleeps between copies.
 */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    unsigned char *dst;
    const unsigned char *src;
    size_t len;
    unsigned posted, finished;
    int running;
} helper = { .lock = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER,
             .done = PTHREAD_COND_INITIALIZER };

/* Below this, waking the helper costs more than it saves. */
#define SPLIT_MIN (1u << 20)

static void *helper_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&helper.lock);
    for (;;) {
        while (helper.finished == helper.posted)
            pthread_cond_wait(&helper.go, &helper.lock);
        pthread_mutex_unlock(&helper.lock);
        memcpy(helper.dst, helper.src, helper.len);
        pthread_mutex_lock(&helper.lock);
        helper.finished = helper.posted;
        pthread_cond_signal(&helper.done);
    }
    return NULL;
}

/* Without the helper, copies are done by the caller alone. */
static void start_helper(void)
{
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;

    /* The application's signals must not land on a thread it does not know. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    helper.running = pthread_create(&t, &attr, helper_main, NULL) == 0;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void split_copy(void *dst, const void *src, size_t n)
{
    size_t half = n / 2;

    if (n < SPLIT_MIN || !helper.running) {
        memcpy(dst, src, n);
        return;
    }
    pthread_mutex_lock(&helper.lock);
    helper.dst = (unsigned char *)dst + half;
    helper.src = (const unsigned char *)src + half;
    helper.len = n - half;
    helper.posted++;
    pthread_cond_signal(&helper.go);
    pthread_mutex_unlock(&helper.lock);
    memcpy(dst, src, half);
    pthread_mutex_lock(&helper.lock);
    while (helper.finished != helper.posted)
        pthread_cond_wait(&helper.done, &helper.lock);
    pthread_mutex_unlock(&helper.lock);
}

static void drop_events(int n)
{
    for (int i = 0; i < n; i++) {
        ds_void_res r;

        ds_rpc_event_destroy(&ring.ev[i], &r);
    }
}

static int make_ring(void)
{
    size_t size = (size_t)DS_STAGING_SLOTS * DS_STAGING_SLOT;
    void *p = NULL;

    if (cuMemHostAlloc(&p, size, 0) != CUDA_SUCCESS)
        return -1;
    if (!ds__hostreg_arena_offset(p, size, &ring.offset)) {
        cuMemFreeHost(p);
        return -1;
    }
    for (int i = 0; i < DS_STAGING_SLOTS; i++) {
        ds_event_create_args a = { .ctx = ds__rpc_primary(0), .flags = CU_EVENT_DISABLE_TIMING };
        ds_handle_res r;

        if (ds_rpc_event_create(&a, &r) != CUDA_SUCCESS) {
            drop_events(i);
            cuMemFreeHost(p);
            return -1;
        }
        ring.ev[i] = r.ds_handle_res_u.handle;
    }
    ring.base = p;
    start_helper();
    ds_debug("pageable copies staged through %d page-locked slots of %u KiB",
             DS_STAGING_SLOTS, DS_STAGING_SLOT >> 10);
    return 0;
}

int ds__staging_usable(size_t n)
{
    int state;

    /* The ring's slots and events are device 0's: one server's. */
    if (n < DS_STAGING_MIN || ds__rpc_devices() != 1)
        return 0;
    pthread_mutex_lock(&ring.lock);
    if (ring.state == 0)
        ring.state = make_ring() == 0 ? 1 : -1;
    state = ring.state;
    pthread_mutex_unlock(&ring.lock);
    return state == 1;
}

/* Wait until slot i is free; called with the ring's lock held. */
static CUresult slot_free(unsigned i)
{
    ds_void_res r;
    CUresult rc;

    if (!ring.busy[i])
        return CUDA_SUCCESS;
    rc = ds_rpc_event_synchronize(&ring.ev[i], &r);
    if (rc == CUDA_SUCCESS)
        ring.busy[i] = 0;
    return rc;
}

/* Queue a DMA between slot i and device memory on stream s, and mark the slot busy. */
static CUresult slot_dma(unsigned i, int to_device, CUdeviceptr dev, size_t len, ds_handle s)
{
    ds_arena_copy_args a = { .dev = dev, .offset = ring.offset + (uint64_t)i * DS_STAGING_SLOT,
                             .size = len, .stream = s };
    ds_record_args rec = { .event = ring.ev[i], .stream = s };
    CUresult rc;

    rc = to_device ? ds_rpc_memcpy_htod_arena(&a) : ds_rpc_memcpy_dtoh_arena(&a);
    if (rc == CUDA_SUCCESS)
        rc = ds_rpc_event_record(&rec);
    if (rc == CUDA_SUCCESS)
        ring.busy[i] = 1;
    return rc;
}

static unsigned char *slot_ptr(unsigned i)
{
    return ring.base + (size_t)i * DS_STAGING_SLOT;
}

/* Bytes of the chunk that starts at off in a copy of n. */
static size_t chunk_len(size_t n, size_t off)
{
    return n - off < DS_STAGING_SLOT ? n - off : DS_STAGING_SLOT;
}

CUresult ds__staging_htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, int wait)
{
    ds_handle sh = ds__stream_of(s);
    const unsigned char *p = src;
    CUresult rc = CUDA_SUCCESS;

    pthread_mutex_lock(&ring.lock);
    for (size_t off = 0; off < n && rc == CUDA_SUCCESS;) {
        size_t len = chunk_len(n, off);
        unsigned i = ring.next;

        ring.next = (i + 1) % DS_STAGING_SLOTS;
        rc = slot_free(i);
        if (rc != CUDA_SUCCESS)
            break;
        split_copy(slot_ptr(i), p + off, len);
        rc = slot_dma(i, 1, dst + off, len, sh);
        off += len;
    }
    pthread_mutex_unlock(&ring.lock);
    return rc != CUDA_SUCCESS || !wait ? rc : cuStreamSynchronize(s);
}

/* Chunks go to consecutive slots; up to DS_STAGING_SLOTS are in flight, and each is
 * copied out once its DMA is done, while the later ones proceed. */
CUresult ds__staging_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    size_t chunks = (n + DS_STAGING_SLOT - 1) / DS_STAGING_SLOT, issued = 0;
    ds_handle sh = ds__stream_of(s);
    unsigned char *p = dst;
    CUresult rc = CUDA_SUCCESS;
    unsigned first;

    pthread_mutex_lock(&ring.lock);
    first = ring.next;
    for (size_t c = 0; c < chunks && rc == CUDA_SUCCESS; c++) {
        for (; issued < chunks && issued < c + DS_STAGING_SLOTS && rc == CUDA_SUCCESS; issued++) {
            unsigned i = (first + issued) % DS_STAGING_SLOTS;
            size_t off = issued * DS_STAGING_SLOT;

            rc = slot_free(i);
            if (rc == CUDA_SUCCESS)
                rc = slot_dma(i, 0, src + off, chunk_len(n, off), sh);
        }
        if (rc == CUDA_SUCCESS) {
            unsigned i = (first + c) % DS_STAGING_SLOTS;
            size_t off = c * DS_STAGING_SLOT;

            rc = slot_free(i);
            if (rc == CUDA_SUCCESS)
                split_copy(p + off, slot_ptr(i), chunk_len(n, off));
        }
    }
    ring.next = (first + (unsigned)(chunks % DS_STAGING_SLOTS)) % DS_STAGING_SLOTS;
    pthread_mutex_unlock(&ring.lock);
    return rc;
}
