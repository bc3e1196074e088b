/* Memory pools and the stream-ordered allocator (cuMemAllocAsync, cuMemFreeAsync,
 * cuMemPool*): bytes through pool allocations on streams, the default and created pools,
 * attributes, freed pointers and bad pools refused, and a tenant's pools freed at its
 * exit. */
#include "ds_test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(pool, .init = start, .fini = stop, .timeout = 120);

#define MIB (1u << 20)

static unsigned char *pattern(size_t n, unsigned seed)
{
    unsigned char *p = malloc(n);

    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 131u + seed) ^ (i >> 9));
    return p;
}

static CUmemPoolProps device_props(void)
{
    CUmemPoolProps p;

    memset(&p, 0, sizeof(p));
    p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
}

static CUmemoryPool create_pool(void)
{
    CUmemPoolProps props = device_props();
    CUmemoryPool pool;

    CU_OK(cuMemPoolCreate(&pool, &props));
    cr_assert_not_null(pool);
    return pool;
}

static cuuint64_t attr64(CUmemoryPool pool, CUmemPool_attribute attr)
{
    cuuint64_t v = 0xdeadbeefull;

    CU_OK(cuMemPoolGetAttribute(pool, attr, &v));
    return v;
}

static CUmemoryPool pool_of(CUdeviceptr p)
{
    CUmemoryPool pool = (CUmemoryPool)(uintptr_t)1;

    CU_OK(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    return pool;
}

Test(pool, the_device_supports_pools)
{
    int v = -1;

    ds_test_ctx();
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    cr_assert_eq(v, 1);
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0));
    cr_assert_eq(v, 0, "pools cannot be exported through detshare");
}

Test(pool, allocations_on_a_stream_carry_bytes_in_and_out)
{
    const size_t n = 3 * MIB + 123;
    unsigned char *in = pattern(n, 7), *out = malloc(n);
    CUdeviceptr a, b;
    CUstream s;

    cr_assert_not_null(out);
    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAllocAsync(&a, n, s));
    CU_OK(cuMemAllocAsync(&b, n, s));
    cr_assert_neq(a, 0);
    cr_assert(b >= a + n || a >= b + n, "live allocations overlap");
    CU_OK(cuMemcpyHtoDAsync(a, in, n, s));
    CU_OK(cuMemsetD8Async(b, 0x5a, n, s));
    CU_OK(cuMemcpyDtoDAsync(b + 1, a, n - 1, s));
    memset(out, 0, n);
    CU_OK(cuMemcpyDtoHAsync(out, b, n, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(out[0], 0x5a);
    cr_assert_eq(memcmp(out + 1, in, n - 1), 0, "bytes came back changed");
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuMemFreeAsync(b, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
    free(in);
    free(out);
}

Test(pool, the_default_stream_and_cuMemFree_serve_too)
{
    unsigned char *in = pattern(MIB, 3), *out = calloc(1, MIB);
    CUdeviceptr p;

    ds_test_ctx();
    CU_OK(cuMemAllocAsync(&p, MIB, NULL));
    CU_OK(cuMemcpyHtoD(p, in, MIB));
    CU_OK(cuMemcpyDtoH(out, p, MIB));
    cr_assert_eq(memcmp(in, out, MIB), 0);
    CU_OK(cuMemFree(p));
    CU_IS(cuMemcpyHtoD(p, in, 16), CUDA_ERROR_INVALID_VALUE);
    free(in);
    free(out);
}

Test(pool, the_default_pool_is_current_until_another_is_set)
{
    CUmemoryPool def, cur, mine;
    CUdeviceptr p, q;
    CUstream s;

    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    cr_assert_not_null(def);
    cr_assert_eq(cur, def);
    CU_OK(cuMemAllocAsync(&p, MIB, s));
    cr_assert_eq(pool_of(p), def);

    mine = create_pool();
    cr_assert_neq(mine, def);
    CU_OK(cuDeviceSetMemPool(0, mine));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    cr_assert_eq(cur, mine);
    CU_OK(cuMemAllocAsync(&q, MIB, s));
    cr_assert_eq(pool_of(q), mine);
    CU_OK(cuMemFreeAsync(q, s));
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));

    CU_OK(cuMemPoolDestroy(mine));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    cr_assert_eq(cur, def, "destroying the current pool makes the default current");
    CU_OK(cuStreamDestroy(s));
}

