/*
 * Copies and fills.  Page-locked memory of a local tenant lies on the arena shared with
 * the executor, so copies to and from it carry only an offset and are asynchronous as in
 * CUDA.  A local tenant's larger pageable copies go through the staging ring
 * (staging.h).  Other host memory travels in-band in chunks of at most DS_CHUNK_MAX bytes:
 * copies of DS_STRIPE_MIN bytes or more of a TCP session with data connections go
 * chunk by chunk over those, several at a time (transport/stripe.h); other
 * host-to-device chunks are batched (the last one of a synchronous copy waits for
 * completion); device-to-host chunks are synchronous calls, up to eight in flight, that
 * return the bytes once the stream's earlier work is done, so such an "async" copy to
 * the host has completed when it returns, which every correct program tolerates.
 *
 * While a capture is going on, an asynchronous copy whose host side the device reaches
 * (page-locked, registered or managed memory) goes as a device-to-device copy of that
 * memory's device address, which a capture records as CUDA records the host copy: a
 * graph copy node that reads or writes the host memory at each launch.  An asynchronous
 * copy of other (pageable) host memory on a capturing stream is taken by the capture as
 * a copy the tenant does at each launch (captured_host_copy); anything else with host
 * memory on a capturing stream is refused.
 *
 * A copy between two devices' memory (a tenant of several servers) runs on its stream's
 * device, the other device's side mapped there (peer.h).
 */
#include "cuda_api.h"
#include "copy.h"

#include "capture.h"
#include "dtod.h"
#include "hostreg.h"
#include "mem.h"
#include "peer.h"
#include "quiet.h"
#include "rpc.h"
#include "staging.h"
#include "stream.h"
#include "stripe.h"

#include <string.h>

/* A copy between device memory and the arena; a synchronous one waits for its stream,
 * which the executor then answers with the copy done. */
static CUresult arena_copy(int to_device, CUdeviceptr dev, uint64_t offset, size_t n,
                           CUstream s, int wait)
{
    ds_arena_copy_args a = { .dev = dev, .offset = offset, .size = n,
                             .stream = ds__stream_of(s) };
    CUresult rc;

    rc = to_device ? ds_rpc_memcpy_htod_arena(&a) : ds_rpc_memcpy_dtoh_arena(&a);
    return rc != CUDA_SUCCESS || !wait ? rc : cuStreamSynchronize(s);
}

/* A copy of pageable memory `host` (n bytes) and device memory `dev`, to the device when
 * to_device, on stream s: while some stream of this process is being captured, the
 * executor says whether s is (itself, or by joining one), and *done is 1 when the
 * capture took the copy (server/exec/ops_ghcopy.c).  A capture that cannot take it is
 * invalidated, as a capture that meets unsupported work is. */
