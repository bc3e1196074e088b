/* Pitched allocations and 2-D/3-D copies: every copy is also applied to host images of
 * both sides, and the device memory read back whole must match the images byte for
 * byte, gaps between rows included.  Also the peer forms, refusals, and
 * cuOccupancyMaxPotentialBlockSize. */
#include "ds_test.h"

#include <stdlib.h>
#include <string.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 1, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(copy2d, .init = start, .fini = stop, .timeout = 300);

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

/* What c does, applied to host images of its destination and source. */
static void model(const CUDA_MEMCPY3D *c, unsigned char *dst, const unsigned char *src)
{
    for (size_t z = 0; z < c->Depth; z++)
        for (size_t y = 0; y < c->Height; y++)
            memmove(dst + ((c->dstZ + z) * c->dstHeight + c->dstY + y) * c->dstPitch +
                        c->dstXInBytes,
                    src + ((c->srcZ + z) * c->srcHeight + c->srcY + y) * c->srcPitch +
                        c->srcXInBytes,
                    c->WidthInBytes);
}

/* One side of a copy: memory, its pitch and rows per slice, and where the box starts. */
struct side {
    CUmemorytype type;
    void *host;
    CUdeviceptr dev;
    size_t pitch, rows, x, y, z;
};

static CUDA_MEMCPY3D box(const struct side *d, const struct side *s, size_t w, size_t h,
                         size_t depth)
{
    CUDA_MEMCPY3D c = {
        .srcXInBytes = s->x, .srcY = s->y, .srcZ = s->z, .srcMemoryType = s->type,
        .srcHost = s->host, .srcDevice = s->dev, .srcPitch = s->pitch, .srcHeight = s->rows,
        .dstXInBytes = d->x, .dstY = d->y, .dstZ = d->z, .dstMemoryType = d->type,
        .dstHost = d->host, .dstDevice = d->dev, .dstPitch = d->pitch, .dstHeight = d->rows,
        .WidthInBytes = w, .Height = h, .Depth = depth,
    };

    return c;
}

static CUDA_MEMCPY2D flat(const CUDA_MEMCPY3D *c)
{
    CUDA_MEMCPY2D m = {
        .srcXInBytes = c->srcXInBytes, .srcY = c->srcY, .srcMemoryType = c->srcMemoryType,
        .srcHost = c->srcHost, .srcDevice = c->srcDevice, .srcPitch = c->srcPitch,
        .dstXInBytes = c->dstXInBytes, .dstY = c->dstY, .dstMemoryType = c->dstMemoryType,
        .dstHost = c->dstHost, .dstDevice = c->dstDevice, .dstPitch = c->dstPitch,
        .WidthInBytes = c->WidthInBytes, .Height = c->Height,
    };

    return m;
}

enum mode { SYNC, ASYNC };

/* Copy c, as 2-D when its depth is 1 (alternating the plain and unaligned forms). */
static void copy(const CUDA_MEMCPY3D *c, enum mode m, CUstream s)
{
    static int unaligned;
    CUDA_MEMCPY2D f = flat(c);

    if (c->Depth > 1 && m == SYNC)
        CU_OK(cuMemcpy3D(c));
    else if (c->Depth > 1)
        CU_OK(cuMemcpy3DAsync(c, s));
    else if (m == SYNC && (unaligned ^= 1))
        CU_OK(cuMemcpy2DUnaligned(&f));
    else if (m == SYNC)
        CU_OK(cuMemcpy2D(&f));
    else
        CU_OK(cuMemcpy2DAsync(&f, s));
}

static void expect_device(CUdeviceptr d, const unsigned char *image, size_t n)
{
    unsigned char *got = malloc(n);

    cr_assert_not_null(got);
    CU_OK(cuMemcpyDtoH(got, d, n));
    cr_assert_eq(memcmp(got, image, n), 0, "device memory differs from the model");
    free(got);
}

static void *host_alloc(size_t n, int pinned)
{
    void *p = NULL;

    if (pinned)
        CU_OK(cuMemAllocHost(&p, n));
    else
        p = malloc(n);
    cr_assert_not_null(p);
    return p;
}

static void host_free(void *p, int pinned)
{
    if (pinned)
        CU_OK(cuMemFreeHost(p));
    else
        free(p);
}

