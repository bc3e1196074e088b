/*
 * Pitched memory: cuMemAllocPitch, and the 2-D and 3-D copies with their async and peer
 * forms.  Every shape becomes one box (struct box).  A box between two device sides goes
 * to the executor whole (DS_MEMCPY_3D), which checks every row against the tenant's
 * memory and runs it in stream order; a box with a host side moves row by row through
 * the 1-D copies (copy.h), so host bytes take the paths cuMemcpyHtoD's take (the shared
 * arena, the staging ring, in-band chunks) and each row is checked there.  Rows that lie
 * back to back on both sides move as one.  A box between two devices' memory (a tenant
 * of several servers) goes whole to its stream's device, the other device's side mapped
 * there (peer.h).  A copy with a CUDA array on either side is array.c's.
 */
#include "cuda_api.h"

#include "array.h"
#include "capture.h"
#include "copy.h"
#include "ctx.h"
#include "ds_box.h"
#include "dtod.h"
#include "hostreg.h"
#include "mem.h"
#include "peer.h"
#include "rpc.h"
#include "stream.h"

#include <stdlib.h>
#include <string.h>

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int elem_size)
{
    ds_alloc_pitch_args a = { .width = width, .height = height, .elem_size = elem_size,
                              .capture_mode = ds__capture_thread_mode() };
    ds_alloc_pitch_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (dptr == NULL || pitch == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_mem_alloc_pitch(&a, &r);
    if (rc == CUDA_SUCCESS) {
        *dptr = r.ds_alloc_pitch_res_u.mem.ptr;
        *pitch = r.ds_alloc_pitch_res_u.mem.pitch;
        ds__mem_remember(*dptr, *pitch * height);
    }
    return rc;
}

/* A copy of depth slices of height rows of width bytes.  dev: whether each side is
 * device memory (ptr a device address) or host memory (ptr a host address). */
struct box {
    struct ds_box_side dst, src;
    int dst_dev, src_dev;
    uint64_t width, height, depth;
};

/* Whose memory one side names; unified addresses are told apart by pointer. */
static CUresult side_kind(CUmemorytype type, int *dev)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        *dev = 0;
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_DEVICE:
        *dev = 1;
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_UNIFIED:
        *dev = -1;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult side_of(CUmemorytype type, const void *host, CUdeviceptr dev,
                        struct ds_box_side *s, int *is_dev)
{
    CUresult rc = side_kind(type, is_dev);

    if (rc != CUDA_SUCCESS)
        return rc;
    s->ptr = *is_dev == 0 ? (uint64_t)(uintptr_t)host : dev;
    if (*is_dev < 0)
        *is_dev = ds__mem_is_device(dev);
    return CUDA_SUCCESS;
}

static CUresult box_of_3d(const CUDA_MEMCPY3D *c, struct box *b)
{
    CUresult rc;

    *b = (struct box){
        .src = { .x = c->srcXInBytes, .y = c->srcY, .z = c->srcZ, .pitch = c->srcPitch,
                 .rows = c->srcHeight },
        .dst = { .x = c->dstXInBytes, .y = c->dstY, .z = c->dstZ, .pitch = c->dstPitch,
                 .rows = c->dstHeight },
        .width = c->WidthInBytes, .height = c->Height, .depth = c->Depth,
    };
    rc = side_of(c->srcMemoryType, c->srcHost, c->srcDevice, &b->src, &b->src_dev);
    return rc != CUDA_SUCCESS ? rc
                              : side_of(c->dstMemoryType, c->dstHost, c->dstDevice, &b->dst,
                                        &b->dst_dev);
}

static CUresult box_of_2d(const CUDA_MEMCPY2D *c, struct box *b)
{
    CUresult rc;

    *b = (struct box){
        .src = { .x = c->srcXInBytes, .y = c->srcY, .pitch = c->srcPitch, .rows = c->Height },
        .dst = { .x = c->dstXInBytes, .y = c->dstY, .pitch = c->dstPitch, .rows = c->Height },
        .width = c->WidthInBytes, .height = c->Height, .depth = 1,
    };
    rc = side_of(c->srcMemoryType, c->srcHost, c->srcDevice, &b->src, &b->src_dev);
    return rc != CUDA_SUCCESS ? rc
                              : side_of(c->dstMemoryType, c->dstHost, c->dstDevice, &b->dst,
                                        &b->dst_dev);
}

/* Both sides device memory of one device: the executor's one call. */
static CUresult device_box(const struct box *b, CUstream s, int wait)
{
    ds_copy3d_args a = {
        .dst = { .ptr = b->dst.ptr, .x = b->dst.x, .y = b->dst.y, .z = b->dst.z,
                 .pitch = b->dst.pitch, .rows = b->dst.rows },
        .src = { .ptr = b->src.ptr, .x = b->src.x, .y = b->src.y, .z = b->src.z,
                 .pitch = b->src.pitch, .rows = b->src.rows },
        .width = b->width, .height = b->height, .depth = b->depth,
        .stream = ds__stream_of(s),
    };
    ds_void_res r;

    return wait ? ds_rpc_memcpy_3d(&a, &r) : ds_rpc_memcpy_3d_async(&a);
}

/* Where row ky of slice kz of side s starts, given its first byte. */
static uint64_t row_at(const struct ds_box_side *s, uint64_t first, uint64_t kz, uint64_t ky)
{
    return first + (kz * s->rows + ky) * s->pitch;
}

/* The first bytes and shape of b with rows, then slices, that lie back to back on both
 * sides merged, so that a packed copy is one 1-D copy. */
static void merge_rows(const struct box *b, uint64_t *w, uint64_t *h, uint64_t *d)
{
    *w = b->width;
    *h = b->height;
    *d = b->depth;
    if (*h > 1 && b->dst.pitch == *w && b->src.pitch == *w) {
        *w *= *h;
        *h = 1;
    }
    if (*h == 1 && *d > 1 && b->dst.rows * b->dst.pitch == *w &&
        b->src.rows * b->src.pitch == *w) {
        *w *= *d;
        *d = 1;
    }
}

/* One row between host and device (or host and host), never waiting. */
static CUresult one_row(const struct box *b, uint64_t dst, uint64_t src, uint64_t n,
                        CUstream s)
{
    if (b->dst_dev)
        return ds__copy_htod(dst, (const void *)(uintptr_t)src, n, s, 0);
    if (b->src_dev)
        return ds__copy_dtoh((void *)(uintptr_t)dst, src, n, s, 0);
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

static CUresult host_rows(const struct box *b, uint64_t dfirst, uint64_t sfirst, CUstream s)
{
    uint64_t w, h, d;
    CUresult rc = CUDA_SUCCESS;

    merge_rows(b, &w, &h, &d);
    for (uint64_t kz = 0; kz < d && rc == CUDA_SUCCESS; kz++)
        for (uint64_t ky = 0; ky < h && rc == CUDA_SUCCESS; ky++)
            rc = one_row(b, row_at(&b->dst, dfirst, kz, ky), row_at(&b->src, sfirst, kz, ky),
                         w, s);
    return rc;
}

/* Device to pageable host memory in many rows: each row would be a round trip, so the
 * source's whole extent comes back in one copy when it is not much more than the rows
 * themselves, and the rows are taken from it here. */
static int bounce_worth(const struct box *b, uint64_t dfirst, uint64_t sext)
{
    uint64_t offset, bytes = b->width * b->height * b->depth;

    return b->src_dev && !b->dst_dev && b->height * b->depth > 1 && sext / 2 <= bytes &&
           !ds__hostreg_arena_offset((void *)(uintptr_t)dfirst, 1, &offset);
}

static CUresult bounce(const struct box *b, uint64_t dfirst, uint64_t sfirst, uint64_t sext,
                       CUstream s)
{
    struct box local = *b;
    unsigned char *tmp = malloc(sext);
    CUresult rc;

    if (tmp == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    rc = ds__copy_dtoh(tmp, sfirst, sext, s, 0);
    local.src_dev = 0;
    if (rc == CUDA_SUCCESS)
        rc = host_rows(&local, dfirst, (uint64_t)(uintptr_t)tmp, s);
    free(tmp);
    return rc;
}

/* A box with at least one host side.  Rows of device memory past the end of a known
 * allocation are refused before anything moves; the executor checks each row anyway. */
static CUresult host_box(const struct box *b, uint64_t dfirst, uint64_t dext, uint64_t sfirst,
                         uint64_t sext, CUstream s, int wait)
{
    CUresult rc;

    if ((rc = ds__capture_refuse_host_work(s)) != CUDA_SUCCESS)
        return rc;
    if ((b->dst_dev && ds__mem_runs_past(dfirst, dext)) ||
        (b->src_dev && ds__mem_runs_past(sfirst, sext)))
        return CUDA_ERROR_INVALID_VALUE;
    /* Host to host follows the stream's earlier work, as the device's copy would. */
    if (!b->dst_dev && !b->src_dev && (rc = cuStreamSynchronize(s)) != CUDA_SUCCESS)
        return rc;
    if (bounce_worth(b, dfirst, sext))
        rc = bounce(b, dfirst, sfirst, sext, s);
    else
        rc = host_rows(b, dfirst, sfirst, s);
    return rc != CUDA_SUCCESS || !wait ? rc : cuStreamSynchronize(s);
}

/* Both sides device memory of two devices: the executor's one call on the stream's
 * device, with the other device's side reached through its mapping there (peer.h).
 * dfirst, sfirst: where each side's first row starts; dext, sext: their extents. */
static CUresult peer_box(const struct box *b, int ddev, uint64_t dfirst, uint64_t dext, int sdev,
                         uint64_t sfirst, uint64_t sext, CUstream s, int wait)
{
    struct ds_peer_run r;
    struct box there = *b;
    uint64_t to, from;
    CUresult rc;

    if ((rc = ds__peer_run_on(s, NULL, &r)) != CUDA_SUCCESS ||
        (rc = ds__peer_reach(&r, sfirst, sdev, sext, &from)) != CUDA_SUCCESS ||
        (rc = ds__peer_reach(&r, dfirst, ddev, dext, &to)) != CUDA_SUCCESS)
        return rc;
    if (wait && (rc = ds__peer_settle(&r, ddev, sdev)) != CUDA_SUCCESS)
        return rc;
    /* The first row's start moved with the allocation; the offsets within stay. */
    there.src.ptr += from - sfirst;
    there.dst.ptr += to - dfirst;
    if ((rc = ds__peer_enter(&r)) != CUDA_SUCCESS)
        return rc;
    rc = device_box(&there, s, wait);
    ds__peer_leave();
    return rc;
}

static CUresult copy_box(const struct box *b, CUstream s, int wait)
{
    uint64_t dfirst, dext, sfirst, sext;
    int ddev, sdev;

    if (b->width == 0 || b->height == 0 || b->depth == 0)
        return CUDA_SUCCESS;
    if (ds_box_span(&b->dst, b->width, b->height, b->depth, &dfirst, &dext) != 0 ||
        ds_box_span(&b->src, b->width, b->height, b->depth, &sfirst, &sext) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((!b->dst_dev && b->dst.ptr == 0) || (!b->src_dev && b->src.ptr == 0))
        return CUDA_ERROR_INVALID_VALUE;
    if (b->dst_dev && b->src_dev && ds__peer_across(dfirst, sfirst, &ddev, &sdev))
        return peer_box(b, ddev, dfirst, dext, sdev, sfirst, sext, s, wait);
    if (b->dst_dev && b->src_dev)
        return device_box(b, s, wait);
    return host_box(b, dfirst, dext, sfirst, sext, s, wait);
}

static int has_array(CUmemorytype dst, CUmemorytype src)
{
    return dst == CU_MEMORYTYPE_ARRAY || src == CU_MEMORYTYPE_ARRAY;
}

/* A 2-D copy as the one-slice 3-D copy it is. */
static CUDA_MEMCPY3D as_3d(const CUDA_MEMCPY2D *c)
{
    return (CUDA_MEMCPY3D){
        .srcXInBytes = c->srcXInBytes, .srcY = c->srcY, .srcMemoryType = c->srcMemoryType,
        .srcHost = c->srcHost, .srcDevice = c->srcDevice, .srcArray = c->srcArray,
        .srcPitch = c->srcPitch, .srcHeight = c->Height,
        .dstXInBytes = c->dstXInBytes, .dstY = c->dstY, .dstMemoryType = c->dstMemoryType,
        .dstHost = c->dstHost, .dstDevice = c->dstDevice, .dstArray = c->dstArray,
        .dstPitch = c->dstPitch, .dstHeight = c->Height,
        .WidthInBytes = c->WidthInBytes, .Height = c->Height, .Depth = 1,
    };
}

static CUresult copy_2d(const CUDA_MEMCPY2D *c, CUstream s, int wait)
{
    struct box b;
    CUDA_MEMCPY3D c3;
    CUresult rc;

    DS_NEED_INIT();
    if (c == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (has_array(c->dstMemoryType, c->srcMemoryType)) {
        c3 = as_3d(c);
        return ds__array_copy_3d(&c3, s, wait);
    }
    if ((rc = box_of_2d(c, &b)) != CUDA_SUCCESS)
        return rc;
    return copy_box(&b, s, wait);
}

static CUresult copy_3d(const CUDA_MEMCPY3D *c, CUstream s, int wait)
{
    struct box b;
    CUresult rc;

    DS_NEED_INIT();
    if (c == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (has_array(c->dstMemoryType, c->srcMemoryType))
        return ds__array_copy_3d(c, s, wait);
    if ((rc = box_of_3d(c, &b)) != CUDA_SUCCESS)
        return rc;
    return copy_box(&b, s, wait);
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c)
{
    return copy_2d(c, NULL, 1);
}

/* The executor's strided copies have no alignment rule to relax. */
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *c)
{
    return copy_2d(c, NULL, 1);
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s)
{
    return copy_2d(c, s, 0);
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *c)
{
    return copy_3d(c, NULL, 1);
}

CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *c, CUstream s)
{
    return copy_3d(c, s, 0);
}

/* Within one device, every context of the tenant's can reach all its memory: the peer
 * forms are the plain copies once both contexts are named, and the executor checks the
 * addresses against the tenant's memory whatever context they came from.  Between two
 * servers' devices the copy runs on its stream's device, the NULL stream being the
 * destination context's legacy stream, and cuMemcpyPeer first waits for all the work of
 * the source's context (peer.h). */
static CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                          size_t n, CUstream s, int wait)
{
    struct ds_peer_run r;
    int ddev, sdev;
    CUresult rc;

    DS_NEED_INIT();
    if (dst_ctx == NULL || src_ctx == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ds__peer_across(dst, src, &ddev, &sdev))
        return ds__dtod_copy(dst, src, n, s, wait);
    if (ds__route_dev_of((uint64_t)(uintptr_t)dst_ctx) != ddev ||
        ds__route_dev_of((uint64_t)(uintptr_t)src_ctx) != sdev)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((rc = ds__peer_run_on(s, dst_ctx, &r)) != CUDA_SUCCESS)
        return rc;
    return ds__peer_copy(&r, dst, ddev, src, sdev, n, src_ctx, wait);
}

CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                      size_t n)
{
    return copy_peer(dst, dst_ctx, src, src_ctx, n, NULL, 1);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                           CUcontext src_ctx, size_t n, CUstream s)
{
    return copy_peer(dst, dst_ctx, src, src_ctx, n, s, 0);
}

static CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER *p, CUstream s, int wait)
{
    CUDA_MEMCPY3D c;

    DS_NEED_INIT();
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((p->srcMemoryType != CU_MEMORYTYPE_ARRAY && p->srcContext == NULL) ||
        (p->dstMemoryType != CU_MEMORYTYPE_ARRAY && p->dstContext == NULL))
        return CUDA_ERROR_INVALID_CONTEXT;
    c = (CUDA_MEMCPY3D){
        .srcXInBytes = p->srcXInBytes, .srcY = p->srcY, .srcZ = p->srcZ,
        .srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost, .srcDevice = p->srcDevice,
        .srcArray = p->srcArray, .srcPitch = p->srcPitch, .srcHeight = p->srcHeight,
        .dstXInBytes = p->dstXInBytes, .dstY = p->dstY, .dstZ = p->dstZ,
        .dstMemoryType = p->dstMemoryType, .dstHost = p->dstHost, .dstDevice = p->dstDevice,
        .dstArray = p->dstArray, .dstPitch = p->dstPitch, .dstHeight = p->dstHeight,
        .WidthInBytes = p->WidthInBytes, .Height = p->Height, .Depth = p->Depth,
    };
    return copy_3d(&c, s, wait);
}

CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p)
{
    return copy_3d_peer(p, NULL, 1);
}

CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
    return copy_3d_peer(p, s, 0);
}
