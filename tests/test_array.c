/* CUDA arrays, mipmapped arrays, texture and surface objects through the driver API.
 * Every copy into or out of an array is also applied to a host image of the array, and
 * the array read back whole must equal the image byte for byte: formats and channel
 * counts of every element size, 1-D, 2-D, 3-D and layered shapes, sub-boxes in every
 * direction (host, device memory, another array; 1-D, 2-D and 3-D calls, synchronous and
 * async).  Also descriptors read back, refusals of bad handles, shapes and boxes, and a
 * tenant's arrays counted against its memory and freed when it exits. */
#include "ds_test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB (1u << 20)

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 1, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(array, .init = start, .fini = stop, .timeout = 300);

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;

    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

/* An array and its host image: packed rows of w * elem bytes, h rows, d slices. */
struct image {
    CUarray a;
    size_t w, h, d, elem, row;
    unsigned char *bytes;
};

static void image_new(struct image *im, size_t w, size_t h, size_t d, CUarray_format f,
                      unsigned channels, size_t elem, unsigned flags)
{
    CUDA_ARRAY3D_DESCRIPTOR desc = { .Width = w, .Height = h, .Depth = d, .Format = f,
                                     .NumChannels = channels, .Flags = flags };

    *im = (struct image){ .w = w, .h = h ? h : 1, .d = d ? d : 1, .elem = elem,
                          .row = w * elem };
    CU_OK(cuArray3DCreate(&im->a, &desc));
    im->bytes = calloc(1, im->row * im->h * im->d);
    cr_assert_not_null(im->bytes);
}

static void image_free(struct image *im)
{
    CU_OK(cuArrayDestroy(im->a));
    free(im->bytes);
}

/* The whole array, read back with cuMemcpy3D, equals its image. */
static void image_check(const struct image *im)
{
    size_t n = im->row * im->h * im->d;
    unsigned char *got = malloc(n);
    CUDA_MEMCPY3D c = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = im->a,
                        .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = got,
                        .dstPitch = im->row, .dstHeight = im->h,
                        .WidthInBytes = im->row, .Height = im->h, .Depth = im->d };

    cr_assert_not_null(got);
    CU_OK(cuMemcpy3D(&c));
    cr_assert_eq(memcmp(got, im->bytes, n), 0, "the array differs from its image");
    free(got);
}

/* The whole array written from a pattern, image too. */
static void image_fill(struct image *im, unsigned seed)
{
    CUDA_MEMCPY3D c = { .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = im->a,
                        .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = im->bytes,
                        .srcPitch = im->row, .srcHeight = im->h,
                        .WidthInBytes = im->row, .Height = im->h, .Depth = im->d };

    fill_pattern(im->bytes, im->row * im->h * im->d, seed);
    CU_OK(cuMemcpy3D(&c));
}

/* A box of w bytes x h rows x d slices between two places of (pitch, rows) layout. */
static void model_box(unsigned char *dst, size_t dpitch, size_t drows, size_t dx, size_t dy,
                      size_t dz, const unsigned char *src, size_t spitch, size_t srows,
                      size_t sx, size_t sy, size_t sz, size_t w, size_t h, size_t d)
{
    for (size_t z = 0; z < d; z++)
        for (size_t y = 0; y < h; y++)
            memmove(dst + ((dz + z) * drows + dy + y) * dpitch + dx,
                    src + ((sz + z) * srows + sy + y) * spitch + sx, w);
}

struct fmt {
    CUarray_format f;
    unsigned channels;
    size_t elem;
};

static const struct fmt formats[] = {
    { CU_AD_FORMAT_UNSIGNED_INT8, 1, 1 },  { CU_AD_FORMAT_UNSIGNED_INT8, 2, 2 },
    { CU_AD_FORMAT_UNSIGNED_INT8, 4, 4 },  { CU_AD_FORMAT_SIGNED_INT8, 1, 1 },
    { CU_AD_FORMAT_UNSIGNED_INT16, 1, 2 }, { CU_AD_FORMAT_SIGNED_INT16, 2, 4 },
    { CU_AD_FORMAT_HALF, 4, 8 },           { CU_AD_FORMAT_UNSIGNED_INT32, 1, 4 },
    { CU_AD_FORMAT_SIGNED_INT32, 2, 8 },   { CU_AD_FORMAT_FLOAT, 1, 4 },
    { CU_AD_FORMAT_FLOAT, 2, 8 },          { CU_AD_FORMAT_FLOAT, 4, 16 },
    { CU_AD_FORMAT_UNORM_INT8X1, 1, 1 },   { CU_AD_FORMAT_UNORM_INT8X4, 4, 4 },
    { CU_AD_FORMAT_SNORM_INT16X2, 2, 4 },  { CU_AD_FORMAT_UNORM_INT16X4, 4, 8 },
};

