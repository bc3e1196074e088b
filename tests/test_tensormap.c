/* Tensor maps (cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2colWide,
 * cuTensorMapReplaceAddress), as JAX/XLA's and Triton's TMA kernels make them: valid maps
 * come back the same for the same arguments, and what cuda.h says a map must not be is
 * refused with CUDA_ERROR_INVALID_VALUE on either device.  Only the sim's own bytes
 * (docs/sim-device.md) are asserted beyond that. */
#include "ds_test.h"
#include "detshare.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(tensormap, .init = start, .fini = stop, .timeout = 120);

/* A 2-D bf16 tensor of 512 rows of 1024, read in 64 x 64 boxes with the 128-byte swizzle,
 * as a Hopper GEMM reads its operands. */
struct tiled {
    CUtensorMapDataType dtype;
    cuuint32_t rank;
    CUdeviceptr addr;
    /* As long as CUDA's most dimensions even where stride needs one less: a rank of 6
     * reads five entries of each. */
    cuuint64_t dim[5], stride[5];
    cuuint32_t box[5], elem[5];
    CUtensorMapInterleave interleave;
    CUtensorMapSwizzle swizzle;
};

static struct tiled gemm_operand(CUdeviceptr addr)
{
    struct tiled t = {
        .dtype = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, .rank = 2, .addr = addr,
        .dim = { 1024, 512 }, .stride = { 1024 * 2 }, .box = { 64, 64 }, .elem = { 1, 1 },
        .interleave = CU_TENSOR_MAP_INTERLEAVE_NONE, .swizzle = CU_TENSOR_MAP_SWIZZLE_128B,
    };

    return t;
}

