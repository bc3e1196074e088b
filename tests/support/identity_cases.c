#include "identity_cases.h"

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const CUuuid identity_table = { { 0x21, 0x31, (char)0x8c, 0x60, (char)0x97, 0x14, 0x32,
                                         0x48, (char)0x8c, (char)0xa6, 0x41, (char)0xff, 0x73,
                                         0x24, (char)0xc8, (char)0xf2 } };

static CUresult (*object)(CUcontext, CUstream, void **);
static CUresult (*number)(CUcontext, void *, uint64_t *);

/* Slot 51 then slot 39 for stream s of ctx: the CUresult of the first that failed. */
static CUresult ask(CUcontext ctx, CUstream s, uint64_t *v)
{
    void *obj = NULL;
    CUresult rc = object(ctx, s, &obj);

    return rc != CUDA_SUCCESS ? rc : number(ctx, obj, v);
}

struct out {
    char *p;
    size_t left;
};

static void line(struct out *o, const char *name, long long answer)
{
    int n = snprintf(o->p, o->left, "%s %lld\n", name, answer);

    if (n > 0 && (size_t)n < o->left) {
        o->p += n;
        o->left -= (size_t)n;
    }
}

int ds_identity_cases(char *buf, size_t len)
{
    struct out o = { buf, len };
    uint64_t legacy = 0, legacy2 = 0, alias = 0, a = 0, a2 = 0, b = 0, pt = 0, other = 0;
    const void *const *t = NULL;
    CUstream sa, sb;
    CUcontext primary, second;
    CUdevice dev;
    int ok = 1;

    buf[0] = '\0';
    if (cuGetExportTable((const void **)&t, &identity_table) != CUDA_SUCCESS ||
        cuCtxGetCurrent(&primary) != CUDA_SUCCESS || cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
        cuStreamCreate(&sa, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        cuStreamCreate(&sb, CU_STREAM_DEFAULT) != CUDA_SUCCESS) {
        line(&o, "setup_failed", 1);
        return -1;
    }
    *(const void **)&object = t[51];
    *(const void **)&number = t[39];
    ok &= ask(primary, NULL, &legacy) == CUDA_SUCCESS;
    ok &= ask(primary, NULL, &legacy2) == CUDA_SUCCESS;
    ok &= ask(primary, CU_STREAM_LEGACY, &alias) == CUDA_SUCCESS;
    ok &= ask(primary, sa, &a) == CUDA_SUCCESS;
    ok &= ask(primary, sa, &a2) == CUDA_SUCCESS;
    ok &= ask(primary, sb, &b) == CUDA_SUCCESS;
    ok &= ask(primary, CU_STREAM_PER_THREAD, &pt) == CUDA_SUCCESS;
    ok &= ask(NULL, sa, &a2) == CUDA_SUCCESS && a2 == a;
    line(&o, "all_succeed", ok);
    line(&o, "legacy_same_twice", legacy == legacy2);
    line(&o, "legacy_as_cu_stream_legacy", legacy == alias);
    line(&o, "legacy_nonzero", legacy != 0);
    line(&o, "stream_same_twice", a == a2);
    line(&o, "streams_differ", a != b);
    line(&o, "stream_not_legacy", a != legacy && b != legacy);
    line(&o, "per_thread_not_legacy", pt != legacy);
    line(&o, "per_thread_not_stream", pt != a && pt != b);
    if (cuCtxCreate(&second, NULL, 0, dev) == CUDA_SUCCESS) {
        line(&o, "second_context", ask(second, NULL, &other));
        line(&o, "second_context_legacy_differs", other != legacy);
        cuCtxDestroy(second);
        cuCtxSetCurrent(primary);
    } else {
        line(&o, "second_context", -1);
    }
    /* A value that is no stream is refused (lupine answers 400 here). */
    line(&o, "not_a_stream", object(primary, (CUstream)(uintptr_t)UINTPTR_MAX, (void **)&t));
    cuStreamDestroy(sa);
    cuStreamDestroy(sb);
    return 0;
}
