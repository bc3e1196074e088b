/* cuGetExportTable: the hidden tables cudart and cuBLAS need (docs/export-tables.md),
 * served with the sizes and behaviour measured on the real driver. */
#include "ds_test.h"
#include "identity_cases.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef void *slot_t;

static CUuuid id_of(const char *hex)
{
    CUuuid u;

    for (int i = 0; i < 16; i++) {
        unsigned v;

        sscanf(hex + 2 * i, "%2x", &v);
        u.bytes[i] = (char)v;
    }
    return u;
}

static slot_t *table(const char *hex)
{
    CUuuid id = id_of(hex);
    const void *t = NULL;

    CU_OK(cuGetExportTable(&t, &id));
    cr_assert_not_null(t);
    return (slot_t *)t;
}

#define CUDART "6bd5fb6c5bf4e74a8987d93912fd9df9"
#define HOOKS "a094798c2e742e7493f20800200c0a66"
#define TLS "42d85a8123f6cb478298f6e78a3aecdc"
#define CLS "c693336e1121df11a8c368f355d89593"
#define CHECKS "263e88607cd2614392f6bbd5006dfa7e"
#define INTEGRITY "d4082055bde6704b8d34ba123c66e1f2"
#define IDENTITY "21318c60971432488ca641ff7324c8f2"
#define UNKNOWN_1734 "1734dc26800d47458726c0f1e7dd8bca"

Test(export, sizes_match_the_real_driver_and_work_before_init)
{
    cr_assert_eq((uintptr_t)table(CUDART)[0], 104);
    cr_assert_eq((uintptr_t)table(HOOKS)[0], 56);
    cr_assert_eq((uintptr_t)table(TLS)[0], 24);
    cr_assert_eq((uintptr_t)table(CHECKS)[0], 120);
    cr_assert_eq((uintptr_t)table(INTEGRITY)[0], 24);
    cr_assert_eq((uintptr_t)table(IDENTITY)[0], 744);
    cr_assert_null(table(IDENTITY)[91], "NULL in the real driver too");
    cr_assert_null(table(CUDART)[10]);
    cr_assert_null(table(CLS)[3], "context-local storage: three functions and a NULL");
    cr_assert_eq((uintptr_t)table(UNKNOWN_1734)[0], 136);
}

/* cuBLASLt calls slot 4 of this table even when the driver refused it, and falls back
 * when the call fails. */
Test(export, the_unknown_table_cublaslt_needs_fails_each_call)
{
    CUresult (*slot4)(void **, void *) = (CUresult(*)(void **, void *))table(UNKNOWN_1734)[4];
    void *out = NULL, *out2 = NULL;

    for (int i = 1; i < 17; i++)
        cr_assert_not_null(table(UNKNOWN_1734)[i]);
    cr_assert_neq(slot4(&out, &out2), CUDA_SUCCESS);
    cr_assert_null(out);
}

/* Every bf16 or FP8 GEMM program calls that slot 4: its failure is the expected path and
 * leaves the tenant's stderr alone, while a call to any other slot of the table is news
 * and is logged. */
Test(export, only_unknown_use_of_that_table_is_logged)
{
    CUresult (*slot)(void **, void *);
    void *out = NULL, *out2 = NULL;
    char log[512] = "";
    int p[2], saved;

    cr_assert_eq(pipe(p), 0);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    saved = dup(2);
    cr_assert_geq(saved, 0);
    dup2(p[1], 2);
    slot = (CUresult(*)(void **, void *))table(UNKNOWN_1734)[4];
    cr_assert_eq(slot(&out, &out2), CUDA_ERROR_NOT_SUPPORTED);
    slot = (CUresult(*)(void **, void *))table(UNKNOWN_1734)[5];
    cr_assert_eq(slot(&out, &out2), CUDA_ERROR_NOT_SUPPORTED);
    dup2(saved, 2);
    cr_assert_gt(read(p[0], log, sizeof(log) - 1), 0);
    cr_expect(strstr(log, "slot 5") != NULL, "%s", log);
    cr_expect(strstr(log, "slot 4") == NULL, "%s", log);
}