Test(pool, a_created_pool_serves_cuMemAllocFromPoolAsync)
{
    const size_t n = 2 * MIB;
    unsigned char *in = pattern(n, 11), *out = calloc(1, n);
    CUmemoryPool pool;
    CUdeviceptr p;
    CUstream s;

    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    pool = create_pool();
    CU_OK(cuMemAllocFromPoolAsync(&p, n, pool, s));
    cr_assert_eq(pool_of(p), pool);
    CU_OK(cuMemcpyHtoDAsync(p, in, n, s));
    CU_OK(cuMemcpyDtoHAsync(out, p, n, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(memcmp(in, out, n), 0);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
    free(in);
    free(out);
}

Test(pool, memory_freed_on_a_stream_is_reused_by_the_next_allocation_there)
{
    CUdeviceptr p, q;
    CUmemoryPool pool;
    CUstream s;

    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    pool = create_pool();
    CU_OK(cuMemAllocFromPoolAsync(&p, MIB, pool, s));
    CU_OK(cuMemsetD8Async(p, 1, MIB, s));
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuMemAllocFromPoolAsync(&q, MIB, pool, s));
    cr_assert_eq(q, p, "stream order lets the pool hand the same memory out again");
    CU_OK(cuMemFreeAsync(q, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
}

/* A kernel over a grid wide enough to keep the sim busy for milliseconds, touching
 * nothing (n = 0) of p. */
static void busy(CUdeviceptr p, CUstream s)
{
    static CUfunction f;
    int v = 0, n = 0;
    void *params[] = { &p, &v, &n };

    if (f == NULL)
        CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuLaunchKernel(f, 2640000, 1, 1, 256, 1, 1, 0, s, params, NULL));
}

/* Memory freed on busy stream a, asked for on stream b before a gets there: with
 * internal dependencies allowed, b gets it and waits for a's work; without, b gets other
 * memory and does not wait. */
static void reuse_across_streams(int internal)
{
    CUdeviceptr p, q;
    CUmemoryPool pool;
    CUstream a, b;

    DS_SIM_ONLY(); /* modelled time */
    ds_test_ctx();
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    pool = create_pool();
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
                                &internal));
    CU_OK(cuMemAllocFromPoolAsync(&p, MIB, pool, a));
    busy(p, a);
    CU_OK(cuMemFreeAsync(p, a));
    CU_OK(cuMemAllocFromPoolAsync(&q, MIB, pool, b));
    if (internal) {
        cr_assert_eq(q, p);
        CU_IS(cuStreamQuery(b), CUDA_ERROR_NOT_READY);
    } else {
        cr_assert_neq(q, p);
        CU_OK(cuStreamQuery(b));
    }
    CU_IS(cuStreamQuery(a), CUDA_ERROR_NOT_READY);
    CU_OK(cuMemFreeAsync(q, b));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(a));
    CU_OK(cuStreamDestroy(b));
}

Test(pool, another_stream_reuses_freed_memory_by_waiting_for_the_free)
{
    reuse_across_streams(1);
}

Test(pool, without_internal_dependencies_another_stream_gets_other_memory)
{
    reuse_across_streams(0);
}

Test(pool, attributes_round_trip_and_the_amounts_follow_allocations)
{
    cuuint64_t threshold = 64ull * MIB, zero = 0, one = 1;
    CUmemoryPool pool;
    CUdeviceptr p;
    CUstream s;
    int flag = -1, off = 0;
    uint64_t before;

    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    pool = create_pool();
    cr_assert_eq(attr64(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0);
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    cr_assert_eq(attr64(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), threshold);
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &flag));
    cr_assert_eq(flag, 1);
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &off));
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &flag));
    cr_assert_eq(flag, 0);
    cr_assert_eq(attr64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);

    CU_OK(cuMemAllocFromPoolAsync(&p, 4 * MIB, pool, s));
    cr_assert_geq(attr64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4 * MIB);
    cr_assert_geq(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MIB);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(attr64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
    cr_assert_geq(attr64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 4 * MIB);
    cr_assert_geq(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MIB,
                  "below the release threshold, the pool keeps what was freed");
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
    cr_assert_eq(attr64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 0);
    before = attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    CU_OK(cuMemPoolTrimTo(pool, 0));
    /* On the H100 the 4 MiB stayed reserved after this, through detshare (2026-11-23;
     * not compared with a native run): the driver may keep what it cannot yet see as
     * unused.  The sim releases it all. */
    if (ds_test_on_sim())
        cr_assert_eq(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    else
        cr_assert_leq(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), before);
    /* A high mark reset to 0 starts again from what is reserved now. */
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero));
    cr_assert_eq(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH),
                 attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT));

    CU_IS(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero),
          CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one),
          CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemPoolGetAttribute(pool, (CUmemPool_attribute)99, &threshold),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
}

Test(pool, memory_comes_back_to_the_device)
{
    size_t free0, now, total;
    CUmemoryPool pool;
    CUdeviceptr p;
    CUstream s;

    DS_SIM_ONLY(); /* exact device memory accounting */
    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    pool = create_pool();
    CU_OK(cuMemGetInfo(&free0, &total));
    CU_OK(cuMemAllocFromPoolAsync(&p, 8 * MIB, pool, s));
    CU_OK(cuMemGetInfo(&now, &total));
    cr_assert_eq(free0 - now, 8 * MIB);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolTrimTo(pool, 0));
    CU_OK(cuMemGetInfo(&now, &total));
    cr_assert_eq(now, free0);
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
}