static CUresult captured_host_copy(int to_device, CUdeviceptr dev, const void *host, size_t n,
                                   CUstream s, int wait, int *done)
{
    ds_capture_copy_args a = { .stream = ds__stream_of(s), .dev = dev,
                               .host = (uint64_t)(uintptr_t)host, .size = n,
                               .to_device = to_device };
    ds_int_res r;
    CUresult rc;

    *done = 0;
    if (wait || n == 0 || host == NULL || !ds__capture_capturing_any())
        return CUDA_SUCCESS;
    rc = ds_rpc_capture_host_copy(&a, &r);
    if (rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        ds__capture_refuse_host_work(s);
    *done = rc == CUDA_SUCCESS && r.ds_int_res_u.value == 1;
    return rc;
}

/* A capture may be going on (on s, or on a stream s joined, which only the executor
 * knows): an asynchronous copy of host memory the device reaches is a device copy. */
static int captured_view(const void *host, size_t n, int wait, uint64_t *view)
{
    return !wait && n > 0 && host != NULL && ds__capture_capturing_any() &&
           ds__copy_device_view(host, n, view);
}

CUresult ds__copy_htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, int wait)
{
    const char *p = src;
    uint64_t offset;
    CUresult rc;
    int done;

    DS_NEED_INIT();
    if (captured_view(src, n, wait, &offset))
        return ds__dtod_copy(dst, offset, n, s, 0);
    if ((rc = captured_host_copy(1, dst, src, n, s, wait, &done)) != CUDA_SUCCESS || done)
        return rc;
    if ((rc = ds__capture_refuse_host_work(s)) != CUDA_SUCCESS)
        return rc;
    if (n == 0)
        return CUDA_SUCCESS;
    if (src == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__hostreg_arena_offset(src, n, &offset))
        return arena_copy(1, dst, offset, n, s, wait);
    if (ds__staging_usable(n))
        return ds__staging_htod(dst, src, n, s, wait);
    rc = ds__stripe_copy(1, dst, (char *)(uintptr_t)src, n, ds__stream_of(s), &done);
    if (done)
        return rc != CUDA_SUCCESS || !wait ? rc : cuStreamSynchronize(s);
    while (n > 0 && rc == CUDA_SUCCESS) {
        size_t len = n < DS_CHUNK_MAX ? n : DS_CHUNK_MAX;
        ds_htod_args a = { .dst = dst, .stream = ds__stream_of(s) };
        ds_void_res r;

        a.data.data_len = (u_int)len;
        a.data.data_val = (char *)p;
        if (wait && len == n)
            rc = ds_rpc_memcpy_htod(&a, &r);
        else
            rc = ds_rpc_memcpy_htod_async(&a);
        dst += len;
        p += len;
        n -= len;
    }
    return rc;
}

/* Chunks asked for at once in an in-band device-to-host copy: the executor reads and
 * sends chunk k+1 while the client takes in chunk k.  A batch leaves back to back and is
 * collected whole before the next is asked for, as rpc.h requires. */
#define DTOH_BATCH 8

/* A chunk's reply, decoded into `place` (the tenant's own buffer, with room for
 * DS_CHUNK_MAX bytes) when there is one: the generated decoder then writes there and
 * allocates nothing, and the bytes come from the socket straight to where they go. */
struct dtoh_reply {
    ds_bytes_res r;
    char *place;
};

static bool_t xdr_dtoh_reply(XDR *x, struct dtoh_reply *d)
{
    char **data = &d->r.ds_bytes_res_u.data.data_val;

    if (x->x_op == XDR_DECODE)
        *data = d->place;
    if (x->x_op == XDR_FREE && *data == d->place)
        *data = NULL;
    return xdr_ds_bytes_res(x, &d->r);
}

/* Collect posted chunk p, of len bytes, from d into dst. */
static CUresult dtoh_take(struct ds_rpc_pending *p, struct dtoh_reply *d, char *dst, size_t len)
{
    CUresult rc = ds__rpc_collect(p);

    if (rc == CUDA_SUCCESS && d->r.ds_bytes_res_u.data.data_len != len)
        rc = CUDA_ERROR_UNKNOWN;
    if (rc == CUDA_SUCCESS && d->place == NULL)
        memcpy(dst, d->r.ds_bytes_res_u.data.data_val, len);
    if (rc != CUDA_ERROR_DEVICE_UNAVAILABLE)
        ds__rpc_free((xdrproc_t)xdr_dtoh_reply, d);
    return rc;
}

/* Bytes of in-band chunk k of a copy of n. */
static size_t inband_len(size_t n, size_t k)
{
    size_t off = k * (size_t)DS_CHUNK_MAX;

    return n - off < DS_CHUNK_MAX ? n - off : DS_CHUNK_MAX;
}

/* Chunks first .. first + count - 1 of a copy of n bytes from src to dst.  Each is a
 * synchronous call answered once the stream's earlier work and that chunk are done;
 * after a failed one, those already posted are still collected.  A whole chunk is
 * decoded in place; the last, shorter one, through a buffer. */