/* host -> pitched a -> b -> host, each box at offsets of its own, w x h x depth. */
static void round_trip(size_t w, size_t h, size_t depth, enum mode m, int pinned)
{
    size_t hp = w + 13, hrows = h + 2, hn = hp * hrows * depth;
    size_t ap, arows = h + 1, bp = w + 100, brows = h + 3;
    unsigned char *src = host_alloc(hn, pinned), *dst = host_alloc(hn, pinned);
    unsigned char *img_a, *img_b, *img_dst = malloc(hn);
    CUdeviceptr a, b;
    CUstream s = NULL;

    CU_OK(cuMemAllocPitch(&a, &ap, w + 5, arows * depth, 4));
    cr_assert_geq(ap, w + 5);
    CU_OK(cuMemAlloc(&b, bp * brows * depth));
    img_a = malloc(ap * arows * depth);
    img_b = malloc(bp * brows * depth);
    cr_assert(img_a && img_b && img_dst);
    fill_pattern(src, hn, (unsigned)(w * h * depth));
    memset(dst, 0xee, hn);
    memset(img_dst, 0xee, hn);
    memset(img_a, 0x5a, ap * arows * depth);
    memset(img_b, 0xa5, bp * brows * depth);
    CU_OK(cuMemsetD8(a, 0x5a, ap * arows * depth));
    CU_OK(cuMemsetD8(b, 0xa5, bp * brows * depth));
    if (m == ASYNC)
        CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    struct side hs = { CU_MEMORYTYPE_HOST, src, 0, hp, hrows, 7, 2, 0 };
    struct side as = { CU_MEMORYTYPE_DEVICE, NULL, a, ap, arows, 3, 1, 0 };
    struct side bs = { CU_MEMORYTYPE_DEVICE, NULL, b, bp, brows, 90, 3, 0 };
    struct side hd = { CU_MEMORYTYPE_HOST, dst, 0, hp, hrows, 11, 1, 0 };
    CUDA_MEMCPY3D in = box(&as, &hs, w, h, depth), across = box(&bs, &as, w, h, depth),
                  out = box(&hd, &bs, w, h, depth);

    copy(&in, m, s);
    model(&in, img_a, src);
    copy(&across, m, s);
    model(&across, img_b, img_a);
    copy(&out, m, s);
    model(&out, img_dst, img_b);
    if (m == ASYNC)
        CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(memcmp(dst, img_dst, hn), 0, "the host destination differs from the model");
    expect_device(a, img_a, ap * arows * depth);
    expect_device(b, img_b, bp * brows * depth);
    if (s != NULL)
        CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    host_free(src, pinned);
    host_free(dst, pinned);
    free(img_a);
    free(img_b);
    free(img_dst);
}

static void every_way(void)
{
    for (int pinned = 0; pinned < 2; pinned++) {
        round_trip(37, 5, 1, SYNC, pinned);
        round_trip(37, 5, 1, ASYNC, pinned);
        round_trip(37, 5, 3, SYNC, pinned);
        round_trip(37, 5, 3, ASYNC, pinned);
        /* Rows above the staging threshold. */
        round_trip(70000, 3, 2, SYNC, pinned);
    }
}

Test(copy2d, pitched_allocations_are_padded_rows)
{
    CUdeviceptr d, base;
    size_t pitch, size;

    ds_test_ctx();
    CU_OK(cuMemAllocPitch(&d, &pitch, 100, 7, 4));
    cr_assert_geq(pitch, 100);
    cr_assert_eq(pitch % 4, 0);
    if (ds_test_on_sim())
        cr_assert_eq(pitch, 512, "the sim pads rows to 512 bytes, got %zu", pitch);
    CU_OK(cuMemGetAddressRange(&base, &size, d + pitch * 6 + 99));
    cr_assert_eq(base, d);
    cr_assert_geq(size, pitch * 7);
    CU_OK(cuMemsetD2D8(d, pitch, 0x11, pitch, 7));
    CU_OK(cuMemFree(d));
    CU_IS(cuMemAllocPitch(&d, &pitch, 100, 7, 3), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAllocPitch(&d, &pitch, 0, 7, 4), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAllocPitch(&d, &pitch, 100, 0, 4), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAllocPitch(&d, &pitch, (size_t)1 << 40, 2, 4), CUDA_ERROR_INVALID_VALUE);
}

Test(copy2d, round_trips_of_a_local_tenant)
{
    ds_test_ctx();
    every_way();
}

Test(copy2d, round_trips_of_a_remote_tenant)
{
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    ds_test_ctx();
    every_way();
}

