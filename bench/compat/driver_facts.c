/* Facts about the native driver that detshare's answers must match, printed as JSON
 * lines.  `driver_facts identity KIND`: what the CONTEXT_IDENTITY export table
 * (21318c60...) answers for that kind on a primary and on an ordinary context (some kinds
 * crash the caller, so the shell asks one kind per process).  `driver_facts pool`: how
 * much a memory pool reserves for an allocation of a given size.  Run natively on a GPU:
 * cc -o driver_facts driver_facts.c -I$CUDA/include -lcuda. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const CUuuid identity = { { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, (char)0x8c,
                                   (char)0xa6, 0x41, (char)0xff, 0x73, 0x24, (char)0xc8,
                                   (char)0xf2 } };

static void identity_kind(CUcontext ctx, const char *which, uintptr_t kind)
{
    CUresult (*get_obj)(CUcontext, uintptr_t, void **);
    CUresult (*ask)(CUcontext, void *, uint64_t *);
    CUresult r1, r2 = CUDA_ERROR_UNKNOWN, r3 = CUDA_ERROR_UNKNOWN;
    void *const *table;
    void *obj = NULL;
    uint64_t v = 0, v2 = 0;

    if (cuGetExportTable((const void **)&table, &identity) != CUDA_SUCCESS) {
        printf("{\"identity\":\"no table\"}\n");
        return;
    }
    *(void **)&get_obj = table[51];
    *(void **)&ask = table[39];
    r1 = get_obj(ctx, kind, &obj);
    if (r1 == CUDA_SUCCESS) {
        r2 = ask(ctx, obj, &v);
        r3 = ask(NULL, obj, &v2);
    }
    printf("{\"identity\":\"%s\",\"kind\":%u,\"obj_rc\":%d,\"ask_rc\":%d,\"value\":%llu,"
           "\"ask_null_rc\":%d,\"value_null\":%llu}\n",
           which, (unsigned)kind, r1, r2, (unsigned long long)v, r3, (unsigned long long)v2);
}

static void pool_reserve(CUstream s)
{
    static const size_t mib[] = { 1, 2, 3, 8, 20, 33, 40, 60, 100 };
    CUmemPoolProps props;
    CUmemoryPool pool;
    cuuint64_t keep = UINT64_MAX;

    for (unsigned i = 0; i < sizeof(mib) / sizeof(mib[0]); i++) {
        CUdeviceptr d, e;
        cuuint64_t r1 = 0, r2 = 0;

        memset(&props, 0, sizeof(props));
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        if (cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS)
            return;
        cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
        cuMemAllocFromPoolAsync(&d, mib[i] << 20, pool, s);
        cuStreamSynchronize(s);
        cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r1);
        cuMemAllocFromPoolAsync(&e, 8u << 20, pool, s);
        cuStreamSynchronize(s);
        cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r2);
        printf("{\"pool_alloc_mib\":%zu,\"reserved\":%llu,\"reserved_after_8mib_more\":%llu}\n",
               mib[i], (unsigned long long)r1, (unsigned long long)r2);
        cuMemFreeAsync(d, s);
        cuMemFreeAsync(e, s);
        cuStreamSynchronize(s);
        cuMemPoolDestroy(pool);
    }
}

int main(int argc, char **argv)
{
    CUcontext primary, ctx;
    CUdevice dev;
    CUstream s;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS)
        return 1;
    cuDevicePrimaryCtxRetain(&primary, dev);
    cuCtxSetCurrent(primary);
    if (strcmp(argv[1], "identity") == 0 && argc == 4) {
        uintptr_t kind = strtoul(argv[3], NULL, 0);

        if (strcmp(argv[2], "primary") == 0)
            identity_kind(primary, "primary", kind);
        else if (cuCtxCreate(&ctx, NULL, 0, dev) == CUDA_SUCCESS)
            identity_kind(ctx, "created", kind);
        return 0;
    }
    if (strcmp(argv[1], "pool") != 0 || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != 0)
        return 1;
    pool_reserve(s);
    return 0;
}
