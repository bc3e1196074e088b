/*
 * CUDA arrays and mipmapped arrays (cuArrayCreate, cuArray3DCreate, cuMipmappedArray*,
 * their descriptors), and every copy with an array on one side: the 1-D forms
 * (cuMemcpyHtoA, ...AtoA) and cuMemcpy2D/3D with CU_MEMORYTYPE_ARRAY, which pitch.c
 * hands here.  An array is the executor's handle; its layout on the device is the
 * device's own, so every copy names the array and a box in it, and the executor checks
 * the box.  Between an array and device memory (or another array) a box is one call; a
 * box with a host side travels in chunks of whole rows (or parts of one very long row)
 * packed in-band, the host rows packed and unpacked here.
 *
 * No array detshare makes is sparse, deferred-mapping or multi-planar (the executor
 * refuses those), so their queries answer as the driver does for other arrays.
 */
#include "cuda_api.h"

#include "array.h"
#include "capture.h"
#include "ctx.h"
#include "ds_box.h"
#include "mem.h"
#include "rpc.h"
#include "stream.h"

#include <stdlib.h>
#include <string.h>

static ds_handle handle_of(const void *a)
{
    return (ds_handle)(uintptr_t)a;
}

static CUresult create(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels, ds_handle *out)
{
    ds_array_create_args a = {
        .desc = { .width = d->Width, .height = d->Height, .depth = d->Depth,
                  .format = (int)d->Format, .channels = d->NumChannels, .flags = d->Flags },
        .levels = levels,
    };
    ds_handle_res r;
    CUresult rc;

    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    if ((rc = ds_rpc_array_create(&a, &r)) == CUDA_SUCCESS)
        *out = r.ds_handle_res_u.handle;
    return rc;
}

CUresult cuArray3DCreate_v2(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    ds_handle h;
    CUresult rc;

    DS_NEED_INIT();
    if (out == NULL || d == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = create(d, 0, &h)) == CUDA_SUCCESS)
        *out = (CUarray)(uintptr_t)h;
    return rc;
}

CUresult cuArrayCreate_v2(CUarray *out, const CUDA_ARRAY_DESCRIPTOR *d)
{
    CUDA_ARRAY3D_DESCRIPTOR d3;

    DS_NEED_INIT();
    if (d == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    d3 = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = d->Width, .Height = d->Height,
                                    .Format = d->Format, .NumChannels = d->NumChannels };
    return cuArray3DCreate_v2(out, &d3);
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *out, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                unsigned int levels)
{
    ds_handle h;
    CUresult rc;

    DS_NEED_INIT();
    if (out == NULL || d == NULL || levels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = create(d, levels, &h)) == CUDA_SUCCESS)
        *out = (CUmipmappedArray)(uintptr_t)h;
    return rc;
}

static CUresult destroy(const void *a, int mipmapped)
{
    ds_array_ref ref = { .handle = handle_of(a), .mipmapped = mipmapped };
    ds_void_res r;

    DS_NEED_INIT();
    return ds_rpc_array_destroy(&ref, &r);
}

CUresult cuArrayDestroy(CUarray a)
{
    return destroy(a, 0);
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray m)
{
    return destroy(m, 1);
}

static CUresult info(const void *a, int mipmapped, ds_array_info *out)
{
    ds_array_ref ref = { .handle = handle_of(a), .mipmapped = mipmapped };
    ds_array_info_res r;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = ds_rpc_array_info(&ref, &r)) == CUDA_SUCCESS)
        *out = r.ds_array_info_res_u.info;
    return rc;
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *d, CUarray a)
{
    ds_array_info i;
    CUresult rc;

    if (d == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = info(a, 0, &i)) != CUDA_SUCCESS)
        return rc;
    *d = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = i.desc.width, .Height = i.desc.height,
                                    .Depth = i.desc.depth,
                                    .Format = (CUarray_format)i.desc.format,
                                    .NumChannels = i.desc.channels, .Flags = i.desc.flags };
    return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *d, CUarray a)
{
    CUDA_ARRAY3D_DESCRIPTOR d3;
    CUresult rc;

    if (d == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = cuArray3DGetDescriptor_v2(&d3, a)) != CUDA_SUCCESS)
        return rc;
    *d = (CUDA_ARRAY_DESCRIPTOR){ .Width = d3.Width, .Height = d3.Height, .Format = d3.Format,
                                  .NumChannels = d3.NumChannels };
    return CUDA_SUCCESS;
}