static CUresult dtoh_batch(char *dst, CUdeviceptr src, size_t n, ds_handle stream,
                           size_t first, size_t count)
{
    struct ds_rpc_pending p[DTOH_BATCH];
    struct dtoh_reply r[DTOH_BATCH];
    size_t posted = 0;
    ds_dtoh_args first_args = { .src = src + first * (size_t)DS_CHUNK_MAX, .stream = stream };
    CUresult rc = ds__rpc_hold(DS_MEMCPY_DTOH, (xdrproc_t)xdr_ds_dtoh_args, &first_args);

    if (rc != CUDA_SUCCESS)
        return rc;
    for (; posted < count && rc == CUDA_SUCCESS; posted++) {
        size_t c = first + posted, len = inband_len(n, c);
        ds_dtoh_args a = { .src = src + c * (size_t)DS_CHUNK_MAX, .stream = stream,
                           .size = (u_int)len };

        memset(&r[posted], 0, sizeof(r[posted]));
        r[posted].place = len == DS_CHUNK_MAX ? dst + c * (size_t)DS_CHUNK_MAX : NULL;
        rc = ds__rpc_post(&p[posted], DS_MEMCPY_DTOH, (xdrproc_t)xdr_ds_dtoh_args, &a,
                          (xdrproc_t)xdr_dtoh_reply, &r[posted]);
    }
    ds__rpc_release();
    for (size_t k = 0; k < posted; k++) {
        size_t c = first + k;
        CUresult one = dtoh_take(&p[k], &r[k], dst + c * (size_t)DS_CHUNK_MAX,
                                 inband_len(n, c));

        if (rc == CUDA_SUCCESS)
            rc = one;
    }
    return rc;
}

static CUresult dtoh_inband(char *dst, CUdeviceptr src, size_t n, ds_handle stream)
{
    size_t chunks = (n + DS_CHUNK_MAX - 1) / DS_CHUNK_MAX;
    CUresult rc = CUDA_SUCCESS;

    for (size_t c = 0; c < chunks && rc == CUDA_SUCCESS; c += DTOH_BATCH) {
        size_t count = chunks - c < DTOH_BATCH ? chunks - c : DTOH_BATCH;

        rc = dtoh_batch(dst, src, n, stream, c, count);
    }
    return rc;
}

CUresult ds__copy_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s, int wait)
{
    uint64_t offset;
    CUresult rc;
    int done;

    DS_NEED_INIT();
    if (captured_view(dst, n, wait, &offset))
        return ds__dtod_copy(offset, src, n, s, 0);
    if ((rc = captured_host_copy(0, src, dst, n, s, wait, &done)) != CUDA_SUCCESS || done)
        return rc;
    if ((rc = ds__capture_refuse_host_work(s)) != CUDA_SUCCESS)
        return rc;
    if (n == 0)
        return CUDA_SUCCESS;
    if (dst == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__hostreg_arena_offset(dst, n, &offset))
        return arena_copy(0, src, offset, n, s, wait);
    if (ds__staging_usable(n))
        return ds__staging_dtoh(dst, src, n, s);
    rc = ds__stripe_copy(0, src, dst, n, ds__stream_of(s), &done);
    if (!done)
        rc = dtoh_inband(dst, src, n, ds__stream_of(s));
    /* The executor answered once the stream's earlier work and this copy were done. */
    if (rc == CUDA_SUCCESS)
        ds__quiet_mark(ds__stream_of(s), 0);
    return rc;
}

/* A copy the tenant asked for between two device addresses: between two devices'
 * memory, it runs on its stream's device with CUDA's unified-addressing meaning
 * (peer.h), the NULL stream being the current context's legacy stream. */
static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int wait)
{
    struct ds_peer_run r;
    int ddev, sdev;
    CUresult rc;

    DS_NEED_INIT();
    if (!ds__peer_across(dst, src, &ddev, &sdev))
        return ds__dtod_copy(dst, src, n, s, wait);
    if ((rc = ds__peer_run_on(s, NULL, &r)) != CUDA_SUCCESS)
        return rc;
    return ds__peer_copy(&r, dst, ddev, src, sdev, n, NULL, wait);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return ds__copy_htod(dst, src, n, NULL, 1);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    return ds__copy_htod(dst, src, n, s, 0);
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    return ds__copy_dtoh(dst, src, n, NULL, 1);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    return ds__copy_dtoh(dst, src, n, s, 0);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return dtod(dst, src, n, NULL, 1);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return dtod(dst, src, n, s, 0);
}

