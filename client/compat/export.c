/*
 * The CUDA runtime's hidden export tables, as documented in docs/export-tables.md
 * (sources, measurements and guesses are marked there).  Everything here is process-local
 * except module loading; none of it depends on the server connection, since cudart asks
 * for some tables before cuInit.
 *
 * Each table is a static array of pointer-sized words at a fixed address: slot 0 is the
 * table's size in bytes (context-local storage has no size word), then function pointers.
 * Slots whose meaning is unknown but which the real driver fills get a stub that logs
 * (table, slot) once and returns CUDA_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE /* program_invocation_short_name: the tenant's default name */
#include "cuda_api.h"

#include "ctx.h"
#include "ctxlocal.h"
#include "ds_log.h"
#include "hmac_md2.h"
#include "module.h"
#include "nvrtc_cache.h"
#include "route.h"
#include "rpc.h"
#include "share.h"
#include "stream.h"
#include "unsupported.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *slot_t;

#define SLOT_STUB(table, n)                                  \
    static CUresult table##_stub_##n(void)                   \
    {                                                        \
        static atomic_int once;                              \
        return ds__unsupported(#table " slot " #n, &once);   \
    }

static CUresult unused_args_success(void)
{
    return CUDA_SUCCESS;
}

/* ---- CUDART_INTERFACE (6bd5fb6c...) ---- */

/* __cudaRegisterFatBinary's wrapper: magic, version, the fatbin container. */
struct fatbin_wrapper {
    uint32_t magic;
    uint32_t version;
    const void *data;
    const void *filename_or_fatbins;
};

static CUresult cudart_load_wrapper(CUmodule *out, const struct fatbin_wrapper *w)
{
    if (out == NULL || w == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return cuModuleLoadData(out, w->data);
}

static CUresult cudart_primary(CUcontext *out, CUdevice dev)
{
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ds__rpc_ready())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ds__rpc_primary(dev) == 0)
        return CUDA_ERROR_INVALID_DEVICE;
    /* The handle cuDevicePrimaryCtxRetain will return, without retaining it. */
    *out = (CUcontext)(uintptr_t)ds__rpc_primary(dev);
    return CUDA_SUCCESS;
}

static CUresult cudart_load_wrapper_ex(CUmodule *out, const struct fatbin_wrapper *w, void *a3,
                                       void *a4, unsigned a5)
{
    static atomic_int once;

    if (a3 != NULL || a4 != NULL || a5 != 0)
        return ds__unsupported("CUDART_INTERFACE slot 6 with extra arguments", &once);
    return cudart_load_wrapper(out, w);
}

static void cudart_ignore(size_t n)
{
    (void)n;
}

static CUresult cudart_load_header(const void *fatbin, CUmodule *out, void *a3, void *a4,
                                   unsigned a5)
{
    static atomic_int once;

    if (a3 != NULL || a4 != NULL || a5 != 0)
        return ds__unsupported("CUDART_INTERFACE slot 8 with extra arguments", &once);
    return cuModuleLoadData(out, fatbin);
}

SLOT_STUB(CUDART_INTERFACE, 3)
SLOT_STUB(CUDART_INTERFACE, 4)
SLOT_STUB(CUDART_INTERFACE, 5)
SLOT_STUB(CUDART_INTERFACE, 9)
SLOT_STUB(CUDART_INTERFACE, 11)

static const slot_t cudart_interface[13] = {
    (slot_t)(uintptr_t)(13 * sizeof(slot_t)),
    (slot_t)cudart_load_wrapper,
    (slot_t)cudart_primary,
    (slot_t)CUDART_INTERFACE_stub_3,
    (slot_t)CUDART_INTERFACE_stub_4,
    (slot_t)CUDART_INTERFACE_stub_5,
    (slot_t)cudart_load_wrapper_ex,
    (slot_t)cudart_ignore,
    (slot_t)cudart_load_header,
    (slot_t)CUDART_INTERFACE_stub_9,
    NULL, /* NULL in the real driver too */
    (slot_t)CUDART_INTERFACE_stub_11,
    (slot_t)unused_args_success, /* loads the JIT in the real driver */
};

/* ---- TOOLS_RUNTIME_CALLBACK_HOOKS (a094798c...) ---- */

/* Zero-filled areas the runtime reads tool callback switches from; zero means none. */
static uint32_t hooks_area[1024];
static unsigned char hooks_area2[16];