static CUresult encode(CUtensorMap *m, const struct tiled *t)
{
    return cuTensorMapEncodeTiled(m, t->dtype, t->rank, (void *)(uintptr_t)t->addr, t->dim,
                                  t->stride, t->box, t->elem, t->interleave, t->swizzle,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static CUdeviceptr tensor(size_t bytes)
{
    CUdeviceptr p;

    CU_OK(cuMemAlloc(&p, bytes));
    return p;
}

static int same(const CUtensorMap *a, const CUtensorMap *b)
{
    return memcmp(a->opaque, b->opaque, sizeof(a->opaque)) == 0;
}

Test(tensormap, a_tiled_map_is_the_same_128_bytes_each_time)
{
    CUtensorMap a, b;
    CUdeviceptr p;
    struct tiled t;

    ds_test_ctx();
    p = tensor(1024 * 512 * 2);
    t = gemm_operand(p);
    memset(&a, 0xa5, sizeof(a));
    memset(&b, 0x5a, sizeof(b));
    CU_OK(encode(&a, &t));
    CU_OK(encode(&b, &t));
    cr_assert(same(&a, &b), "one tiled map encoded twice differs");
    if (ds_test_on_sim()) {
        cr_assert_eq(a.opaque[0] & 0xffffffffffffull, 0x50414d545344ull, "\"DSTMAP\"");
        cr_assert_eq(a.opaque[1], p);
        cr_assert_eq(a.opaque[3], 1024);
        cr_assert_eq(a.opaque[4], 512);
        cr_assert_eq(a.opaque[8], 2048);
    }
    /* Without interleave the first element stride is ignored: the sim does not check it.
     * cuda.h also says it must be 1 to 8, so on a GPU it is left to the driver. */
    if (ds_test_on_sim()) {
        t.elem[0] = 0;
        CU_OK(encode(&b, &t));
        cr_assert(same(&a, &b), "an ignored element stride changed the map");
    }
    CU_OK(cuMemFree(p));
}

/* The driver does not ask whose memory a map describes, and neither do we. */
Test(tensormap, any_aligned_address_and_rank_one_are_served)
{
    CUtensorMap a, b;
    struct tiled t = gemm_operand(0x7f0000000000ull);

    ds_test_ctx();
    CU_OK(encode(&a, &t));
    t.rank = 1;
    CU_OK(cuTensorMapEncodeTiled(&b, t.dtype, 1, (void *)(uintptr_t)t.addr, t.dim, NULL, t.box,
                                 t.elem, t.interleave, t.swizzle,
                                 CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

/* Each is something cuda.h says a tiled map must not be. */
Test(tensormap, what_cuda_h_forbids_is_refused)
{
    CUdeviceptr p;
    CUtensorMap m;
    struct tiled t;

    ds_test_ctx();
    p = tensor(1024 * 512 * 2);
#define REFUSED(change)                                                         \
    do {                                                                        \
        t = gemm_operand(p);                                                    \
        change;                                                                 \
        CU_IS(encode(&m, &t), CUDA_ERROR_INVALID_VALUE);                        \
    } while (0)
    REFUSED(t.rank = 0);
    REFUSED(t.rank = 6);
    REFUSED(t.dtype = (CUtensorMapDataType)99);
    REFUSED(t.swizzle = (CUtensorMapSwizzle)99);
    REFUSED(t.interleave = (CUtensorMapInterleave)9);
    REFUSED(t.addr = p + 8);                     /* 16-byte aligned */
    REFUSED(t.dim[1] = 0);                       /* nonzero */
    REFUSED(t.dim[0] = (1ull << 32) + 1);        /* at most 2^32 */
    REFUSED(t.stride[0] = 2056);                 /* a multiple of 16 */
    REFUSED(t.stride[0] = 1ull << 40);           /* below 2^40 */
    REFUSED(t.box[1] = 257);                     /* at most 256 */
    REFUSED(t.box[1] = 0);
    REFUSED(t.box[0] = 4);                       /* 8 bytes: not a multiple of 16 */
    REFUSED(t.elem[1] = 9);                      /* 1 to 8 */
    REFUSED(t.elem[1] = 0);
    REFUSED(t.swizzle = CU_TENSOR_MAP_SWIZZLE_64B); /* a 128-byte inner box */
    REFUSED(t.interleave = CU_TENSOR_MAP_INTERLEAVE_16B); /* interleave needs rank 3 */
#undef REFUSED
    t = gemm_operand(p);
    CU_IS(encode(NULL, &t), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuTensorMapEncodeTiled(&m, t.dtype, t.rank, (void *)(uintptr_t)p, NULL, t.stride,
                                 t.box, t.elem, t.interleave, t.swizzle,
                                 CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          CUDA_ERROR_INVALID_VALUE);
    t.stride[0] = 1024 * 4;
    CU_IS(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_INT32, t.rank,
                                 (void *)(uintptr_t)p, t.dim, t.stride, t.box, t.elem,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                 CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA),
          CUDA_ERROR_INVALID_VALUE); /* NaN fill of an integer type */
    CU_OK(cuMemFree(p));
}

Test(tensormap, replacing_the_address_changes_the_map)
{
    CUtensorMap a, b, c;
    CUdeviceptr p;
    struct tiled t;

    ds_test_ctx();
    p = tensor(2 * 1024 * 512 * 2);
    t = gemm_operand(p);
    CU_OK(encode(&a, &t));
    b = a;
    CU_OK(cuTensorMapReplaceAddress(&b, (void *)(uintptr_t)(p + 1024 * 512 * 2)));
    cr_assert(!same(&a, &b), "the map did not change");
    if (ds_test_on_sim()) {
        t.addr = p + 1024 * 512 * 2;
        CU_OK(encode(&c, &t));
        cr_assert(same(&b, &c), "a replaced address is not the map made with it");
    }
    CU_OK(cuTensorMapReplaceAddress(&b, (void *)(uintptr_t)p));
    cr_assert(same(&a, &b), "putting the address back did not give the map back");
    c = b;
    CU_IS(cuTensorMapReplaceAddress(&b, (void *)(uintptr_t)(p + 8)), CUDA_ERROR_INVALID_VALUE);
    cr_assert(same(&b, &c), "a refused replacement changed the map");
    CU_IS(cuTensorMapReplaceAddress(NULL, (void *)(uintptr_t)p), CUDA_ERROR_INVALID_VALUE);
    if (ds_test_on_sim()) { /* a map the sim did not make */
        memset(&c, 0x11, sizeof(c));
        CU_IS(cuTensorMapReplaceAddress(&c, (void *)(uintptr_t)p), CUDA_ERROR_INVALID_VALUE);
    }
    CU_OK(cuMemFree(p));
}

/* A 3x3 convolution's input with padding 1, NHWC bf16: 4 images of 32 x 32 pixels with
 * 64 channels.  The arrays run to CUDA's most dimensions, for the rank-6 refusal. */
static CUresult im2col(CUtensorMap *m, CUdeviceptr p, cuuint32_t rank, const int *lower,
                       cuuint32_t channels, cuuint32_t pixels)
{
    static const cuuint64_t dim[] = { 64, 32, 32, 4, 1 };
    static const cuuint64_t stride[] = { 64 * 2, 64 * 2 * 32, 64 * 2 * 32 * 32, 0, 0 };
    static const cuuint32_t elem[] = { 1, 1, 1, 1, 1 };
    static const int upper[] = { -1, -1, 0, 0, 0 };

    return cuTensorMapEncodeIm2col(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank,
                                   (void *)(uintptr_t)p, dim, stride, lower, upper, channels,
                                   pixels, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

Test(tensormap, an_im2col_map_is_the_same_each_time_and_checked)
{
    static const int lower[] = { -1, -1, 0, 0, 0 }, far[] = { -1, 200, 0, 0, 0 };
    CUtensorMap a, b;
    CUdeviceptr p;

    ds_test_ctx();
    p = tensor(64 * 2 * 32 * 32 * 4);
    CU_OK(im2col(&a, p, 4, lower, 64, 128));
    CU_OK(im2col(&b, p, 4, lower, 64, 128));
    cr_assert(same(&a, &b), "one im2col map encoded twice differs");
    CU_IS(im2col(&b, p, 2, lower, 64, 128), CUDA_ERROR_INVALID_VALUE);  /* rank 3 to 5 */
    CU_IS(im2col(&b, p, 6, lower, 64, 128), CUDA_ERROR_INVALID_VALUE);
    CU_IS(im2col(&b, p, 4, far, 64, 128), CUDA_ERROR_INVALID_VALUE);    /* [-128, 127] */
    CU_IS(im2col(&b, p, 4, lower, 257, 128), CUDA_ERROR_INVALID_VALUE); /* at most 256 */
    CU_IS(im2col(&b, p, 4, lower, 64, 1025), CUDA_ERROR_INVALID_VALUE); /* at most 1024 */
    CU_IS(im2col(&b, p, 4, NULL, 64, 128), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));
}

/* cuda.h names it for compute capability 10.0 and up; an H100's driver encodes one. */
Test(tensormap, im2col_wide_encodes_on_an_h100)
{
    static const cuuint64_t dim[] = { 64, 256, 2 }, stride[] = { 64 * 2, 64 * 2 * 256 };
    static const cuuint32_t elem[] = { 1, 1, 1 };
    CUtensorMap m;
    CUdeviceptr p;
    int major = 0;
    CUresult rc;

    ds_test_ctx();
    p = tensor(64 * 2 * 256 * 2);
    CU_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    rc = cuTensorMapEncodeIm2colWide(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3,
                                     (void *)(uintptr_t)p, dim, stride, -1, -1, 64, 128, elem,
                                     CU_TENSOR_MAP_INTERLEAVE_NONE,
                                     CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
                                     CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    cr_log_info("cuTensorMapEncodeIm2colWide on compute capability %d: %s", major,
                ds_test_cu_name(rc));
    /* cuda.h names compute capability 10.0, yet the H100's driver (580) encodes it. */
    CU_OK(rc);
    CU_IS(cuTensorMapEncodeIm2colWide(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3,
                                      (void *)(uintptr_t)p, dim, stride, -1, -1, 64, 128,
                                      elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      (CUtensorMapIm2ColWideMode)7, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));
}

/* Arrays whose lengths disagree with the rank, which our client never sends: the
 * executor checks them before the device sees them. */
Test(tensormap, arrays_not_matching_the_rank_are_refused_on_the_wire)
{
    struct timeval wait = { .tv_sec = 5 };
    u_quad_t dim[5] = { 1024, 512, 4 }, stride[5] = { 2048, 2048 * 512 };
    u_int box[5] = { 64, 64, 1 }, elem[5] = { 1, 1, 1 };
    ds_hello_args h = { .proto_version = DS_PROTO_VERSION, .tenant = "wire" };
    ds_tensormap_tiled_args a = {
        .c = { .dtype = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, .rank = 2, .addr = 0x10000,
               .dim = { 2, dim }, .stride = { 1, stride }, .elem_stride = { 2, elem } },
        .box = { 2, box },
    };
    ds_tensormap_res r;
    ds_hello_res hr;
    int fd = ds_test_raw_connect(&srv, "wire");
    CLIENT *c;

    c = clnt_vc_create(fd, &(struct netbuf){ 0 }, DS_PROG, DS_V1, 0, 0);
    cr_assert_not_null(c);
    memset(&hr, 0, sizeof(hr));
    cr_assert_eq(clnt_call(c, DS_HELLO, (xdrproc_t)xdr_ds_hello_args, (char *)&h,
                           (xdrproc_t)xdr_ds_hello_res, (char *)&hr, wait), RPC_SUCCESS);
    cr_assert_eq(hr.err, CUDA_SUCCESS);
    clnt_freeres(c, (xdrproc_t)xdr_ds_hello_res, (char *)&hr);
#define CALL(want)                                                                          \
    do {                                                                                    \
        memset(&r, 0, sizeof(r));                                                           \
        cr_assert_eq(clnt_call(c, DS_TENSORMAP_TILED, (xdrproc_t)xdr_ds_tensormap_tiled_args, \
                               (char *)&a, (xdrproc_t)xdr_ds_tensormap_res, (char *)&r, wait), \
                     RPC_SUCCESS);                                                          \
        cr_assert_eq(r.err, (want), "%s", ds_test_cu_name((CUresult)r.err));               \
    } while (0)
    CALL(CUDA_SUCCESS);
    a.c.rank = 3; /* the arrays still hold two dimensions */
    CALL(CUDA_ERROR_INVALID_VALUE);
    a.c.dim.dim_len = a.c.elem_stride.elem_stride_len = a.box.box_len = 3;
    a.c.stride.stride_len = 2;
    CALL(CUDA_SUCCESS);
    a.box.box_len = 2;
    CALL(CUDA_ERROR_INVALID_VALUE);
    a.box.box_len = 3;
    a.c.stride.stride_len = 3;
    CALL(CUDA_ERROR_INVALID_VALUE);
    a.c.stride.stride_len = 2;
    a.c.l2 = -1;
    CALL(CUDA_ERROR_INVALID_VALUE);
#undef CALL
    clnt_destroy(c);
    close(fd);
}

/* XLA finds the encoders through cuGetProcAddress at its CUDA version; the wide im2col
 * came with CUDA 12.8.  (test_device checks that every entry point resolves.) */
Test(tensormap, the_wide_encoder_is_not_offered_to_older_cuda)
{
    CUdriverProcAddressQueryResult st;
    void *fn = NULL;

    ds_test_ctx();
    CU_IS(cuGetProcAddress_v2("cuTensorMapEncodeIm2colWide", &fn, 12060, 0, &st),
          CUDA_ERROR_NOT_FOUND);
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CU_OK(cuGetProcAddress_v2("cuTensorMapEncodeIm2colWide", &fn, 12080, 0, &st));
    cr_assert_not_null(fn);
    CU_OK(cuGetProcAddress_v2("cuTensorMapEncodeTiled", &fn, 12000, 0, &st));
    cr_assert_not_null(fn);
}
