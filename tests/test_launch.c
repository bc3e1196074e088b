/* Modules and launches through a server: layouts, parameters arriving bit for bit (on a
 * GPU), modelled kernel time (on the sim), and every way a launch can be wrong. */
#include "ds_test.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
    ds_test_ctx();
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(launch, .init = start, .fini = stop, .timeout = 120);

struct odd {
    char a;
    double b;
    char c[3];
};

struct arr {
    short v[5];
};

struct echo_out {
    char c;
    short s;
    int i;
    long long l;
    float f;
    double d;
    struct odd o;
    struct arr a;
};

static void *slurp(const char *name, size_t *len)
{
    char path[512];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof(path), "%s/%s", DS_KERNEL_DIR, name);
    f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = calloc(1, (size_t)n + 1); /* NUL-terminated for PTX */
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    if (len != NULL)
        *len = (size_t)n;
    return buf;
}

static CUmodule load(const char *name)
{
    void *image = slurp(name, NULL);
    CUmodule m;

    CU_OK(cuModuleLoadData(&m, image));
    free(image);
    return m;
}

Test(launch, layouts_match_the_compiler)
{
    /* The offsets follow the C ABI of the parameter list: each parameter at its own
     * alignment (struct odd: 8, struct arr: 2, pointers: 8). */
    static const size_t want_off[] = { 0, 2, 4, 8, 16, 24, 32, 56, 72 };
    static const size_t want_size[] = { 1, 2, 4, 8, 4, 8, 24, 10, 8 };
    CUmodule m = load("launch.fatbin");
    size_t off, size;
    CUfunction f, again;

    CU_OK(cuModuleGetFunction(&f, m, "echo"));
    CU_OK(cuModuleGetFunction(&again, m, "echo"));
    cr_assert_eq(f, again, "one function per kernel");
    for (size_t i = 0; i < 9; i++) {
        CU_OK(cuFuncGetParamInfo(f, i, &off, &size));
        cr_assert_eq(off, want_off[i], "parameter %zu", i);
        cr_assert_eq(size, want_size[i], "parameter %zu", i);
    }
    CU_IS(cuFuncGetParamInfo(f, 9, &off, &size), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuModuleUnload(m));
}

Test(launch, parameters_arrive_bit_for_bit)
{
    CUmodule m = load("launch.fatbin");
    struct echo_out want, got;
    CUdeviceptr out;
    CUfunction f;
    char c = -7;
    short s = -12345;
    int i = 0x7eadbeef;
    long long l = -0x123456789abcdefll;
    float fl = 3.25f;
    double d = -1.0 / 3.0;
    struct odd o;
    struct arr a = { { 1, -2, 3, -4, 5 } };
    void *params[] = { &c, &s, &i, &l, &fl, &d, &o, &a, &out };

    memset(&o, 0, sizeof(o));
    o.a = 'x';
    o.b = 6.02214076e23;
    memcpy(o.c, "yz!", 3);
    CU_OK(cuModuleGetFunction(&f, m, "echo"));
    CU_OK(cuMemAlloc(&out, sizeof(got)));
    CU_OK(cuMemsetD8(out, 0, sizeof(got)));
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuCtxSynchronize());
    if (ds_test_on_sim())
        return; /* sim kernels compute nothing */
    CU_OK(cuMemcpyDtoH(&got, out, sizeof(got)));
    memset(&want, 0, sizeof(want));
    want.c = c;
    want.s = s;
    want.i = i;
    want.l = l;
    want.f = fl;
    want.d = d;
    want.o = o;
    want.a = a;
    cr_assert_eq(got.c, c);
    cr_assert_eq(got.s, s);
    cr_assert_eq(got.i, i);
    cr_assert_eq(got.l, l);
    cr_assert_eq(memcmp(&got.f, &fl, sizeof(fl)), 0);
    cr_assert_eq(memcmp(&got.d, &d, sizeof(d)), 0);
    cr_assert_eq(got.o.a, o.a);
    cr_assert_eq(memcmp(&got.o.b, &o.b, sizeof(o.b)), 0);
    cr_assert_eq(memcmp(got.o.c, o.c, 3), 0);
    cr_assert_eq(memcmp(&got.a, &a, sizeof(a)), 0);
}