static void hooks_area_get(void **buf, size_t *size)
{
    *buf = hooks_area;
    *size = 1024;
}

static void hooks_area2_get(void **buf, size_t *size)
{
    *buf = hooks_area2;
    *size = 14;
}

static CUresult hooks_query(const void *in, uint64_t *out)
{
    (void)in;
    if (out != NULL)
        *out = 0;
    return CUDA_SUCCESS;
}

static const slot_t tools_hooks[7] = {
    (slot_t)(uintptr_t)(7 * sizeof(slot_t)),
    (slot_t)unused_args_success,
    (slot_t)hooks_area_get,
    (slot_t)unused_args_success,
    (slot_t)hooks_query,
    (slot_t)unused_args_success,
    (slot_t)hooks_area2_get,
};

/* ---- TOOLS_TLS (42d85a81...) ---- */

/* NULL with success when the thread has no context, as the real driver answers. */
static CUresult tls_current(CUcontext *out)
{
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *out = NULL;
    if (ds__rpc_ready())
        cuCtxGetCurrent(out);
    return CUDA_SUCCESS;
}

SLOT_STUB(TOOLS_TLS, 1)

static const slot_t tools_tls[3] = {
    (slot_t)(uintptr_t)(3 * sizeof(slot_t)),
    (slot_t)TOOLS_TLS_stub_1,
    (slot_t)tls_current,
};

/* ---- CONTEXT_LOCAL_STORAGE_INTERFACE_V0301 (c693336e...) ---- */

/* No size word: three functions and a NULL. */
static const slot_t context_local_storage[4] = {
    (slot_t)ds__ctxlocal_put,
    (slot_t)ds__ctxlocal_del,
    (slot_t)ds__ctxlocal_get,
    NULL,
};

/* ---- CONTEXT_CHECKS (263e8860...) ---- */

/* Tenants see only ordinary contexts, whatever the server runs them on. */
static CUresult checks_wrapped(CUcontext ctx, unsigned *is_wrapped, CUcontext *inner)
{
    (void)ctx;
    (void)inner;
    if (is_wrapped != NULL)
        *is_wrapped = 0;
    return CUDA_SUCCESS;
}

static unsigned checks_zero(void)
{
    return 0;
}

SLOT_STUB(CONTEXT_CHECKS, 1)
SLOT_STUB(CONTEXT_CHECKS, 4)
SLOT_STUB(CONTEXT_CHECKS, 5)
SLOT_STUB(CONTEXT_CHECKS, 6)
SLOT_STUB(CONTEXT_CHECKS, 7)
SLOT_STUB(CONTEXT_CHECKS, 8)
SLOT_STUB(CONTEXT_CHECKS, 9)
SLOT_STUB(CONTEXT_CHECKS, 10)
SLOT_STUB(CONTEXT_CHECKS, 11)
SLOT_STUB(CONTEXT_CHECKS, 12)
SLOT_STUB(CONTEXT_CHECKS, 13)
SLOT_STUB(CONTEXT_CHECKS, 14)

static const slot_t context_checks[15] = {
    (slot_t)(uintptr_t)(15 * sizeof(slot_t)),
    (slot_t)CONTEXT_CHECKS_stub_1,
    (slot_t)checks_wrapped,
    (slot_t)checks_zero,
    (slot_t)CONTEXT_CHECKS_stub_4,
    (slot_t)CONTEXT_CHECKS_stub_5,
    (slot_t)CONTEXT_CHECKS_stub_6,
    (slot_t)CONTEXT_CHECKS_stub_7,
    (slot_t)CONTEXT_CHECKS_stub_8,
    (slot_t)CONTEXT_CHECKS_stub_9,
    (slot_t)CONTEXT_CHECKS_stub_10,
    (slot_t)CONTEXT_CHECKS_stub_11,
    (slot_t)CONTEXT_CHECKS_stub_12,
    (slot_t)CONTEXT_CHECKS_stub_13,
    (slot_t)CONTEXT_CHECKS_stub_14,
};

/* ---- INTEGRITY_CHECK (d4082055...) ---- */

static CUresult integrity_answer(unsigned version, uint64_t unix_seconds, uint64_t result[2]);

static CUresult integrity_probe(void)
{
    static atomic_int once;

    if (atomic_exchange(&once, 1) == 0)
        ds_debug("INTEGRITY_CHECK slot 2 called: answered success");
    return CUDA_SUCCESS;
}