Test(pool, a_freed_pointer_is_refused_afterwards)
{
    unsigned char buf[64] = { 0 };
    CUdeviceptr p;
    CUstream s;
    unsigned type;

    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAllocAsync(&p, MIB, s));
    CU_OK(cuMemFreeAsync(p, s));
    CU_IS(cuMemcpyHtoD(p, buf, sizeof(buf)), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyDtoH(buf, p + 64, sizeof(buf)), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemsetD8(p, 0, 16), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
          CUDA_ERROR_INVALID_VALUE);
    /* A second free is a batched call's error: the next synchronous call reports it. */
    CU_OK(cuMemFreeAsync(p, s));
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamSynchronize(s));
    CU_IS(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
}

Test(pool, bad_pools_devices_and_locations_are_refused)
{
    CUmemoryPool def, pool, bogus = (CUmemoryPool)(uintptr_t)0x123456789ull, got;
    CUmemAccessDesc d = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
    CUmemPoolProps props = device_props();
    CUmemAccess_flags flags;
    cuuint64_t v;
    CUdeviceptr p;

    ds_test_ctx();
    CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
    CU_IS(cuMemAllocFromPoolAsync(&p, MIB, bogus, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemPoolGetAttribute(bogus, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v),
          CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemPoolTrimTo(bogus, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuDeviceSetMemPool(0, bogus), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuDeviceGetDefaultMemPool(&got, 1), CUDA_ERROR_INVALID_DEVICE);
    CU_IS(cuMemAllocAsync(&p, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAllocAsync(&p, MIB, (CUstream)(uintptr_t)0xdead0000ull),
          CUDA_ERROR_INVALID_HANDLE);

    props.location.id = 3;
    CU_IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_DEVICE);
    props = device_props();
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CU_IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_NOT_SUPPORTED);
    props = device_props();
    props.allocType = (CUmemAllocationType)7;
    CU_IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);

    pool = create_pool();
    CU_OK(cuMemPoolSetAccess(pool, &d, 1));
    CU_OK(cuMemPoolGetAccess(&flags, pool, &loc));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    d.location.id = 1;
    CU_IS(cuMemPoolSetAccess(pool, &d, 1), CUDA_ERROR_INVALID_DEVICE);
    loc.type = CU_MEM_LOCATION_TYPE_HOST;
    CU_IS(cuMemPoolGetAccess(&flags, pool, &loc), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemPoolExportToShareableHandle(&v, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
          CUDA_ERROR_NOT_SUPPORTED);

    /* Destroyed with an allocation live: the pool is gone for the tenant, the allocation
     * stays usable until it is freed. */
    CU_OK(cuMemAllocFromPoolAsync(&p, MIB, pool, NULL));
    CU_OK(cuMemPoolDestroy(pool));
    CU_IS(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAllocFromPoolAsync(&p, MIB, pool, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemsetD8(p, 9, MIB));
    CU_OK(cuMemFreeAsync(p, NULL));
    CU_OK(cuCtxSynchronize());
}

/* Allocates from the default pool and from a pool of its own, then leaves without
 * freeing anything. */
static int careless(void *arg)
{
    CUmemPoolProps props = device_props();
    CUmemoryPool pool;
    CUdeviceptr p, q;

    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAllocAsync(&p, 4 * MIB, NULL) ||
        cuMemPoolCreate(&pool, &props) || cuMemAllocFromPoolAsync(&q, 4 * MIB, pool, NULL) ||
        cuMemsetD8(q, 1, 4 * MIB) || cuCtxSynchronize())
        return 1;
    return 0;
}

Test(pool, a_tenant_that_exits_leaves_nothing_behind)
{
    struct ds_test_peer peer;
    size_t free0, now, total;
    struct timespec nap = { 0, 10 * 1000 * 1000 };

    DS_SIM_ONLY(); /* exact device memory accounting */
    ds_test_peer_fork(&peer, careless, NULL);
    ds_test_ctx();
    CU_OK(cuMemGetInfo(&free0, &total));
    ds_test_peer_join(&peer);
    CU_OK(cuMemGetInfo(&now, &total));
    cr_assert_eq(free0 - now, 8 * MIB);
    ds_test_peer_leave(&peer);
    for (int i = 0; i < 500 && now != free0; i++) {
        nanosleep(&nap, NULL);
        CU_OK(cuMemGetInfo(&now, &total));
    }
    cr_assert_eq(now, free0, "the executor freed the tenant's pool memory at its exit");
}