/* Only deferred-mapping arrays have requirements to report, and detshare makes none:
 * the driver's answer for every other array. */
static CUresult requirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *m, const void *a, int mipmapped,
                             CUdevice dev)
{
    ds_array_info i;
    CUresult rc;

    if (m == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if ((rc = info(a, mipmapped, &i)) != CUDA_SUCCESS)
        return rc;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *m, CUarray a, CUdevice dev)
{
    return requirements(m, a, 0, dev);
}

CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *m,
                                               CUmipmappedArray a, CUdevice dev)
{
    return requirements(m, a, 1, dev);
}

/* Planes are for multi-planar formats, which detshare does not serve. */
CUresult cuArrayGetPlane(CUarray *plane, CUarray a, unsigned int idx)
{
    ds_array_info i;
    CUresult rc;

    (void)idx;
    if (plane == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = info(a, 0, &i)) != CUDA_SUCCESS)
        return rc;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMipmappedArrayGetLevel(CUarray *level, CUmipmappedArray m, unsigned int idx)
{
    ds_mipmap_level_args a = { .mipmap = handle_of(m), .level = idx };
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (level == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds_rpc_mipmap_level(&a, &r)) == CUDA_SUCCESS)
        *level = (CUarray)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

/* One side of a copy: host memory (host set), or device memory or an array as the
 * wire names them. */
struct side {
    ds_array_side w;
    unsigned char *host;
};