Test(launch, results_are_right_and_the_extra_form_works)
{
    CUmodule m = load("launch.fatbin");
    const int n = 1 << 20;
    struct {
        CUdeviceptr out;
        int v, n;
    } buf;
    size_t size = sizeof(buf);
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      CU_LAUNCH_PARAM_END };
    int *host = malloc(sizeof(int) * n);
    CUfunction f;

    CU_OK(cuModuleGetFunction(&f, m, "fill"));
    CU_OK(cuMemAlloc(&buf.out, sizeof(int) * n));
    buf.v = 1000;
    buf.n = n;
    CU_OK(cuLaunchKernel(f, n / 256, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
    CU_OK(cuCtxSynchronize());
    if (!ds_test_on_sim()) {
        CU_OK(cuMemcpyDtoH(host, buf.out, sizeof(int) * n));
        for (int i = 0; i < n; i++)
            cr_assert_eq(host[i], 1000 + i, "element %d", i);
    }
    free(host);
}

Test(launch, sim_kernels_take_modelled_time)
{
    CUmodule m;
    CUfunction f;
    CUdeviceptr out;
    CUevent a, b;
    int v = 0, n = 0;
    void *params[] = { &out, &v, &n };
    float ms;

    DS_SIM_ONLY();
    m = load("launch.cubin");
    CU_OK(cuModuleGetFunction(&f, m, "fill"));
    CU_OK(cuMemAlloc(&out, 4));
    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, 0));
    CU_OK(cuEventRecord(a, NULL));
    /* 132 SMs x 2 blocks per wave: 26400 blocks of 512 threads are 100 waves of 2 us. */
    CU_OK(cuLaunchKernel(f, 26400, 1, 1, 512, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuEventRecord(b, NULL));
    CU_OK(cuEventSynchronize(b));
    CU_OK(cuEventElapsedTime(&ms, a, b));
    cr_assert_geq(ms, 0.203f * 0.999f, "%.3f ms", ms);
    cr_assert_lt(ms, 0.203f + 20.0f, "%.3f ms", ms);
}

Test(launch, globals_are_device_memory)
{
    CUmodule m = load("launch.fatbin");
    CUdeviceptr g, again, out;
    CUfunction f;
    size_t size;
    int v;
    void *params[] = { &out };

    CU_OK(cuModuleGetGlobal(&g, &size, m, "g_value"));
    cr_assert_eq(size, sizeof(int));
    CU_OK(cuModuleGetGlobal(&again, NULL, m, "g_value"));
    cr_assert_eq(again, g, "one address per variable");
    CU_IS(cuModuleGetGlobal(&again, &size, m, "no_such_variable"), CUDA_ERROR_NOT_FOUND);
    CU_OK(cuMemcpyDtoH(&v, g, sizeof(v)));
    cr_assert_eq(v, 42, "the initial value");
    v = 7;
    CU_OK(cuMemcpyHtoD(g, &v, sizeof(v)));
    CU_OK(cuModuleGetFunction(&f, m, "read_global"));
    CU_OK(cuMemAlloc(&out, sizeof(int)));
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuMemcpyDtoH(&v, ds_test_on_sim() ? g : out, sizeof(v)));
    cr_assert_eq(v, 7);
    CU_IS(cuMemFree(g), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuModuleUnload(m));
    CU_IS(cuMemcpyDtoH(&v, g, sizeof(v)), CUDA_ERROR_INVALID_VALUE);
}

Test(launch, every_image_kind_loads_where_it_can)
{
    CUmodule m;
    CUfunction f;
    void *ptx = slurp("launch.ptx", NULL);

    m = load("launch.cubin");
    CU_OK(cuModuleGetFunction(&f, m, "fill"));
    CU_OK(cuModuleUnload(m));
    if (ds_test_on_sim()) {
        CU_IS(cuModuleLoadData(&m, ptx), CUDA_ERROR_NOT_SUPPORTED);
    } else {
        CU_OK(cuModuleLoadData(&m, ptx));
        CU_OK(cuModuleGetFunction(&f, m, "fill"));
    }
    free(ptx);
}

Test(launch, the_library_api_is_the_same_path)
{
    void *image = slurp("launch.fatbin", NULL);
    CUlibrary lib;
    CUkernel k;
    CUfunction f;
    CUmodule m;
    CUdeviceptr out;
    int v = 5, n = 1, got = 0;
    void *params[] = { &out, &v, &n };

    CU_OK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryGetKernel(&k, lib, "fill"));
    CU_OK(cuKernelGetFunction(&f, k));
    CU_OK(cuLibraryGetModule(&m, lib));
    CU_OK(cuMemAlloc(&out, sizeof(int)));
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuCtxSynchronize());
    if (!ds_test_on_sim()) {
        CU_OK(cuMemcpyDtoH(&got, out, sizeof(got)));
        cr_assert_eq(got, 5);
    }
    CU_OK(cuLibraryUnload(lib));
    free(image);
}