Test(array, every_format_round_trips_and_reports_its_descriptor)
{
    ds_test_ctx();
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        const struct fmt *f = &formats[i];
        CUDA_ARRAY_DESCRIPTOR d2 = { .Width = 37, .Height = 11, .Format = f->f,
                                     .NumChannels = f->channels }, got2;
        CUDA_ARRAY3D_DESCRIPTOR got3;
        struct image im = { .w = 37, .h = 11, .d = 1, .elem = f->elem, .row = 37 * f->elem };

        CU_OK(cuArrayCreate(&im.a, &d2));
        im.bytes = malloc(im.row * im.h);
        image_fill(&im, (unsigned)i + 1);
        image_check(&im);
        CU_OK(cuArrayGetDescriptor(&got2, im.a));
        cr_assert(got2.Width == 37 && got2.Height == 11 && got2.Format == f->f &&
                  got2.NumChannels == f->channels, "format %zu", i);
        CU_OK(cuArray3DGetDescriptor(&got3, im.a));
        cr_assert(got3.Width == 37 && got3.Height == 11 && got3.Depth == 0 &&
                  got3.Flags == 0 && got3.Format == f->f, "format %zu", i);
        image_free(&im);
    }
}

Test(array, sub_boxes_of_a_3d_array_in_every_direction)
{
    struct image im, other;
    size_t hp = 200, hrows = 9; /* a host or device side: rows of 200 bytes, 9 a slice */
    unsigned char *host = malloc(hp * hrows * 4), *back = malloc(hp * hrows * 4);
    unsigned char *dimg = malloc(hp * hrows * 4);
    CUdeviceptr dev;
    CUstream s;

    cr_assert(host && back && dimg);
    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    image_new(&im, 13, 7, 5, CU_AD_FORMAT_FLOAT, 2, 8, 0);
    image_new(&other, 9, 6, 4, CU_AD_FORMAT_FLOAT, 2, 8, 0);
    image_fill(&im, 3);
    image_fill(&other, 4);
    fill_pattern(host, hp * hrows * 4, 5);
    fill_pattern(dimg, hp * hrows * 4, 6);
    CU_OK(cuMemAlloc(&dev, hp * hrows * 4));
    CU_OK(cuMemcpyHtoD(dev, dimg, hp * hrows * 4));

    /* Host to array, synchronous then async. */
    CUDA_MEMCPY3D c = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcXInBytes = 24,
                        .srcY = 1, .srcZ = 1, .srcPitch = hp, .srcHeight = hrows,
                        .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = im.a,
                        .dstXInBytes = 16, .dstY = 2, .dstZ = 1,
                        .WidthInBytes = 56, .Height = 4, .Depth = 3 };
    CU_OK(cuMemcpy3D(&c));
    model_box(im.bytes, im.row, im.h, 16, 2, 1, host, hp, hrows, 24, 1, 1, 56, 4, 3);
    c.srcZ = 0;
    c.dstXInBytes = 0;
    c.dstY = 0;
    c.dstZ = 3;
    c.Depth = 2;
    CU_OK(cuMemcpy3DAsync(&c, s));
    CU_OK(cuStreamSynchronize(s));
    model_box(im.bytes, im.row, im.h, 0, 0, 3, host, hp, hrows, 24, 1, 0, 56, 4, 2);
    image_check(&im);

    /* Device memory to array, and array to device memory. */
    CUDA_MEMCPY3D dd = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = dev,
                         .srcXInBytes = 8, .srcY = 3, .srcZ = 2, .srcPitch = hp,
                         .srcHeight = hrows, .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                         .dstArray = im.a, .dstXInBytes = 40, .dstY = 1, .dstZ = 0,
                         .WidthInBytes = 64, .Height = 6, .Depth = 2 };
    CU_OK(cuMemcpy3DAsync(&dd, s));
    CU_OK(cuStreamSynchronize(s));
    model_box(im.bytes, im.row, im.h, 40, 1, 0, dimg, hp, hrows, 8, 3, 2, 64, 6, 2);
    image_check(&im);
    CUDA_MEMCPY3D ad = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = im.a,
                         .srcXInBytes = 8, .srcY = 2, .srcZ = 1,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dev,
                         .dstXInBytes = 100, .dstY = 0, .dstZ = 1, .dstPitch = hp,
                         .dstHeight = hrows, .WidthInBytes = 80, .Height = 5, .Depth = 3 };
    CU_OK(cuMemcpy3D(&ad));
    model_box(dimg, hp, hrows, 100, 0, 1, im.bytes, im.row, im.h, 8, 2, 1, 80, 5, 3);
    CU_OK(cuMemcpyDtoH(back, dev, hp * hrows * 4));
    cr_assert_eq(memcmp(back, dimg, hp * hrows * 4), 0, "device memory after AtoD");

    /* Array to array. */
    CUDA_MEMCPY3D aa = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = other.a,
                         .srcXInBytes = 16, .srcY = 1, .srcZ = 1,
                         .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = im.a,
                         .dstXInBytes = 32, .dstY = 2, .dstZ = 2,
                         .WidthInBytes = 48, .Height = 5, .Depth = 3 };
    CU_OK(cuMemcpy3D(&aa));
    model_box(im.bytes, im.row, im.h, 32, 2, 2, other.bytes, other.row, other.h, 16, 1, 1, 48,
              5, 3);
    image_check(&im);

    /* Array to host, into a pitched host box; the bytes around it stay. */
    memcpy(back, host, hp * hrows * 4);
    CUDA_MEMCPY3D ah = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = im.a,
                         .srcXInBytes = 24, .srcY = 1, .srcZ = 2,
                         .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = back,
                         .dstXInBytes = 3, .dstY = 2, .dstZ = 1, .dstPitch = hp,
                         .dstHeight = hrows, .WidthInBytes = 72, .Height = 6, .Depth = 3 };
    CU_OK(cuMemcpy3DAsync(&ah, s));
    CU_OK(cuStreamSynchronize(s));
    model_box(host, hp, hrows, 3, 2, 1, im.bytes, im.row, im.h, 24, 1, 2, 72, 6, 3);
    cr_assert_eq(memcmp(back, host, hp * hrows * 4), 0, "host memory after AtoH");

    CU_OK(cuMemFree(dev));
    CU_OK(cuStreamDestroy(s));
    image_free(&im);
    image_free(&other);
    free(host);
    free(back);
    free(dimg);
}