Test(copy2d, unified_sides_are_told_apart_by_pointer)
{
    unsigned char src[64 * 4], back[64 * 4];
    size_t pitch;
    CUdeviceptr d;

    ds_test_ctx();
    fill_pattern(src, sizeof(src), 3);
    memset(back, 0, sizeof(back));
    CU_OK(cuMemAllocPitch(&d, &pitch, 64, 4, 4));
    struct side h = { CU_MEMORYTYPE_UNIFIED, NULL, (CUdeviceptr)(uintptr_t)src, 64, 4, 0, 0, 0 };
    struct side dv = { CU_MEMORYTYPE_UNIFIED, NULL, d, pitch, 4, 0, 0, 0 };
    struct side hb = { CU_MEMORYTYPE_UNIFIED, NULL, (CUdeviceptr)(uintptr_t)back, 64, 4, 0, 0, 0 };
    CUDA_MEMCPY3D in = box(&dv, &h, 64, 4, 1), out = box(&hb, &dv, 64, 4, 1);
    CUDA_MEMCPY2D in2 = flat(&in), out2 = flat(&out);

    CU_OK(cuMemcpy2D(&in2));
    CU_OK(cuMemcpy2D(&out2));
    cr_assert_eq(memcmp(src, back, sizeof(src)), 0);
    CU_OK(cuMemFree(d));
}

Test(copy2d, peer_copies_within_the_tenant)
{
    unsigned char src[48 * 6], back[48 * 6];
    CUcontext ctx = ds_test_ctx();
    CUdeviceptr a, b;
    size_t ap, bp;

    fill_pattern(src, sizeof(src), 9);
    memset(back, 0, sizeof(back));
    CU_OK(cuMemAllocPitch(&a, &ap, 48, 6, 4));
    CU_OK(cuMemAllocPitch(&b, &bp, 48, 6, 4));
    CU_OK(cuMemcpyHtoD(a, src, 48));
    CU_OK(cuMemcpyPeer(b, ctx, a, ctx, 48));
    CU_IS(cuMemcpyPeer(b, NULL, a, ctx, 48), CUDA_ERROR_INVALID_CONTEXT);
    CUDA_MEMCPY3D_PEER p = {
        .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = 48,
        .srcContext = ctx, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = a,
        .dstPitch = ap, .dstContext = ctx, .WidthInBytes = 48, .Height = 6, .Depth = 1,
    };
    CU_OK(cuMemcpy3DPeer(&p));
    p = (CUDA_MEMCPY3D_PEER){
        .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = a, .srcPitch = ap,
        .srcContext = ctx, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = b,
        .dstPitch = bp, .dstContext = ctx, .WidthInBytes = 48, .Height = 6, .Depth = 1,
    };
    CU_OK(cuMemcpy3DPeerAsync(&p, NULL));
    CU_OK(cuMemcpyPeerAsync(a, ctx, b, ctx, ap * 6, NULL));
    p = (CUDA_MEMCPY3D_PEER){
        .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = a, .srcPitch = ap,
        .srcContext = ctx, .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = back,
        .dstPitch = 48, .dstContext = ctx, .WidthInBytes = 48, .Height = 6, .Depth = 1,
    };
    CU_OK(cuMemcpy3DPeer(&p));
    cr_assert_eq(memcmp(src, back, sizeof(src)), 0);
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
}

/* A 2-D copy of h rows of w bytes between device sides of the given pitches. */
static CUresult d2d(CUdeviceptr dst, size_t dp, CUdeviceptr src, size_t sp, size_t w, size_t h)
{
    CUDA_MEMCPY2D c = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
                        .srcPitch = sp, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = dst, .dstPitch = dp, .WidthInBytes = w, .Height = h };

    return cuMemcpy2D(&c);
}

Test(copy2d, a_box_past_its_allocation_is_refused)
{
    unsigned char host[512 * 9];
    CUdeviceptr a, b;
    size_t ap, bp;

    ds_test_ctx();
    memset(host, 1, sizeof(host));
    CU_OK(cuMemAllocPitch(&a, &ap, 64, 8, 4));
    CU_OK(cuMemAllocPitch(&b, &bp, 64, 8, 4));
    CU_OK(d2d(b, bp, a, ap, 64, 8));
    CU_IS(d2d(b, bp, a, ap, 64, 9), CUDA_ERROR_INVALID_VALUE);
    CU_IS(d2d(b + 1, bp, a, ap, bp, 8), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY2D in = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 512,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = a, .dstPitch = ap,
                         .dstY = 1, .WidthInBytes = 64, .Height = 8 };
    CU_IS(cuMemcpy2D(&in), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY2D out = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = a, .srcPitch = ap,
                          .srcY = 1, .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = host,
                          .dstPitch = 512, .WidthInBytes = 64, .Height = 8 };
    CU_IS(cuMemcpy2D(&out), CUDA_ERROR_INVALID_VALUE);
    /* The tenant goes on. */
    CU_OK(d2d(a, ap, b, bp, 64, 8));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
}