static void *image_for_thread;

/* A thread with no current context loads a library and takes a kernel from it, as
 * cudart does on a new thread's first launch; then it makes a context current and
 * launches.  Runs on its own thread: returns NULL or what failed. */
static void *library_without_a_context(void *ctx)
{
    CUlibrary lib;
    CUkernel k;
    CUfunction f;
    CUcontext none;
    CUdeviceptr out;
    int v = 9, n = 1, got = 0;
    void *params[] = { &out, &v, &n };

    if (cuCtxGetCurrent(&none) != CUDA_SUCCESS || none != NULL)
        return "a new thread had a current context";
    if (cuLibraryLoadData(&lib, image_for_thread, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS)
        return "cuLibraryLoadData without a current context";
    if (cuLibraryGetKernel(&k, lib, "fill") != CUDA_SUCCESS ||
        cuKernelGetFunction(&f, k) != CUDA_SUCCESS)
        return "cuLibraryGetKernel without a current context";
    if (cuModuleLoadData((CUmodule *)&none, image_for_thread) != CUDA_ERROR_INVALID_CONTEXT)
        return "cuModuleLoadData without a current context did not fail as the driver's";
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuMemAlloc(&out, sizeof(int)) != CUDA_SUCCESS ||
        cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
        cuCtxSynchronize() != CUDA_SUCCESS || cuMemcpyDtoH(&got, out, sizeof(got)) != CUDA_SUCCESS)
        return "the launch after making the context current";
    if (!ds_test_on_sim() && got != 9)
        return "the kernel's result";
    if (cuMemFree(out) != CUDA_SUCCESS || cuLibraryUnload(lib) != CUDA_SUCCESS)
        return "freeing";
    return NULL;
}

Test(launch, a_thread_without_a_context_loads_a_library)
{
    CUcontext ctx = ds_test_ctx();
    pthread_t t;
    void *failed;

    image_for_thread = slurp("launch.fatbin", NULL);
    cr_assert(pthread_create(&t, NULL, library_without_a_context, ctx) == 0);
    pthread_join(t, &failed);
    cr_assert_null(failed, "%s", (const char *)failed);
    free(image_for_thread);
}

Test(launch, bad_images_names_and_launches_are_refused)
{
    static const char junk[64] = "definitely not a cubin";
    CUmodule m = load("launch.fatbin");
    CUfunction f;
    CUdeviceptr out;
    int v = 0, n = 0;
    void *params[] = { &out, &v, &n };
    CUmodule bad;

    CU_IS(cuModuleLoadData(&bad, junk), CUDA_ERROR_INVALID_IMAGE);
    CU_IS(cuModuleGetFunction(&f, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    CU_OK(cuModuleGetFunction(&f, m, "fill"));
    CU_OK(cuMemAlloc(&out, 4));
    CU_IS(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    /* Shapes are refused by the launch itself, as the driver refuses them
     * (test_launch_checks.c has every kind); a stream only the executor can judge is
     * reported at the next sync. */
    CU_IS(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuCtxSynchronize());
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, (CUstream)(uintptr_t)0x999, params, NULL));
    CU_IS(cuCtxSynchronize(), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuModuleUnload(m));
    CU_IS(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
}

Test(launch, attributes_and_occupancy)
{
    CUmodule m = load("launch.fatbin");
    CUfunction f;
    int v, blocks;

    CU_OK(cuModuleGetFunction(&f, m, "fill"));
    CU_OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    cr_assert_gt(v, 0);
    CU_OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536));
    CU_OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
    cr_assert_eq(v, 65536);
    CU_OK(cuFuncSetCacheConfig(f, CU_FUNC_CACHE_PREFER_SHARED));
    CU_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 0));
    cr_assert_gt(blocks, 0);
    CU_IS(cuFuncGetAttribute(&v, (CUfunction_attribute)9999, f), CUDA_ERROR_INVALID_VALUE);
}