Test(array, the_2d_and_1d_calls)
{
    struct image a2, b2, a1, b1;
    unsigned char host[512], back[512], dimg[512];
    CUdeviceptr dev;

    ds_test_ctx();
    image_new(&a2, 20, 10, 0, CU_AD_FORMAT_UNSIGNED_INT16, 2, 4, 0);
    image_new(&b2, 20, 10, 0, CU_AD_FORMAT_UNSIGNED_INT16, 2, 4, 0);
    image_fill(&a2, 7);
    image_fill(&b2, 8);
    fill_pattern(host, sizeof(host), 9);
    CUDA_MEMCPY2D c = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 50,
                        .srcXInBytes = 2, .srcY = 1, .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                        .dstArray = a2.a, .dstXInBytes = 12, .dstY = 3,
                        .WidthInBytes = 40, .Height = 6 };
    CU_OK(cuMemcpy2D(&c));
    model_box(a2.bytes, a2.row, a2.h, 12, 3, 0, host, 50, 10, 2, 1, 0, 40, 6, 1);
    CUDA_MEMCPY2D aa = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = b2.a,
                         .srcXInBytes = 4, .srcY = 2, .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                         .dstArray = a2.a, .dstXInBytes = 0, .dstY = 0,
                         .WidthInBytes = 32, .Height = 5 };
    CU_OK(cuMemcpy2DAsync(&aa, NULL));
    CU_OK(cuCtxSynchronize());
    model_box(a2.bytes, a2.row, a2.h, 0, 0, 0, b2.bytes, b2.row, b2.h, 4, 2, 0, 32, 5, 1);
    image_check(&a2);

    /* The 1-D forms on 1-D arrays, at byte offsets. */
    image_new(&a1, 100, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 4, 0);
    image_new(&b1, 100, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 4, 0);
    image_fill(&a1, 10);
    image_fill(&b1, 11);
    CU_OK(cuMemcpyHtoA(a1.a, 16, host, 64));
    memcpy(a1.bytes + 16, host, 64);
    CU_OK(cuMemcpyHtoAAsync(a1.a, 200, host + 100, 40, NULL));
    memcpy(a1.bytes + 200, host + 100, 40);
    CU_OK(cuMemcpyAtoA(a1.a, 300, b1.a, 8, 48));
    memcpy(a1.bytes + 300, b1.bytes + 8, 48);
    fill_pattern(dimg, sizeof(dimg), 12);
    CU_OK(cuMemAlloc(&dev, sizeof(dimg)));
    CU_OK(cuMemcpyHtoD(dev, dimg, sizeof(dimg)));
    CU_OK(cuMemcpyDtoA(a1.a, 360, dev + 4, 40));
    memcpy(a1.bytes + 360, dimg + 4, 40);
    image_check(&a1);
    CU_OK(cuMemcpyAtoD(dev + 128, a1.a, 20, 120));
    memcpy(dimg + 128, a1.bytes + 20, 120);
    CU_OK(cuMemcpyDtoH(back, dev, sizeof(dimg)));
    cr_assert_eq(memcmp(back, dimg, sizeof(dimg)), 0);
    memset(back, 0, sizeof(back));
    CU_OK(cuMemcpyAtoH(back, a1.a, 0, 400));
    cr_assert_eq(memcmp(back, a1.bytes, 400), 0);
    memset(back, 0, sizeof(back));
    CU_OK(cuMemcpyAtoHAsync(back, a1.a, 100, 200, NULL));
    cr_assert_eq(memcmp(back, a1.bytes + 100, 200), 0);

    CU_OK(cuMemFree(dev));
    image_free(&a2);
    image_free(&b2);
    image_free(&a1);
    image_free(&b1);
}