Test(copy2d, impossible_and_overflowing_shapes_are_refused)
{
    CUdeviceptr a;
    size_t ap;

    ds_test_ctx();
    CU_OK(cuMemAllocPitch(&a, &ap, 64, 8, 4));
    CU_IS(d2d(a, ap, a, 32, 64, 2), CUDA_ERROR_INVALID_VALUE); /* pitch below width */
    CU_IS(d2d(a, ap, a, SIZE_MAX / 2, 64, 3), CUDA_ERROR_INVALID_VALUE);
    CU_IS(d2d(a, SIZE_MAX, a, ap, 64, 2), CUDA_ERROR_INVALID_VALUE);
    CU_IS(d2d(a, ap, a, ap, SIZE_MAX, 1), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY3D c = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = a, .srcPitch = ap,
                        .srcHeight = 2, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = a,
                        .dstPitch = ap, .dstHeight = SIZE_MAX / 4, .WidthInBytes = 8,
                        .Height = 2, .Depth = 2 };
    CU_IS(cuMemcpy3D(&c), CUDA_ERROR_INVALID_VALUE);
    c.dstHeight = 1; /* slices would overlap */
    CU_IS(cuMemcpy3D(&c), CUDA_ERROR_INVALID_VALUE);
    c.dstHeight = 2;
    c.srcZ = SIZE_MAX / 2;
    CU_IS(cuMemcpy3D(&c), CUDA_ERROR_INVALID_VALUE);
    c.srcZ = 0;
    CU_OK(cuMemcpy3D(&c));
    CU_OK(cuMemFree(a));
}

/* Arrays are test_array.c's; a made-up one is refused here as anywhere. */
Test(copy2d, made_up_arrays_are_refused)
{
    unsigned char host[64];
    CUdeviceptr a;
    size_t ap;

    ds_test_ctx();
    CU_OK(cuMemAllocPitch(&a, &ap, 64, 1, 4));
    CUDA_MEMCPY2D c = { .srcMemoryType = CU_MEMORYTYPE_ARRAY,
                        .srcArray = (CUarray)(uintptr_t)0x1234,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = a, .dstPitch = ap,
                        .WidthInBytes = 64, .Height = 1 };
    CU_IS(cuMemcpy2D(&c), CUDA_ERROR_INVALID_HANDLE);
    CUDA_MEMCPY3D d = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 64,
                        .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                        .dstArray = (CUarray)(uintptr_t)0x1234, .WidthInBytes = 64,
                        .Height = 1, .Depth = 1 };
    CU_IS(cuMemcpy3D(&d), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuMemFree(a));
}

static size_t smem_of(int block)
{
    return (size_t)block * 200;
}

/* The block size with the most resident threads by exhaustive search (the larger on a
 * tie), and its blocks per SM. */
static int best_block(CUfunction f, int limit, size_t (*smem)(int), int *blocks)
{
    int best = 0, best_threads = 0;

    for (int b = 32; b <= limit; b += 32) {
        int n;

        CU_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, b, smem ? smem(b) : 0));
        if (n * b >= best_threads) {
            best_threads = n * b;
            best = b;
            *blocks = n;
        }
    }
    return best;
}

Test(copy2d, potential_block_size_has_the_best_occupancy)
{
    int grid, block, blocks, sms, limit;
    CUfunction f;

    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CU_OK(cuFuncGetAttribute(&limit, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    CU_OK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 0));
    cr_assert_gt(block, 0);
    CU_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, block, 0));
    {
        int want_blocks = 0, want = best_block(f, limit, NULL, &want_blocks);

        cr_assert_eq(blocks * block, want * want_blocks);
    }
    cr_assert_eq(grid, blocks * sms);
    CU_OK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid, &block, f, smem_of, 0, 0,
                                                    CU_OCCUPANCY_DEFAULT));
    {
        int want_blocks = 0, want = best_block(f, limit, smem_of, &want_blocks);

        cr_assert_eq(block, want, "block %d, exhaustive search %d", block, want);
        cr_assert_eq(grid, want_blocks * sms);
    }
    CU_OK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 64));
    cr_assert_leq(block, 64);
    cr_assert_gt(block, 0);
    CU_IS(cuOccupancyMaxPotentialBlockSize(NULL, &block, f, NULL, 0, 0),
          CUDA_ERROR_INVALID_VALUE);
}