Test(launch, launch_attributes_travel_and_handles_among_them_do_not)
{
    CUmodule m = load("launch.fatbin");
    CUfunction f;
    CUdeviceptr out;
    int v = 1, n = 32, got[32];
    void *params[] = { &out, &v, &n };
    CUlaunchAttribute attrs[2];
    CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
                           .blockDimY = 1, .blockDimZ = 1, .attrs = attrs, .numAttrs = 2 };

    CU_OK(cuModuleGetFunction(&f, m, "fill"));
    CU_OK(cuMemAlloc(&out, sizeof(got)));
    memset(attrs, 0, sizeof(attrs));
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attrs[0].value.priority = -1;
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[1].value.programmaticStreamSerializationAllowed = 1;
    CU_OK(cuLaunchKernelEx(&cfg, f, params, NULL));
    CU_OK(cuCtxSynchronize());
    if (!ds_test_on_sim()) {
        CU_OK(cuMemcpyDtoH(got, out, sizeof(got)));
        for (int i = 0; i < 32; i++)
            cr_assert_eq(got[i], 1 + i);
    }
    /* An event handle inside an attribute is not served yet: refused, not dropped. */
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
    CU_OK(cuLaunchKernelEx(&cfg, f, params, NULL));
    CU_IS(cuCtxSynchronize(), CUDA_ERROR_NOT_SUPPORTED);
    /* An access-policy window must lie in the tenant's own memory. */
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW;
    attrs[1].value.accessPolicyWindow.base_ptr = (void *)(uintptr_t)0x1000;
    attrs[1].value.accessPolicyWindow.num_bytes = 4096;
    CU_OK(cuLaunchKernelEx(&cfg, f, params, NULL));
    CU_IS(cuCtxSynchronize(), CUDA_ERROR_INVALID_VALUE);
    attrs[1].value.accessPolicyWindow.base_ptr = (void *)(uintptr_t)out;
    attrs[1].value.accessPolicyWindow.num_bytes = sizeof(got);
    attrs[1].value.accessPolicyWindow.hitRatio = 1.0f;
    attrs[1].value.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
    attrs[1].value.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
    CU_OK(cuLaunchKernelEx(&cfg, f, params, NULL));
    CU_OK(cuCtxSynchronize());
    /* A cooperative launch is the same launch with the cooperative attribute. */
    v = 9;
    CU_OK(cuLaunchCooperativeKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params));
    CU_OK(cuCtxSynchronize());
    if (!ds_test_on_sim()) {
        CU_OK(cuMemcpyDtoH(got, out, sizeof(got)));
        cr_assert_eq(got[31], 9 + 31);
    }
}

/* Per-thread default streams.  The work that keeps one thread's stream busy is a kernel
 * with a huge grid: long on the device (modelled on the sim: 10000 waves), and nothing
 * for the host to do, so the measurement does not depend on how fast the host is. */
struct thread_run {
    CUcontext ctx;
    CUfunction f;
    CUevent done;
    int launches;
};

static CUdeviceptr dummy;

static void *on_per_thread_stream(void *arg)
{
    struct thread_run *r = arg;
    int v = 0, n = 0;
    void *params[] = { &dummy, &v, &n };

    if (cuCtxSetCurrent(r->ctx) != CUDA_SUCCESS)
        return (void *)1;
    for (int i = 0; i < r->launches; i++)
        if (cuLaunchKernel(r->f, 2640000, 1, 1, 256, 1, 1, 0, CU_STREAM_PER_THREAD, params,
                           NULL) != CUDA_SUCCESS)
            return (void *)2;
    /* No synchronisation: the thread leaves with its work in flight, and its stream goes
     * with it, as CUDA allows. */
    if (cuEventRecord(r->done, CU_STREAM_PER_THREAD) != CUDA_SUCCESS)
        return (void *)3;
    return NULL;
}