/* Host boxes larger than one in-band chunk travel in several. */
Test(array, boxes_larger_than_a_chunk)
{
    struct image im;

    ds_test_ctx();
    image_new(&im, 1024, 1536, 0, CU_AD_FORMAT_FLOAT, 1, 4, 0);
    image_fill(&im, 13);
    image_check(&im);
    image_free(&im);
}

Test(array, layered_cubemap_and_mipmapped_shapes)
{
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 16, .Height = 16, .Depth = 6,
                                  .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4,
                                  .Flags = CUDA_ARRAY3D_CUBEMAP }, got;
    CUmipmappedArray m;
    CUarray lv, lv2;
    struct image im;

    ds_test_ctx();
    image_new(&im, 16, 16, 6, CU_AD_FORMAT_UNSIGNED_INT8, 4, 4, CUDA_ARRAY3D_CUBEMAP);
    image_fill(&im, 14);
    image_check(&im);
    CU_OK(cuArray3DGetDescriptor(&got, im.a));
    cr_assert_eq(got.Flags, CUDA_ARRAY3D_CUBEMAP);
    image_free(&im);
    image_new(&im, 30, 0, 5, CU_AD_FORMAT_HALF, 1, 2, CUDA_ARRAY3D_LAYERED);
    image_fill(&im, 15);
    image_check(&im);
    image_free(&im);

    d = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = 64, .Height = 20, .Depth = 3,
                                   .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1,
                                   .Flags = CUDA_ARRAY3D_LAYERED };
    CU_OK(cuMipmappedArrayCreate(&m, &d, 7));
    CU_OK(cuMipmappedArrayGetLevel(&lv, m, 3));
    CU_OK(cuMipmappedArrayGetLevel(&lv2, m, 3));
    cr_assert_eq(lv, lv2, "a level is one array");
    CU_OK(cuArray3DGetDescriptor(&got, lv));
    cr_assert(got.Width == 8 && got.Height == 2 && got.Depth == 3, "%zu %zu %zu", got.Width,
              got.Height, got.Depth);
    /* A level holds bytes like any array. */
    struct image li = { .a = lv, .w = 8, .h = 2, .d = 3, .elem = 4, .row = 32 };
    li.bytes = malloc(li.row * li.h * li.d);
    image_fill(&li, 16);
    image_check(&li);
    free(li.bytes);
    CU_IS(cuArrayDestroy(lv), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMipmappedArrayGetLevel(&lv, m, 7), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMipmappedArrayCreate(&m, &d, 8), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMipmappedArrayDestroy(m));
    CU_IS(cuArray3DGetDescriptor(&got, lv), CUDA_ERROR_INVALID_HANDLE);
}