Test(export, unknown_tables_and_bad_arguments_are_refused)
{
    CUuuid id = id_of("f8cff95121468b4eb9e2fb469e7c0dd9");
    const void *t = (void *)1;

    CU_IS(cuGetExportTable(&t, &id), CUDA_ERROR_INVALID_VALUE);
    cr_assert_null(t);
    CU_IS(cuGetExportTable(NULL, &id), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGetExportTable(&t, NULL), CUDA_ERROR_INVALID_VALUE);
}

Test(export, tools_tls_and_context_checks)
{
    CUresult (*current)(CUcontext *) = (CUresult(*)(CUcontext *))table(TLS)[2];
    CUresult (*wrapped)(CUcontext, unsigned *, CUcontext *) =
        (CUresult(*)(CUcontext, unsigned *, CUcontext *))table(CHECKS)[2];
    unsigned (*zero)(void) = (unsigned (*)(void))table(CHECKS)[3];
    CUcontext c = (CUcontext)1;
    unsigned w = 7;

    CU_OK(current(&c));
    cr_assert_null(c, "no context: NULL and success");
    CU_OK(wrapped(NULL, &w, NULL));
    cr_assert_eq(w, 0);
    cr_assert_eq(zero(), 0);
}

Test(export, integrity_answers_are_fixed_or_keyed_to_the_call)
{
    CUresult (*mac)(unsigned, uint64_t, uint64_t *) =
        (CUresult(*)(unsigned, uint64_t, uint64_t *))table(INTEGRITY)[1];
    uint64_t a[2], b[2], c[2];

    CU_OK(mac(13000, 1234, a));
    cr_assert_eq(a[0], 0x3341181c03cb675cull);
    cr_assert_eq(a[1], 0x8ed383aa1f4cd1e8ull);
    CU_OK(mac(13001, 1234, a));
    cr_assert_eq(a[0], 0x1841181c03cb675cull);
    CU_OK(mac(13002, 1234, a));
    CU_OK(mac(13002, 1234, b));
    CU_OK(mac(13002, 1235, c));
    cr_assert_arr_eq(a, b, sizeof(a), "the same question gets the same answer");
    cr_assert(memcmp(a, c, sizeof(a)) != 0, "the time is part of the question");
}

static int dtor_calls;
static void *dtor_value;

static void dtor(CUcontext ctx, void *key, void *value)
{
    (void)ctx;
    (void)key;
    dtor_calls++;
    dtor_value = value;
}

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