/* Unified addressing: the direction follows from which side each pointer lives on. */
static CUresult unified(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int wait)
{
    int ddev, sdev;

    DS_NEED_INIT();
    ddev = ds__mem_is_device(dst);
    sdev = ds__mem_is_device(src);
    if (ddev && sdev)
        return dtod(dst, src, n, s, wait);
    if (ddev)
        return ds__copy_htod(dst, (const void *)(uintptr_t)src, n, s, wait);
    if (sdev)
        return ds__copy_dtoh((void *)(uintptr_t)dst, src, n, s, wait);
    if (n > 0 && (dst == 0 || src == 0))
        return CUDA_ERROR_INVALID_VALUE;
    if (n > 0)
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return unified(dst, src, n, NULL, 1);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return unified(dst, src, n, s, 0);
}

static CUresult fill(CUdeviceptr dst, size_t pitch, unsigned value, unsigned elem, size_t width,
                     size_t height, CUstream s, int wait)
{
    ds_memset_args a = { .dst = dst, .pitch = pitch, .value = value, .elem_size = elem,
                         .width = width, .height = height, .stream = ds__stream_of(s) };
    ds_void_res r;

    DS_NEED_INIT();
    return wait ? ds_rpc_memset(&a, &r) : ds_rpc_memset_async(&a);
}

CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n)
{
    return fill(d, 0, v, 1, n, 1, NULL, 1);
}

CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n)
{
    return fill(d, 0, v, 2, n, 1, NULL, 1);
}

CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n)
{
    return fill(d, 0, v, 4, n, 1, NULL, 1);
}

CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    return fill(d, 0, v, 1, n, 1, s, 0);
}

CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
    return fill(d, 0, v, 2, n, 1, s, 0);
}

CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
    return fill(d, 0, v, 4, n, 1, s, 0);
}

CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h)
{
    return fill(d, pitch, v, 1, w, h, NULL, 1);
}

CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h)
{
    return fill(d, pitch, v, 2, w, h, NULL, 1);
}

CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h)
{
    return fill(d, pitch, v, 4, w, h, NULL, 1);
}

CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h,
                           CUstream s)
{
    return fill(d, pitch, v, 1, w, h, s, 0);
}

CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h,
                            CUstream s)
{
    return fill(d, pitch, v, 2, w, h, s, 0);
}

CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h,
                            CUstream s)
{
    return fill(d, pitch, v, 4, w, h, s, 0);
}

int ds__copy_device_view(const void *host, size_t n, uint64_t *out)
{
    uint64_t offset;
    CUdeviceptr d;

    /* Managed memory is a device address as it is. */
    if (ds__mem_is_device((uint64_t)(uintptr_t)host)) {
        *out = (uint64_t)(uintptr_t)host;
        return 1;
    }
    if (!ds__hostreg_arena_offset(host, n, &offset) ||
        cuMemHostGetDevicePointer_v2(&d, (void *)host, 0) != CUDA_SUCCESS)
        return 0;
    *out = d;
    return 1;
}

/* A device-to-host copy is complete when ds__copy_dtoh returns; one to the device is in
 * stream order before whatever the next stage launches. */
CUresult ds__copy_node_here(const ds_memcpy_node *c, CUstream s)
{
    void *dst = (void *)(uintptr_t)c->dst;
    const void *src = (const void *)(uintptr_t)c->src;

    switch (c->host) {
    case DS_COPY_SRC_HOST | DS_COPY_DST_HOST:
        memmove(dst, src, c->size);
        return CUDA_SUCCESS;
    case DS_COPY_SRC_HOST:
        return ds__copy_htod(c->dst, src, c->size, s, 0);
    case DS_COPY_DST_HOST:
        return ds__copy_dtoh(dst, c->src, c->size, s, 0);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}