static CUresult side_of(CUmemorytype type, const void *host, CUdeviceptr dev, CUarray arr,
                        size_t x, size_t y, size_t z, size_t pitch, size_t rows, struct side *s)
{
    *s = (struct side){ .w = { .x = x, .y = y, .z = z, .pitch = pitch, .rows = rows } };
    /* A unified address is device memory or the tenant's host memory, told by pointer. */
    if (type == CU_MEMORYTYPE_UNIFIED) {
        type = ds__mem_is_device(dev) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        host = type == CU_MEMORYTYPE_HOST ? (const void *)(uintptr_t)dev : NULL;
    }
    switch (type) {
    case CU_MEMORYTYPE_ARRAY:
        if (arr == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        s->w.array = handle_of(arr);
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_DEVICE:
        s->w.ptr = dev;
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_HOST:
        s->host = (unsigned char *)(uintptr_t)host;
        return s->host == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* A host side's row (z, y) of a box whose first byte is first. */
static unsigned char *host_row(const struct side *s, unsigned char *first, uint64_t z,
                               uint64_t y)
{
    return first + (z * s->w.rows + y) * s->w.pitch;
}

/* The box's rows of slice z from row y, n of them, or part x0..x0+w of one row, as
 * chunks go: whole rows when a row fits in a chunk, else parts of each row. */
struct chunk {
    uint64_t z, y, rows, x, width;
};

/* Chunk c (its z, y and x set) with as many rows, or as much of a row, as fit. */
static void chunk_fill(struct chunk *c, uint64_t width, uint64_t height)
{
    if (width <= DS_CHUNK_MAX) {
        uint64_t fit = DS_CHUNK_MAX / width;

        c->rows = height - c->y < fit ? height - c->y : fit;
        c->width = width;
        c->x = 0;
        return;
    }
    c->rows = 1;
    c->width = width - c->x < DS_CHUNK_MAX ? width - c->x : DS_CHUNK_MAX;
}

/* The next chunk after c, or 0 at the end. */
static int chunk_next(struct chunk *c, uint64_t width, uint64_t height, uint64_t depth)
{
    if (c->x + c->width < width) {
        c->x += c->width;
    } else if (c->y + c->rows < height) {
        c->x = 0;
        c->y += c->rows;
    } else if (c->z + 1 < depth) {
        c->x = 0;
        c->y = 0;
        c->z++;
    } else {
        return 0;
    }
    chunk_fill(c, width, height);
    return 1;
}

static ds_array_side at_chunk(const ds_array_side *w, const struct chunk *c)
{
    ds_array_side a = *w;

    a.x += c->x;
    a.y += c->y;
    a.z += c->z;
    return a;
}

static CUresult write_box(const struct side *dst, const struct side *src, unsigned char *first,
                          uint64_t width, uint64_t height, uint64_t depth, CUstream s)
{
    struct chunk c = { 0 };
    unsigned char *buf = malloc(width < DS_CHUNK_MAX ? DS_CHUNK_MAX / width * width
                                                     : DS_CHUNK_MAX);
    CUresult rc = CUDA_SUCCESS;

    if (buf == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    chunk_fill(&c, width, height);
    do {
        ds_array_write_args a = { .dst = at_chunk(&dst->w, &c), .width = c.width,
                                  .height = c.rows, .depth = 1, .stream = ds__stream_of(s) };

        for (uint64_t k = 0; k < c.rows; k++)
            memcpy(buf + k * c.width, host_row(src, first, c.z, c.y + k) + c.x, c.width);
        a.data.data_len = (u_int)(c.width * c.rows);
        a.data.data_val = (char *)buf;
        rc = ds_rpc_array_write_async(&a);
    } while (rc == CUDA_SUCCESS && chunk_next(&c, width, height, depth));
    free(buf);
    return rc;
}

static CUresult read_box(const struct side *dst, const struct side *src, unsigned char *first,
                         uint64_t width, uint64_t height, uint64_t depth, CUstream s)
{
    struct chunk c = { 0 };
    CUresult rc;

    chunk_fill(&c, width, height);
    do {
        ds_array_read_args a = { .src = at_chunk(&src->w, &c), .width = c.width,
                                 .height = c.rows, .depth = 1, .stream = ds__stream_of(s) };
        ds_bytes_res r = { 0 };

        if ((rc = ds_rpc_array_read(&a, &r)) != CUDA_SUCCESS)
            return rc;
        if (r.ds_bytes_res_u.data.data_len != c.width * c.rows)
            rc = CUDA_ERROR_INVALID_VALUE;
        for (uint64_t k = 0; k < c.rows && rc == CUDA_SUCCESS; k++)
            memcpy(host_row(dst, first, c.z, c.y + k) + c.x,
                   r.ds_bytes_res_u.data.data_val + k * c.width, c.width);
        ds__rpc_free((xdrproc_t)xdr_ds_bytes_res, &r);
    } while (rc == CUDA_SUCCESS && chunk_next(&c, width, height, depth));
    return rc;
}

/* A box between host memory and an array. */
static CUresult host_box(const struct side *dst, const struct side *src, uint64_t width,
                         uint64_t height, uint64_t depth, CUstream s, int wait)
{
    const struct side *h = dst->host != NULL ? dst : src;
    struct ds_box_side b = { .ptr = (uint64_t)(uintptr_t)h->host, .x = h->w.x, .y = h->w.y,
                             .z = h->w.z, .pitch = h->w.pitch, .rows = h->w.rows };
    uint64_t first, extent;
    CUresult rc;

    if ((dst->host == NULL) == (src->host == NULL) || (h == dst ? src : dst)->w.array == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds_box_span(&b, width, height, depth, &first, &extent) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__capture_refuse_host_work(s)) != CUDA_SUCCESS)
        return rc;
    if (h == dst)
        return read_box(dst, src, (unsigned char *)(uintptr_t)first, width, height, depth, s);
    rc = write_box(dst, src, (unsigned char *)(uintptr_t)first, width, height, depth, s);
    return rc != CUDA_SUCCESS || !wait ? rc : cuStreamSynchronize(s);
}

static CUresult device_box(const struct side *dst, const struct side *src, uint64_t width,
                           uint64_t height, uint64_t depth, CUstream s, int wait)
{
    ds_array_copy_args a = { .dst = dst->w, .src = src->w, .width = width, .height = height,
                             .depth = depth, .stream = ds__stream_of(s) };
    ds_void_res r;

    return wait ? ds_rpc_array_copy(&a, &r) : ds_rpc_array_copy_async(&a);
}

CUresult ds__array_copy_3d(const CUDA_MEMCPY3D *c, CUstream s, int wait)
{
    struct side dst, src;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = side_of(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes,
                      c->dstY, c->dstZ, c->dstPitch, c->dstHeight, &dst)) != CUDA_SUCCESS ||
        (rc = side_of(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes,
                      c->srcY, c->srcZ, c->srcPitch, c->srcHeight, &src)) != CUDA_SUCCESS)
        return rc;
    if (c->WidthInBytes == 0 || c->Height == 0 || c->Depth == 0)
        return CUDA_SUCCESS;
    if (dst.host != NULL || src.host != NULL)
        return host_box(&dst, &src, c->WidthInBytes, c->Height, c->Depth, s, wait);
    return device_box(&dst, &src, c->WidthInBytes, c->Height, c->Depth, s, wait);
}

/* The 1-D forms: n bytes from byte offset off of an array's first row. */
static CUresult linear(CUmemorytype dt, void *dh, CUdeviceptr dd, CUarray da, size_t doff,
                       CUmemorytype st, const void *sh, CUdeviceptr sd, CUarray sa, size_t soff,
                       size_t n, CUstream s, int wait)
{
    CUDA_MEMCPY3D c = {
        .dstMemoryType = dt, .dstHost = dh, .dstDevice = dd, .dstArray = da,
        .dstXInBytes = da != NULL ? doff : 0,
        .srcMemoryType = st, .srcHost = sh, .srcDevice = sd, .srcArray = sa,
        .srcXInBytes = sa != NULL ? soff : 0,
        .WidthInBytes = n, .Height = 1, .Depth = 1,
    };

    return ds__array_copy_3d(&c, s, wait);
}

CUresult cuMemcpyHtoA_v2(CUarray dst, size_t off, const void *src, size_t n)
{
    return linear(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, off, CU_MEMORYTYPE_HOST, src, 0, NULL, 0,
                  n, NULL, 1);
}

CUresult cuMemcpyHtoAAsync_v2(CUarray dst, size_t off, const void *src, size_t n, CUstream s)
{
    return linear(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, off, CU_MEMORYTYPE_HOST, src, 0, NULL, 0,
                  n, s, 0);
}

CUresult cuMemcpyAtoH_v2(void *dst, CUarray src, size_t off, size_t n)
{
    return linear(CU_MEMORYTYPE_HOST, dst, 0, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL, 0, src, off,
                  n, NULL, 1);
}

CUresult cuMemcpyAtoHAsync_v2(void *dst, CUarray src, size_t off, size_t n, CUstream s)
{
    return linear(CU_MEMORYTYPE_HOST, dst, 0, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL, 0, src, off,
                  n, s, 0);
}

CUresult cuMemcpyDtoA_v2(CUarray dst, size_t off, CUdeviceptr src, size_t n)
{
    return linear(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, off, CU_MEMORYTYPE_DEVICE, NULL, src, NULL,
                  0, n, NULL, 1);
}

CUresult cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray src, size_t off, size_t n)
{
    return linear(CU_MEMORYTYPE_DEVICE, NULL, dst, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL, 0, src,
                  off, n, NULL, 1);
}

CUresult cuMemcpyAtoA_v2(CUarray dst, size_t doff, CUarray src, size_t soff, size_t n)
{
    return linear(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, doff, CU_MEMORYTYPE_ARRAY, NULL, 0, src,
                  soff, n, NULL, 1);
}