Test(export_live, context_local_storage_lives_and_dies_with_its_context, .init = start,
     .fini = stop)
{
    typedef void (*dtor_fn)(CUcontext, void *, void *);
    slot_t *cls = table(CLS);
    CUresult (*put)(CUcontext, void *, void *, dtor_fn) =
        (CUresult(*)(CUcontext, void *, void *, dtor_fn))cls[0];
    CUresult (*del)(CUcontext, void *) = (CUresult(*)(CUcontext, void *))cls[1];
    CUresult (*get)(void **, CUcontext, void *) = (CUresult(*)(void **, CUcontext, void *))cls[2];
    int key1, key2, value;
    void *got = NULL;
    CUcontext c;

    CU_OK(cuInit(0));
    CU_OK(cuCtxCreate(&c, NULL, 0, 0));
    CU_IS(get(&got, c, &key1), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(put(NULL, &key1, &value, dtor)); /* NULL: the current context */
    CU_OK(get(&got, c, &key1));
    cr_assert_eq(got, &value);
    CU_OK(put(c, &key2, &got, dtor));
    CU_OK(del(c, &key2));
    CU_IS(del(c, &key2), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(dtor_calls, 0, "an explicit delete calls no destructor");
    CU_OK(cuCtxDestroy(c));
    cr_assert_eq(dtor_calls, 1, "the context's end calls the destructor");
    cr_assert_eq(dtor_value, &value);
    CU_IS(get(&got, c, &key1), CUDA_ERROR_INVALID_HANDLE);
}

Test(export_live, context_identity_and_the_primary_context, .init = start, .fini = stop)
{
    slot_t *identity = table(IDENTITY);
    CUresult (*ctx_id)(CUcontext, unsigned long long *) =
        (CUresult(*)(CUcontext, unsigned long long *))identity[4];
    CUresult (*object)(CUcontext, uintptr_t, void **, int) =
        (CUresult(*)(CUcontext, uintptr_t, void **, int))identity[51];
    CUresult (*value)(CUcontext, void *, uint64_t *) =
        (CUresult(*)(CUcontext, void *, uint64_t *))identity[39];
    CUresult (*primary)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))table(CUDART)[2];
    CUcontext unretained, retained;
    unsigned long long id, want;
    unsigned flags;
    int active;
    void *obj;
    uint64_t v = 0;

    CU_OK(cuInit(0));
    CU_OK(primary(&unretained, 0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 0, "handing out the primary context does not retain it");
    CU_OK(cuDevicePrimaryCtxRetain(&retained, 0));
    cr_assert_eq(retained, unretained, "the same handle a retain returns");
    CU_OK(cuCtxSetCurrent(retained));
    CU_OK(ctx_id(retained, &id));
    CU_OK(cuCtxGetId(retained, &want));
    cr_assert_eq(id, want);
    CU_OK(object(retained, 0, &obj, 0));
    CU_OK(value(retained, obj, &v));
    if (ds_test_on_sim())
        cr_assert_eq(v, 7, "the value an H100 gave");
}

/* Slot 51's second argument is a stream: each stream has its own number, the same each
 * time it is asked, and a value that is no stream of the tenant is refused. */
static const char identity_answers[] = "all_succeed 1\n"
                                       "legacy_same_twice 1\n"
                                       "legacy_nonzero 1\n"
                                       "null_as_legacy 1\n"
                                       "null_with_flag_as_per_thread 1\n"
                                       "stream_same_twice 1\n"
                                       "streams_differ 1\n"
                                       "stream_not_legacy 1\n"
                                       "per_thread_not_stream 1\n"
                                       "second_context 0\n"
                                       "second_context_legacy_differs 1\n";

static void identity_answers_here(char *out, size_t len)
{
    CUcontext primary;

    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&primary, 0));
    CU_OK(cuCtxSetCurrent(primary));
    cr_assert_eq(ds_identity_cases(out, len), 0, "%s", out);
}

Test(export_live, context_identity_numbers_each_stream, .init = start, .fini = stop)
{
    char out[4096];

    identity_answers_here(out, sizeof(out));
    cr_assert_str_eq(out, identity_answers);
}

Test(export_live, context_identity_refuses_what_is_no_stream, .init = start, .fini = stop)
{
    slot_t *identity = table(IDENTITY);
    CUresult (*object)(CUcontext, CUstream, void **, int) =
        (CUresult(*)(CUcontext, CUstream, void **, int))identity[51];
    CUcontext c;
    CUstream s;
    void *obj;

    CU_OK(cuInit(0));
    CU_OK(cuCtxCreate(&c, NULL, 0, 0));
    CU_IS(object(c, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(object(c, s, &obj, 0));
    CU_OK(cuStreamDestroy(s));
    CU_IS(object(c, s, &obj, 0), CUDA_ERROR_INVALID_HANDLE); /* destroyed */
    CU_IS(object(c, (CUstream)(uintptr_t)0x1234, &obj, 0), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(object(c, (CUstream)(uintptr_t)UINTPTR_MAX, &obj, 0), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuCtxDestroy(c));
}

/* On a GPU: the same relations hold natively (native_identity). */
Test(export_live, context_identity_behaves_as_the_native_driver, .init = start, .fini = stop)
{
    char mine[4096], native[4096] = "";
    size_t n;
    FILE *p;

    if (ds_test_on_sim())
        cr_skip_test("compares with the real driver");
    identity_answers_here(mine, sizeof(mine));
    p = popen("env -u LD_LIBRARY_PATH -u LD_PRELOAD " DS_NATIVE_IDENTITY, "r");
    cr_assert_not_null(p);
    n = fread(native, 1, sizeof(native) - 1, p);
    native[n] = '\0';
    cr_assert_eq(pclose(p), 0, "native_identity failed: %s", native);
    cr_assert_str_eq(mine, native);
}
