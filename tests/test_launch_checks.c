/* A launch's synchronous errors: a launch the driver refuses before it returns is
 * refused by the launch itself, not by whatever call next waits for the executor.  The
 * cases (support/launch_cases.c) run on kernels compiled with limits of their own
 * (kernels/limits.cu); on the sim each result is checked against the driver's, as
 * written here, and on a GPU the whole list is compared with the real driver's, asked
 * natively in the same test (native_launch_checks). */
#include "ds_test.h"

#include "launch_cases.h"

#include <stdio.h>
#include <string.h>

#define FATBIN DS_KERNEL_DIR "/limits.fatbin"

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

TestSuite(launch_checks, .init = start, .fini = stop, .timeout = 120);

struct expect {
    const char *name;
    long long value;
};

/* The driver's results; the attribute values are an H100's, which the sim models. */
static const struct expect expected[] = {
    { "block_ok_1024", CUDA_SUCCESS },
    { "block_zero", CUDA_ERROR_INVALID_VALUE },
    { "block_x_over", CUDA_ERROR_INVALID_VALUE },
    { "block_z_over", CUDA_ERROR_INVALID_VALUE },
    { "block_product_over", CUDA_ERROR_INVALID_VALUE },
    { "bounded_max_threads", 256 },
    { "bounded_at_limit", CUDA_SUCCESS },
    { "bounded_over", CUDA_ERROR_INVALID_VALUE },
    { "heavy_max_threads", 512 },
    { "heavy_at_limit", CUDA_SUCCESS },
    { "heavy_over", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES },
    { "grid_zero", CUDA_ERROR_INVALID_VALUE },
    { "grid_x_over", CUDA_ERROR_INVALID_VALUE },
    { "grid_y_over", CUDA_ERROR_INVALID_VALUE },
    { "smem_default", 49152 },
    { "smem_at_default", CUDA_SUCCESS },
    { "smem_over_default", CUDA_ERROR_INVALID_VALUE },
    { "smem_opt_in", CUDA_SUCCESS },
    { "smem_at_opt_in", CUDA_SUCCESS },
    { "smem_over_opt_in", CUDA_ERROR_INVALID_VALUE },
    { "smem_opt_out", CUDA_SUCCESS },
    { "smem_over_opt_out", CUDA_ERROR_INVALID_VALUE },
    { "static_at_left", CUDA_SUCCESS },
    { "static_over_left", CUDA_ERROR_INVALID_VALUE },
    { "cluster_ok", CUDA_SUCCESS },
    { "cluster_not_dividing", CUDA_ERROR_INVALID_CLUSTER_SIZE },
    { "cluster_over_portable", CUDA_ERROR_INVALID_CLUSTER_SIZE },
    { "cluster_non_portable", CUDA_SUCCESS },
    { "cluster_non_portable_ok", CUDA_SUCCESS },
    { "cluster_over_non_portable", CUDA_ERROR_INVALID_CLUSTER_SIZE },
    { "compiled_cluster_ok", CUDA_SUCCESS },
    { "compiled_cluster_not_dividing", CUDA_ERROR_INVALID_CLUSTER_SIZE },
    { "compiled_cluster_same", CUDA_SUCCESS },
    { "compiled_cluster_other", CUDA_ERROR_INVALID_CLUSTER_SIZE },
    { "extra_ok", CUDA_SUCCESS },
    { "extra_too_small", CUDA_SUCCESS },
    { "no_params", CUDA_ERROR_INVALID_VALUE },
    { "params_and_extra", CUDA_ERROR_INVALID_VALUE },
    { "null_function", CUDA_ERROR_INVALID_HANDLE },
    { "no_context", CUDA_ERROR_INVALID_CONTEXT },
    /* nothing refused comes back later */
    { "sync", CUDA_SUCCESS },
};

/* The value the cases gave `name`; fails the test when there is no such line. */
static long long result(const char *out, const char *name)
{
    size_t n = strlen(name);
    const char *p = out;
    long long v;

    while (p != NULL) {
        if (strncmp(p, name, n) == 0 && p[n] == ' ' && sscanf(p + n, "%lld", &v) == 1)
            return v;
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    cr_assert_fail("no result for %s in:\n%s", name, out);
    return -1;
}

/* On the sim: every launch gets the driver's result from the launch itself. */
Test(launch_checks, each_launch_returns_the_drivers_error)
{
    static char out[8192];

    DS_SIM_ONLY();
    cr_assert_eq(ds_launch_cases(FATBIN, out, sizeof(out)), 0, "%s", out);
    for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
        long long got = result(out, expected[i].name);

        cr_expect_eq(got, expected[i].value, "%s: %lld, the driver's %lld", expected[i].name,
                     got, expected[i].value);
    }
}

/* A launch refused by the client reaches no one: the stream it named stays usable and
 * the next synchronising call reports nothing. */
Test(launch_checks, a_refused_launch_leaves_nothing_behind)
{
    CUmodule m;
    CUfunction f;
    CUdeviceptr buf;
    CUstream s;
    void *params[] = { &buf };

    CU_OK(cuModuleLoad(&m, FATBIN));
    CU_OK(cuModuleGetFunction(&f, m, "bounded"));
    CU_OK(cuMemAlloc(&buf, 4096));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_IS(cuLaunchKernel(f, 1, 1, 1, 512, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyHtoD(buf, &buf, sizeof(buf)));
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params, NULL));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(buf));
    CU_OK(cuModuleUnload(m));
}

/* On a GPU: every result equals the real driver's, asked natively. */
Test(launch_checks, results_equal_the_native_drivers)
{
    static char mine[8192], native[8192];
    size_t n;
    FILE *p;

    if (ds_test_on_sim())
        cr_skip_test("compares with the real driver");
    cr_assert_eq(ds_launch_cases(FATBIN, mine, sizeof(mine)), 0, "%s", mine);
    p = popen("env -u LD_LIBRARY_PATH -u LD_PRELOAD " DS_NATIVE_LAUNCH_CHECKS " " FATBIN, "r");
    cr_assert_not_null(p);
    n = fread(native, 1, sizeof(native) - 1, p);
    native[n] = '\0';
    cr_assert_eq(pclose(p), 0, "native_launch_checks failed: %s", native);
    cr_assert_str_eq(mine, native);
}