Test(array, bad_handles_shapes_and_boxes_are_refused)
{
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 8, .Height = 8, .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1 }, got;
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    unsigned char host[1024] = { 0 };
    CUarray a, made_up = (CUarray)(uintptr_t)0x5150, plane;
    CUmipmappedArray m;

    ds_test_ctx();
    CU_IS(cuArray3DGetDescriptor(&got, made_up), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuArrayDestroy(made_up), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuMemcpyHtoA(made_up, 0, host, 4), CUDA_ERROR_INVALID_HANDLE);

    d.NumChannels = 3;
    CU_IS(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
    d.NumChannels = 1;
    d.Format = CU_AD_FORMAT_UNORM_INT8X2;
    CU_IS(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
    d.Format = CU_AD_FORMAT_BC1_UNORM;
    d.NumChannels = 4;
    CU_IS(cuArray3DCreate(&a, &d), CUDA_ERROR_NOT_SUPPORTED);
    d.Format = CU_AD_FORMAT_NV12;
    CU_IS(cuArray3DCreate(&a, &d), CUDA_ERROR_NOT_SUPPORTED);
    d.Format = CU_AD_FORMAT_FLOAT;
    d.NumChannels = 1;
    d.Flags = CUDA_ARRAY3D_SPARSE;
    CU_IS(cuArray3DCreate(&a, &d), CUDA_ERROR_NOT_SUPPORTED);
    d.Flags = CUDA_ARRAY3D_CUBEMAP;
    d.Depth = 6;
    d.Height = 4;
    CU_IS(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
    d.Flags = 0;
    d.Width = 0;
    CU_IS(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
    d.Width = 1ull << 40;
    CU_IS(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMipmappedArrayCreate(&m, &d, 0), CUDA_ERROR_INVALID_VALUE);

    d = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = 8, .Height = 8, .Format = CU_AD_FORMAT_FLOAT,
                                   .NumChannels = 1 };
    CU_OK(cuArray3DCreate(&a, &d));
    /* Past the row, past the rows, a partial element. */
    CU_IS(cuMemcpyHtoA(a, 16, host, 20), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyHtoA(a, 2, host, 4), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyHtoA(a, 0, host, 6), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY2D c = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 32,
                        .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a, .dstY = 4,
                        .WidthInBytes = 32, .Height = 5 };
    CU_IS(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
    c.dstY = 3;
    CU_OK(cuMemcpy2D(&c));
    /* A device side outside the tenant's memory. */
    CUDA_MEMCPY2D dv = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = 0x10,
                         .srcPitch = 32, .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a,
                         .WidthInBytes = 32, .Height = 2 };
    CU_IS(cuMemcpy2D(&dv), CUDA_ERROR_INVALID_VALUE);

    /* No array here is deferred-mapping or multi-planar. */
    CU_IS(cuArrayGetMemoryRequirements(&req, a, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuArrayGetMemoryRequirements(&req, made_up, 0), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuArrayGetPlane(&plane, a, 0), CUDA_ERROR_INVALID_VALUE);

    CU_OK(cuArrayDestroy(a));
    CU_IS(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuMemcpyAtoH(host, a, 0, 4), CUDA_ERROR_INVALID_HANDLE);
}

Test(array, texture_and_surface_objects)
{
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 32, .Height = 16, .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1, .Flags = CUDA_ARRAY3D_SURFACE_LDST };
    CUDA_ARRAY3D_DESCRIPTOR plain = { .Width = 32, .Height = 16, .Format = CU_AD_FORMAT_FLOAT,
                                      .NumChannels = 1 };
    CUDA_TEXTURE_DESC td = { .addressMode = { CU_TR_ADDRESS_MODE_CLAMP,
                                              CU_TR_ADDRESS_MODE_BORDER },
                             .filterMode = CU_TR_FILTER_MODE_LINEAR,
                             .flags = CU_TRSF_NORMALIZED_COORDINATES,
                             .borderColor = { 0.5f, 0, 0, 1 } }, tgot;
    CUDA_RESOURCE_VIEW_DESC view = { .format = CU_RES_VIEW_FORMAT_FLOAT_1X32, .width = 32,
                                     .height = 16 }, vgot;
    CUDA_RESOURCE_DESC rd = { .resType = CU_RESOURCE_TYPE_ARRAY }, rgot;
    CUarray a, b;
    CUmipmappedArray m;
    CUdeviceptr lin;
    CUtexObject t1, t2, t3, t4;
    CUsurfObject s1;

    ds_test_ctx();
    CU_OK(cuArray3DCreate(&a, &d));
    CU_OK(cuArray3DCreate(&b, &plain));
    CU_OK(cuMipmappedArrayCreate(&m, &plain, 3));
    CU_OK(cuMemAlloc(&lin, 64 * 16 * 4));

    rd.res.array.hArray = a;
    CU_OK(cuTexObjectCreate(&t1, &rd, &td, &view));
    CU_OK(cuTexObjectGetResourceDesc(&rgot, t1));
    cr_assert(rgot.resType == CU_RESOURCE_TYPE_ARRAY && rgot.res.array.hArray == a);
    CU_OK(cuTexObjectGetTextureDesc(&tgot, t1));
    cr_assert_eq(memcmp(&tgot, &td, sizeof(td)), 0);
    CU_OK(cuTexObjectGetResourceViewDesc(&vgot, t1));
    cr_assert_eq(memcmp(&vgot, &view, sizeof(view)), 0);

    CUDA_RESOURCE_DESC mr = { .resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY };
    mr.res.mipmap.hMipmappedArray = m;
    CU_OK(cuTexObjectCreate(&t2, &mr, &td, NULL));
    CUDA_RESOURCE_DESC lr = { .resType = CU_RESOURCE_TYPE_LINEAR };
    lr.res.linear.devPtr = lin;
    lr.res.linear.format = CU_AD_FORMAT_FLOAT;
    lr.res.linear.numChannels = 1;
    lr.res.linear.sizeInBytes = 64 * 16 * 4;
    /* Memory resources take neither filtering nor normalised coordinates on a GPU. */
    CUDA_TEXTURE_DESC plain_td = { .filterMode = CU_TR_FILTER_MODE_POINT };
    CU_OK(cuTexObjectCreate(&t3, &lr, &plain_td, NULL));
    CUDA_RESOURCE_DESC pr = { .resType = CU_RESOURCE_TYPE_PITCH2D };
    pr.res.pitch2D.devPtr = lin;
    pr.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
    pr.res.pitch2D.numChannels = 1;
    pr.res.pitch2D.width = 60;
    pr.res.pitch2D.height = 16;
    pr.res.pitch2D.pitchInBytes = 256;
    CU_OK(cuTexObjectCreate(&t4, &pr, &plain_td, NULL));
    cr_assert(t1 != t2 && t1 != t3 && t1 != t4 && t2 != t3 && t2 != t4 && t3 != t4);

    /* Memory past the allocation, a made-up array, a bad address mode. */
    lr.res.linear.sizeInBytes = 64 * 16 * 4 + 4;
    CU_IS(cuTexObjectCreate(&t3, &lr, &plain_td, NULL), CUDA_ERROR_INVALID_VALUE);
    pr.res.pitch2D.height = 17;
    CU_IS(cuTexObjectCreate(&t3, &pr, &plain_td, NULL), CUDA_ERROR_INVALID_VALUE);
    rd.res.array.hArray = (CUarray)(uintptr_t)0x777;
    CU_IS(cuTexObjectCreate(&t3, &rd, &td, NULL), CUDA_ERROR_INVALID_HANDLE);
    rd.res.array.hArray = a;
    td.addressMode[2] = (CUaddress_mode)9;
    CU_IS(cuTexObjectCreate(&t3, &rd, &td, NULL), CUDA_ERROR_INVALID_VALUE);

    CU_OK(cuSurfObjectCreate(&s1, &rd));
    CU_OK(cuSurfObjectGetResourceDesc(&rgot, s1));
    cr_assert(rgot.res.array.hArray == a);
    rd.res.array.hArray = b;
    CU_IS(cuSurfObjectCreate(&s1, &rd), CUDA_ERROR_INVALID_VALUE); /* no SURFACE_LDST */

    CU_OK(cuTexObjectDestroy(t1));
    CU_IS(cuTexObjectDestroy(t1), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuTexObjectGetTextureDesc(&tgot, t1), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuSurfObjectDestroy(t2), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuTexObjectDestroy(12345), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuTexObjectDestroy(t2));
    CU_OK(cuTexObjectDestroy(t3));
    CU_OK(cuTexObjectDestroy(t4));
    CU_OK(cuSurfObjectDestroy(s1));
    CU_OK(cuMemFree(lin));
    CU_OK(cuMipmappedArrayDestroy(m));
    CU_OK(cuArrayDestroy(a));
    CU_OK(cuArrayDestroy(b));
}

/* The tenant's "memory" object in `status --json`, in obj. */
static void memory_of(const char *name, char *obj, size_t len)
{
    char out[16384];
    const char *at, *end;

    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, name, obj, len);
    at = strstr(strstr(out, obj), "\"memory\":{");
    cr_assert_not_null(at, "%s", out);
    end = strchr(at, '}');
    snprintf(obj, len, "%.*s", (int)(end - at + 1), at);
}

/* 1 MiB array, a 4-level mipmapped array of 1 MiB at level 0, and objects on them. */
static int hold_arrays(void *arg)
{
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 512, .Height = 512, .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1, .Flags = CUDA_ARRAY3D_SURFACE_LDST };
    CUDA_RESOURCE_DESC rd = { .resType = CU_RESOURCE_TYPE_ARRAY };
    CUDA_TEXTURE_DESC td = { .filterMode = CU_TR_FILTER_MODE_POINT };
    CUarray a;
    CUmipmappedArray m;
    CUtexObject t;
    CUsurfObject s;

    (void)arg;
    setenv("DETSHARE_TENANT", "holder", 1);
    if (ds_test_connect() != CUDA_SUCCESS)
        return 1;
    if (cuArray3DCreate(&a, &d) != CUDA_SUCCESS || cuMipmappedArrayCreate(&m, &d, 4) != CUDA_SUCCESS)
        return 2;
    rd.res.array.hArray = a;
    if (cuTexObjectCreate(&t, &rd, &td, NULL) != CUDA_SUCCESS ||
        cuSurfObjectCreate(&s, &rd) != CUDA_SUCCESS)
        return 3;
    return 0;
}