static const slot_t integrity_check[3] = {
    (slot_t)(uintptr_t)(3 * sizeof(slot_t)),
    (slot_t)integrity_answer,
    (slot_t)integrity_probe,
};

/* The MAC cudart expects: HMAC-MD2 over who asks and what device it was told about,
 * under a fixed key.  Values are hashed as this library reports them to the tenant,
 * because cudart computes its side from those. */
static const unsigned char integrity_key[16] = {
    0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52, 0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f,
};

static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4); /* x86-64: little-endian, as the hash wants */
}

static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* The message: 48 bytes, then 28 for each device (as many as a tenant can have). */
#define INTEGRITY_HEAD 48
#define INTEGRITY_DEVICE 28
#define INTEGRITY_MAX (INTEGRITY_HEAD + INTEGRITY_DEVICE * DS_ROUTE_MAX)

static size_t integrity_message(unsigned char *m, unsigned version, uint64_t unix_seconds)
{
    int driver = 0, count = 0;
    size_t n = INTEGRITY_HEAD;

    cuDriverGetVersion(&driver);
    put32(m, (uint32_t)driver);
    put32(m + 4, version);
    put32(m + 8, (uint32_t)getpid());
    put32(m + 12, (uint32_t)(uintptr_t)pthread_self());
    put64(m + 16, (uint64_t)(uintptr_t)cudart_interface);
    put64(m + 24, (uint64_t)(uintptr_t)integrity_check);
    put64(m + 32, (uint64_t)(uintptr_t)integrity_check[1]);
    put64(m + 40, unix_seconds);
    /* A buffer of one device's room took a tenant of two servers' 28 more bytes over the
     * stack, and cudart crashed at its first call (run 136). */
    if (cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 0)
        count = 0;
    if (count > DS_ROUTE_MAX)
        count = DS_ROUTE_MAX;
    for (int d = 0; d < count; d++, n += INTEGRITY_DEVICE) {
        CUuuid u;
        int dom = 0, bus = 0, dev = 0;

        memset(&u, 0, sizeof(u));
        cuDeviceGetUuid(&u, d);
        cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
        cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
        cuDeviceGetAttribute(&dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
        memcpy(m + n, u.bytes, 16);
        put32(m + n + 16, (uint32_t)dom);
        put32(m + n + 20, (uint32_t)bus);
        put32(m + n + 24, (uint32_t)dev);
    }
    return n;
}

static CUresult integrity_answer(unsigned version, uint64_t unix_seconds, uint64_t result[2])
{
    unsigned char msg[INTEGRITY_MAX], mac[16];
    size_t n;

    if (result == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    /* Two fixed answers, measured on the real driver. */
    if (version % 10 == 0) {
        result[0] = 0x3341181c03cb675cull;
        result[1] = 0x8ed383aa1f4cd1e8ull;
        return CUDA_SUCCESS;
    }
    if (version % 10 == 1) {
        result[0] = 0x1841181c03cb675cull;
        result[1] = 0x8ed383aa1f4cd1e8ull;
        return CUDA_SUCCESS;
    }
    n = integrity_message(msg, version, unix_seconds);
    ds_hmac_md2(integrity_key, sizeof(integrity_key), msg, n, mac);
    memcpy(result, mac, 16);
    return CUDA_SUCCESS;
}

/* ---- CONTEXT_IDENTITY (21318c60...), asked for by cuBLAS ---- */

static CUresult identity_ctx_id(CUcontext ctx, unsigned long long *id)
{
    return cuCtxGetId(ctx, id);
}

/* Slot 51 (ctx, stream, void **obj, int per_thread) hands out the driver's object for a
 * stream, and slot 39 (ctx, obj, uint64_t *value) reads a number from it.  The second
 * argument is a CUstream, not a small kind: cuBLAS passes the stream it was given (0 for
 * the default stream, a stream of its own under XLA), a value that is no stream gets
 * CUDA_ERROR_INVALID_HANDLE, and other drivers' authors read it the same way
 * (docs/export-tables.md, 4.9).  Traced calls of slot 39 left the fourth and fifth
 * argument registers holding leftovers, so it reads three. */
struct identity_obj {
    uint64_t magic;
    uint64_t ctx;     /* the context whose legacy stream 0 means */
    ds_handle stream; /* 0: that legacy stream */
};

#define IDENTITY_MAGIC 0x6473696474626c33ull

/* The executor's handle of stream s, checked to be one of the tenant's streams; 0 for
 * the legacy default stream. */
static CUresult identity_stream(CUstream s, ds_handle *out)
{
    unsigned long long id;
    ds_handle h = ds__stream_of(s);
    CUresult rc;

    if (h == (ds_handle)(uintptr_t)CU_STREAM_LEGACY || h == (ds_handle)(uintptr_t)CU_STREAM_PER_THREAD)
        h = 0;
    if (h != 0 && (rc = cuStreamGetId((CUstream)(uintptr_t)h, &id)) != CUDA_SUCCESS)
        return rc;
    *out = h;
    return CUDA_SUCCESS;
}

/* per_thread: the fourth argument.  With it nonzero the H200 answered the NULL stream
 * as CU_STREAM_PER_THREAD, with it 0 as CU_STREAM_LEGACY, as cuBLAS calls it (runs 119b
 * and 120). */
static CUresult identity_object(CUcontext ctx, CUstream s, void **out, int per_thread)
{
    struct identity_obj *o;
    uint64_t c = (uint64_t)(uintptr_t)ctx;
    unsigned long long id;
    ds_handle h;
    CUresult rc;

    ds_debug("CONTEXT_IDENTITY slot 51: context %p, stream %p", (void *)ctx, (void *)s);
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = identity_stream(s == NULL && per_thread ? CU_STREAM_PER_THREAD : s, &h)) !=
        CUDA_SUCCESS)
        return rc;
    if (c == 0 && (rc = ds__ctx_current(&c)) != CUDA_SUCCESS)
        return rc;
    if (c != ds__rpc_primary(ds__route_dev_of(c)) &&
        (rc = cuCtxGetId((CUcontext)(uintptr_t)c, &id)) != CUDA_SUCCESS)
        return rc;
    /* The driver's object lives as long as its stream, and nothing says when the caller
     * is done with it: a few bytes per call are kept. */
    o = calloc(1, sizeof(*o));
    if (o == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    o->magic = IDENTITY_MAGIC;
    o->ctx = c;
    o->stream = h;
    *out = o;
    return CUDA_SUCCESS;
}

/* The primary context's legacy stream has the number the device gives (the executor
 * asks its driver); any other stream has its handle, and another context's legacy
 * stream that context's handle.  No two streams of the tenant share a number, and a
 * handle is never the device's small number: a caller that keys its state per stream by
 * these numbers keeps each stream's apart, as it does natively. */
static CUresult identity_value(CUcontext ctx, const struct identity_obj *o, uint64_t *out)
{
    ds_ctx_query_args a = { .query = 0 };
    ds_hyper_res r;
    CUresult rc;

    (void)ctx; /* the object's own context decides which legacy stream it is */
    if (o == NULL || o->magic != IDENTITY_MAGIC || out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ds__rpc_ready())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (o->stream != 0 || o->ctx != ds__rpc_primary(ds__route_dev_of(o->ctx))) {
        *out = o->stream != 0 ? o->stream : o->ctx;
        return CUDA_SUCCESS;
    }
    a.ctx = o->ctx;
    rc = ds_rpc_ctx_query(&a, &r);
    if (rc == CUDA_SUCCESS)
        *out = r.ds_hyper_res_u.value;
    return rc;
}

/* Ten stubs, slots d0 to d9, and the same ten as table entries. */
#define STUB_DECADE(t, d)                                                               \
    SLOT_STUB(t, d##0) SLOT_STUB(t, d##1) SLOT_STUB(t, d##2) SLOT_STUB(t, d##3)            \
    SLOT_STUB(t, d##4) SLOT_STUB(t, d##5) SLOT_STUB(t, d##6) SLOT_STUB(t, d##7)            \
    SLOT_STUB(t, d##8) SLOT_STUB(t, d##9)
#define SLOTS_DECADE(t, d)                                                              \
    (slot_t)t##_stub_##d##0, (slot_t)t##_stub_##d##1, (slot_t)t##_stub_##d##2,          \
    (slot_t)t##_stub_##d##3, (slot_t)t##_stub_##d##4, (slot_t)t##_stub_##d##5,          \
    (slot_t)t##_stub_##d##6, (slot_t)t##_stub_##d##7, (slot_t)t##_stub_##d##8,          \
    (slot_t)t##_stub_##d##9

SLOT_STUB(CONTEXT_IDENTITY, 1)
SLOT_STUB(CONTEXT_IDENTITY, 2)
SLOT_STUB(CONTEXT_IDENTITY, 3)
SLOT_STUB(CONTEXT_IDENTITY, 5)
SLOT_STUB(CONTEXT_IDENTITY, 6)
SLOT_STUB(CONTEXT_IDENTITY, 7)
SLOT_STUB(CONTEXT_IDENTITY, 8)
SLOT_STUB(CONTEXT_IDENTITY, 9)
STUB_DECADE(CONTEXT_IDENTITY, 1)
STUB_DECADE(CONTEXT_IDENTITY, 2)
SLOT_STUB(CONTEXT_IDENTITY, 30)
SLOT_STUB(CONTEXT_IDENTITY, 31)
SLOT_STUB(CONTEXT_IDENTITY, 32)
SLOT_STUB(CONTEXT_IDENTITY, 33)
SLOT_STUB(CONTEXT_IDENTITY, 34)
SLOT_STUB(CONTEXT_IDENTITY, 35)
SLOT_STUB(CONTEXT_IDENTITY, 36)
SLOT_STUB(CONTEXT_IDENTITY, 37)
SLOT_STUB(CONTEXT_IDENTITY, 38)
STUB_DECADE(CONTEXT_IDENTITY, 4)
SLOT_STUB(CONTEXT_IDENTITY, 50)
SLOT_STUB(CONTEXT_IDENTITY, 52)
SLOT_STUB(CONTEXT_IDENTITY, 53)
SLOT_STUB(CONTEXT_IDENTITY, 54)
SLOT_STUB(CONTEXT_IDENTITY, 55)
SLOT_STUB(CONTEXT_IDENTITY, 56)
SLOT_STUB(CONTEXT_IDENTITY, 57)
SLOT_STUB(CONTEXT_IDENTITY, 58)
SLOT_STUB(CONTEXT_IDENTITY, 59)
STUB_DECADE(CONTEXT_IDENTITY, 6)
STUB_DECADE(CONTEXT_IDENTITY, 7)
STUB_DECADE(CONTEXT_IDENTITY, 8)
SLOT_STUB(CONTEXT_IDENTITY, 90)
SLOT_STUB(CONTEXT_IDENTITY, 92)

/* 93 slots: 4, 39 and 51 are served, slot 91 is NULL in the real driver too. */
static const slot_t context_identity[93] = {
    (slot_t)(uintptr_t)(93 * sizeof(slot_t)),
    (slot_t)CONTEXT_IDENTITY_stub_1,
    (slot_t)CONTEXT_IDENTITY_stub_2,
    (slot_t)CONTEXT_IDENTITY_stub_3,
    (slot_t)identity_ctx_id,
    (slot_t)CONTEXT_IDENTITY_stub_5,
    (slot_t)CONTEXT_IDENTITY_stub_6,
    (slot_t)CONTEXT_IDENTITY_stub_7,
    (slot_t)CONTEXT_IDENTITY_stub_8,
    (slot_t)CONTEXT_IDENTITY_stub_9,
    SLOTS_DECADE(CONTEXT_IDENTITY, 1),
    SLOTS_DECADE(CONTEXT_IDENTITY, 2),
    (slot_t)CONTEXT_IDENTITY_stub_30,
    (slot_t)CONTEXT_IDENTITY_stub_31,
    (slot_t)CONTEXT_IDENTITY_stub_32,
    (slot_t)CONTEXT_IDENTITY_stub_33,
    (slot_t)CONTEXT_IDENTITY_stub_34,
    (slot_t)CONTEXT_IDENTITY_stub_35,
    (slot_t)CONTEXT_IDENTITY_stub_36,
    (slot_t)CONTEXT_IDENTITY_stub_37,
    (slot_t)CONTEXT_IDENTITY_stub_38,
    (slot_t)identity_value,
    SLOTS_DECADE(CONTEXT_IDENTITY, 4),
    (slot_t)CONTEXT_IDENTITY_stub_50,
    (slot_t)identity_object,
    (slot_t)CONTEXT_IDENTITY_stub_52,
    (slot_t)CONTEXT_IDENTITY_stub_53,
    (slot_t)CONTEXT_IDENTITY_stub_54,
    (slot_t)CONTEXT_IDENTITY_stub_55,
    (slot_t)CONTEXT_IDENTITY_stub_56,
    (slot_t)CONTEXT_IDENTITY_stub_57,
    (slot_t)CONTEXT_IDENTITY_stub_58,
    (slot_t)CONTEXT_IDENTITY_stub_59,
    SLOTS_DECADE(CONTEXT_IDENTITY, 6),
    SLOTS_DECADE(CONTEXT_IDENTITY, 7),
    SLOTS_DECADE(CONTEXT_IDENTITY, 8),
    (slot_t)CONTEXT_IDENTITY_stub_90,
    NULL,
    (slot_t)CONTEXT_IDENTITY_stub_92,
};

/* ---- 1734dc26... (unknown; docs/export-tables.md 4.10) ----
 *
 * cuBLASLt (CUDA 13, bf16 GEMM heuristics on an H100) asks for this table and later calls
 * its slot 4 whether or not the driver gave it one: refusing the table crashed it on a
 * NULL pointer [measured].  Slot 4 takes two out-pointers and the caller takes its
 * fallback path when the call fails, so every slot here fails.  Slot 4's failure is
 * that known path, taken by every bf16 or FP8 GEMM program, so it is no warning; any
 * other slot is unknown use and says so once. */
static CUresult unknown_1734dc26_slot4(void)
{
    static atomic_int once;

    if (atomic_exchange(&once, 1) == 0)
        ds_debug("cuBLASLt asked for slot 4 of export table 1734dc26: declined, as the "
                 "real driver's answer is unknown; cuBLASLt takes its fallback");
    return CUDA_ERROR_NOT_SUPPORTED;
}

SLOT_STUB(UNKNOWN_1734DC26, 1)
SLOT_STUB(UNKNOWN_1734DC26, 2)
SLOT_STUB(UNKNOWN_1734DC26, 3)
SLOT_STUB(UNKNOWN_1734DC26, 5)
SLOT_STUB(UNKNOWN_1734DC26, 6)
SLOT_STUB(UNKNOWN_1734DC26, 7)
SLOT_STUB(UNKNOWN_1734DC26, 8)
SLOT_STUB(UNKNOWN_1734DC26, 9)
SLOT_STUB(UNKNOWN_1734DC26, 10)
SLOT_STUB(UNKNOWN_1734DC26, 11)
SLOT_STUB(UNKNOWN_1734DC26, 12)
SLOT_STUB(UNKNOWN_1734DC26, 13)
SLOT_STUB(UNKNOWN_1734DC26, 14)
SLOT_STUB(UNKNOWN_1734DC26, 15)
SLOT_STUB(UNKNOWN_1734DC26, 16)

/* 17 slots, as in the real driver [measured]. */
static const slot_t unknown_1734dc26[17] = {
    (slot_t)(uintptr_t)(17 * sizeof(slot_t)),
    (slot_t)UNKNOWN_1734DC26_stub_1,  (slot_t)UNKNOWN_1734DC26_stub_2,
    (slot_t)UNKNOWN_1734DC26_stub_3,  (slot_t)unknown_1734dc26_slot4,
    (slot_t)UNKNOWN_1734DC26_stub_5,  (slot_t)UNKNOWN_1734DC26_stub_6,
    (slot_t)UNKNOWN_1734DC26_stub_7,  (slot_t)UNKNOWN_1734DC26_stub_8,
    (slot_t)UNKNOWN_1734DC26_stub_9,  (slot_t)UNKNOWN_1734DC26_stub_10,
    (slot_t)UNKNOWN_1734DC26_stub_11, (slot_t)UNKNOWN_1734DC26_stub_12,
    (slot_t)UNKNOWN_1734DC26_stub_13, (slot_t)UNKNOWN_1734DC26_stub_14,
    (slot_t)UNKNOWN_1734DC26_stub_15, (slot_t)UNKNOWN_1734DC26_stub_16,
};

/* ---- 6e163fbe... (module functions; docs/export-tables.md 4.12) ----
 *
 * cuFFT loads each of its kernels as a module of one kernel and takes the kernel through
 * slot 7 without naming it: it refuses to start when the table is missing, and counts any
 * answer but 1 as a failure [measured].  Slot 7 calls back once per kernel with the
 * handle cuModuleGetFunction gives, and returns how many.  The context argument is where
 * the module was loaded; module handles here are the tenant's in every context. */
SLOT_STUB(MODULE_FUNCTIONS, 1)
SLOT_STUB(MODULE_FUNCTIONS, 2)
SLOT_STUB(MODULE_FUNCTIONS, 3)
SLOT_STUB(MODULE_FUNCTIONS, 4)
SLOT_STUB(MODULE_FUNCTIONS, 5)
SLOT_STUB(MODULE_FUNCTIONS, 6)

typedef void (*each_function)(void *user, CUfunction f, void *unknown);

static int module_functions_each(CUcontext ctx, CUmodule mod, each_function cb, void *user)
{
    CUfunction *f;
    unsigned n;

    (void)ctx;
    if (cb == NULL || ds__module_kernels(mod, &f, &n) != CUDA_SUCCESS)
        return 0;
    for (unsigned i = 0; i < n; i++)
        cb(user, f[i], NULL);
    free(f);
    return (int)n;
}

/* Eight words: cuFFT checks for at least seven before it calls slot 7. */
static const slot_t module_functions[8] = {
    (slot_t)(uintptr_t)(8 * sizeof(slot_t)),
    (slot_t)MODULE_FUNCTIONS_stub_1, (slot_t)MODULE_FUNCTIONS_stub_2,
    (slot_t)MODULE_FUNCTIONS_stub_3, (slot_t)MODULE_FUNCTIONS_stub_4,
    (slot_t)MODULE_FUNCTIONS_stub_5, (slot_t)MODULE_FUNCTIONS_stub_6,
    (slot_t)module_functions_each,
};

/* ---- DETSHARE_SHARE (detshare's own: client/share.h, docs/nvml.md) ---- */

static CUresult share_get(CUdevice dev, struct ds_share_info *out)
{
    ds_share_res r;
    int ordinal = 0; /* the device as its server numbers it */
    CUresult rc;

    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ds__rpc_ready())
        return CUDA_ERROR_NOT_INITIALIZED;
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_tenant_share(&ordinal, &r);
    ds__route_unpin();
    if (rc != CUDA_SUCCESS)
        return rc;
    out->mem_total = r.ds_share_res_u.share.mem_total;
    out->mem_free = r.ds_share_res_u.share.mem_free;
    out->mem_used = r.ds_share_res_u.share.mem_used;
    out->kernel_ns = r.ds_share_res_u.share.kernel_ns;
    out->now_ns = r.ds_share_res_u.share.now_ns;
    return CUDA_SUCCESS;
}

/* The executor's facts, taken only within the bounds both sides share, then checked
 * value by value as anything from the network is. */
static void facts_from_wire(const ds_facts *w, struct ds_devfacts *out)
{
    unsigned nv = w->values.values_len < DS_FACT_COUNT ? w->values.values_len : DS_FACT_COUNT;
    unsigned nt = w->texts.texts_len < DS_TEXT_COUNT ? w->texts.texts_len : DS_TEXT_COUNT;
    unsigned dropped;

    memset(out, 0, sizeof(*out));
    out->served = nv == 64 ? w->served : w->served & ((1ull << nv) - 1);
    memcpy(out->v, w->values.values_val, nv * sizeof(out->v[0]));
    for (unsigned i = 0; i < nt; i++)
        if (w->texts.texts_val[i] != NULL)
            snprintf(out->text[i], sizeof(out->text[i]), "%s", w->texts.texts_val[i]);
    if (w->cpus.cpus_len <= DS_FACT_CPU_WORDS_ROOM) {
        out->ncpu_words = w->cpus.cpus_len;
        memcpy(out->cpus, w->cpus.cpus_val, out->ncpu_words * sizeof(out->cpus[0]));
    }
    if (w->nodes.nodes_len <= DS_FACT_NODE_WORDS_ROOM) {
        out->nnode_words = w->nodes.nodes_len;
        memcpy(out->nodes, w->nodes.nodes_val, out->nnode_words * sizeof(out->nodes[0]));
    }
    if ((dropped = ds_devfacts_sanitize(out)) > 0)
        ds_warn("DS_DEVICE_FACTS: %u malformed facts from the server left unserved", dropped);
}

static CUresult facts_get(CUdevice dev, struct ds_devfacts *out)
{
    ds_facts_res r;
    int ordinal = 0; /* the device as its server numbers it */
    CUresult rc;

    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ds__rpc_ready())
        return CUDA_ERROR_NOT_INITIALIZED;
    if ((rc = ds__ctx_pin(dev)) != CUDA_SUCCESS)
        return rc;
    rc = ds_rpc_device_facts(&ordinal, &r);
    ds__route_unpin();
    if (rc != CUDA_SUCCESS)
        return rc;
    facts_from_wire(&r.ds_facts_res_u.facts, out);
    ds__rpc_free((xdrproc_t)xdr_ds_facts_res, &r);
    return CUDA_SUCCESS;
}

static const slot_t share_table[3] = {
    (slot_t)(uintptr_t)(3 * sizeof(slot_t)),
    (slot_t)share_get,
    (slot_t)facts_get,
};

/* ---- the lookup ---- */

struct table {
    unsigned char id[16];
    const char *name;
    const void *table;
};

static const struct table tables[] = {
    { { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 },
      "CUDART_INTERFACE", cudart_interface },
    { { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 },
      "TOOLS_RUNTIME_CALLBACK_HOOKS", tools_hooks },
    { { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc },
      "TOOLS_TLS", tools_tls },
    { { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 },
      "CONTEXT_LOCAL_STORAGE_INTERFACE_V0301", context_local_storage },
    { { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e },
      "CONTEXT_CHECKS", context_checks },
    { { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 },
      "INTEGRITY_CHECK", integrity_check },
    { { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2 },
      "CONTEXT_IDENTITY", context_identity },
    { { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca },
      "1734dc26 (unknown)", unknown_1734dc26 },
    { { 0xda, 0x91, 0x51, 0xd3, 0x3a, 0xe6, 0xcc, 0x41, 0xa5, 0xc0, 0x4f, 0x26, 0xd5, 0x33, 0xe3, 0x28 },
      "NVRTC_CACHE", ds__nvrtc_cache },
    { { 0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e },
      "MODULE_FUNCTIONS", module_functions },
    { DS_SHARE_TABLE_ID_BYTES, "DETSHARE_SHARE", share_table },
};

/* ---- CUPTI's tables (docs/export-tables.md 4.14) ----
 *
 * CUPTI asks for private tables of the driver's profiling internals (2c8e0ad8 first,
 * then fc58ac1a and DEVICE_EXTENDED_RT once one is given) before any activity record or
 * callback works.  A remoting driver cannot serve them: the tenant's kernels run in the
 * executor's process, where CUPTI is not.  CUPTI turns every refusal into
 * CUPTI_ERROR_UNKNOWN whatever the code [measured, CUPTI 13.0], so the one line below is
 * what tells the user, and where to look instead. */
static const unsigned char cupti_ids[][16] = {
    { 0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e, 0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b },
    { 0xfc, 0x58, 0xac, 0x1a, 0x05, 0x7c, 0x44, 0x4f, 0xa9, 0x77, 0x72, 0xee, 0x9a, 0xef, 0xdb, 0x89 },
};

/* The name this process connects as (rpc.c's rule): DETSHARE_TENANT, else PROGRAM.PID. */
static const char *tenant_name(char *buf, size_t len)
{
    const char *name = getenv("DETSHARE_TENANT");

    if (name != NULL && name[0] != '\0')
        return name;
    snprintf(buf, len, "%s.%d", program_invocation_short_name, (int)getpid());
    return buf;
}

/* 1 when id is one of CUPTI's tables, after saying so once per process. */
static int cupti_table(const CUuuid *id)
{
    static atomic_int once;
    char buf[64];

    for (size_t i = 0; i < sizeof(cupti_ids) / sizeof(cupti_ids[0]); i++) {
        if (memcmp(cupti_ids[i], id->bytes, 16) != 0)
            continue;
        if (atomic_exchange(&once, 1) == 0)
            ds_warn("profiling through CUPTI (torch.profiler, Nsight, CUPTI tools) is not "
                    "served by detshare: CUPTI will report an error and record no kernel; "
                    "trace this tenant from the server instead: detshare-ctl trace %s "
                    "--seconds N > trace.json", tenant_name(buf, sizeof(buf)));
        return 1;
    }
    return 0;
}

static void log_unknown(const CUuuid *id)
{
    char hex[33];

    for (int i = 0; i < 16; i++) {
        static const char digits[] = "0123456789abcdef";

        hex[2 * i] = digits[(unsigned char)id->bytes[i] >> 4];
        hex[2 * i + 1] = digits[(unsigned char)id->bytes[i] & 15];
    }
    hex[32] = '\0';
    ds_debug("cuGetExportTable: no table %s", hex);
}

CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    if (table == NULL || id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        if (memcmp(tables[i].id, id->bytes, 16) == 0) {
            *table = tables[i].table;
            return CUDA_SUCCESS;
        }
    }
    *table = NULL;
    if (cupti_table(id))
        return CUDA_ERROR_NOT_SUPPORTED;
    /* What the real driver answers for an id it does not know. */
    log_unknown(id);
    return CUDA_ERROR_INVALID_VALUE;
}