Test(launch, per_thread_default_streams_are_each_threads_own)
{
    CUmodule m = load("launch.fatbin");
    /* 16 wide kernels: about 160 ms of modelled time on the sim, so that the host's own
     * delays between the two threads (tens of ms under ASan on a loaded CI machine) stay
     * well below half of it. */
    struct thread_run busy = { .launches = 16 }, idle = { .launches = 0 };
    CUevent t0, after_legacy;
    unsigned long long id_main, id_again;
    pthread_t a, b;
    void *ra, *rb;
    float busy_ms, idle_ms, legacy_ms;
    int v = 0, n = 0;
    void *params[] = { &dummy, &v, &n };

    CU_OK(cuModuleGetFunction(&busy.f, m, "fill"));
    idle.f = busy.f;
    CU_OK(cuMemAlloc(&dummy, 4));
    CU_OK(cuCtxGetCurrent(&busy.ctx));
    idle.ctx = busy.ctx;
    CU_OK(cuEventCreate(&t0, 0));
    CU_OK(cuEventCreate(&busy.done, 0));
    CU_OK(cuEventCreate(&idle.done, 0));
    CU_OK(cuEventCreate(&after_legacy, 0));
    CU_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &id_main));
    CU_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &id_again));
    cr_assert_eq(id_main, id_again, "one default stream per thread");
    CU_OK(cuEventRecord(t0, CU_STREAM_PER_THREAD));
    pthread_create(&a, NULL, on_per_thread_stream, &busy);
    pthread_join(a, &ra);
    pthread_create(&b, NULL, on_per_thread_stream, &idle);
    pthread_join(b, &rb);
    cr_assert_null(ra);
    cr_assert_null(rb);
    CU_OK(cuEventSynchronize(busy.done));
    CU_OK(cuEventSynchronize(idle.done));
    CU_OK(cuEventElapsedTime(&busy_ms, t0, busy.done));
    CU_OK(cuEventElapsedTime(&idle_ms, t0, idle.done));
    cr_assert_lt(idle_ms, busy_ms * 0.5f, "another thread's stream runs free: %.3f of %.3f ms",
                 idle_ms, busy_ms);
    /* Like CUDA's, a per-thread default stream is blocking: it waits for the legacy one. */
    CU_OK(cuEventRecord(t0, CU_STREAM_LEGACY));
    for (int i = 0; i < busy.launches; i++)
        CU_OK(cuLaunchKernel(busy.f, 2640000, 1, 1, 256, 1, 1, 0, CU_STREAM_LEGACY, params, NULL));
    CU_OK(cuEventRecord(after_legacy, CU_STREAM_PER_THREAD));
    CU_OK(cuEventSynchronize(after_legacy));
    CU_OK(cuEventElapsedTime(&legacy_ms, t0, after_legacy));
    cr_assert_geq(legacy_ms, busy_ms * 0.5f, "%.3f ms after legacy work of about %.3f",
                  legacy_ms, busy_ms);
}

/* cuModuleEnumerateFunctions gives each kernel once, as cuModuleGetFunction gives it. */
Test(launch, a_module_lists_its_kernels)
{
    static const char *names[] = { "echo", "fill", "read_global", "spin", "step" };
    CUfunction by_name[5], listed[8];
    unsigned n = 0;
    CUmodule m;

    ds_test_ctx();
    m = load("launch.fatbin");
    CU_OK(cuModuleGetFunctionCount(&n, m));
    cr_assert_eq(n, 5);
    CU_OK(cuModuleEnumerateFunctions(listed, 8, m));
    for (int i = 0; i < 5; i++) {
        int found = 0;

        CU_OK(cuModuleGetFunction(&by_name[i], m, names[i]));
        for (unsigned j = 0; j < n; j++)
            found += listed[j] == by_name[i];
        cr_expect_eq(found, 1, "%s listed %d times", names[i], found);
    }
    CU_IS(cuModuleGetFunctionCount(&n, (CUmodule)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE);
}

struct listed {
    CUfunction f[8];
    int n;
};

static void remember(void *user, CUfunction f, void *unknown)
{
    struct listed *l = user;

    (void)unknown;
    if (l->n < 8)
        l->f[l->n] = f;
    l->n++;
}

/* cuFFT's way (docs/export-tables.md 4.12): a module of one kernel, its kernel taken
 * through export table 6e163fbe slot 7, which must answer 1 and call back once. */
Test(launch, the_module_functions_table_gives_a_modules_kernel)
{
    static const CUuuid id = { { 0x6e, 0x16, 0x3f, (char)0xbe, (char)0xb9, 0x58, 0x44, 0x4d,
                                 (char)0x83, 0x5c, (char)0xe1, (char)0x82, (char)0xaf,
                                 (char)0xf1, (char)0x99, 0x1e } };
    int (*each)(CUcontext, CUmodule, void (*)(void *, CUfunction, void *), void *);
    struct listed got = { .n = 0 };
    CUfunction step;
    const void *t;
    int found = 0;
    CUcontext ctx = ds_test_ctx();
    CUmodule m = load("launch.fatbin");

    CU_OK(cuGetExportTable(&t, &id));
    cr_assert_geq(((const uintptr_t *)t)[0], 0x40);
    each = (int (*)(CUcontext, CUmodule, void (*)(void *, CUfunction, void *), void *))(
        ((void *const *)t)[7]);
    cr_assert_eq(each(ctx, m, remember, &got), 5, "the number of kernels");
    cr_assert_eq(got.n, 5, "one call back per kernel");
    CU_OK(cuModuleGetFunction(&step, m, "step"));
    for (int i = 0; i < 5; i++)
        found += got.f[i] == step;
    cr_assert_eq(found, 1, "step, as cuModuleGetFunction gives it, came back %d times", found);
}