Test(array, counted_as_device_memory_and_freed_with_the_tenant)
{
    struct ds_test_peer peer;
    char obj[1024], out[16384];
    size_t free0, free1, total;
    /* Levels of 512, 256, 128 and 64 squared floats. */
    unsigned long long want = 4ull * (512 * 512 + 512 * 512 + 256 * 256 + 128 * 128 + 64 * 64);
    char needle[64];

    ds_test_peer_fork(&peer, hold_arrays, NULL);
    setenv("DETSHARE_TENANT", "self", 1);
    ds_test_ctx();
    CU_OK(cuMemGetInfo(&free0, &total));
    ds_test_peer_join(&peer);
    memory_of("holder", obj, sizeof(obj));
    snprintf(needle, sizeof(needle), "\"device\":%llu", want);
    cr_assert(strstr(obj, needle), "want %s in %s", needle, obj);
    if (ds_test_on_sim()) {
        CU_OK(cuMemGetInfo(&free1, &total));
        cr_assert_eq(free0 - free1, want, "the sim's device memory holds the arrays");
    }
    ds_test_peer_leave(&peer);
    for (int i = 0; i < 300; i++) {
        cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
        if (strstr(out, "\"name\":\"holder\"") == NULL)
            break;
        usleep(10000);
    }
    cr_assert_null(strstr(out, "\"name\":\"holder\""), "the tenant is gone: %s", out);
    if (ds_test_on_sim()) {
        CU_OK(cuMemGetInfo(&free1, &total));
        cr_assert_eq(free1, free0, "the sim's device memory is given back");
    }
}

Test(array, the_memory_quota_counts_them)
{
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 1024, .Height = 768, .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1 };
    char out[256];
    CUarray a, b;
    CUmipmappedArray m;

    cr_assert_eq(ds_test_ctl(&srv, "quota small memory=4MiB", out, sizeof(out)), 0, "%s", out);
    setenv("DETSHARE_TENANT", "small", 1);
    ds_test_ctx();
    CU_OK(cuArray3DCreate(&a, &d)); /* 3 MiB */
    CU_IS(cuArray3DCreate(&b, &d), CUDA_ERROR_OUT_OF_MEMORY);
    CU_IS(cuMipmappedArrayCreate(&m, &d, 2), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuArrayDestroy(a));
    CU_OK(cuArray3DCreate(&b, &d));
    CU_OK(cuArrayDestroy(b));
}
