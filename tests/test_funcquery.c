/* What function and kernel handles say about themselves: name, module or library,
 * loading state; and INVALID_HANDLE once their module is gone. */
#include "ds_test.h"

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

TestSuite(funcquery, .init = start, .fini = stop);

Test(funcquery, functions_know_their_name_and_module)
{
    CUmodule m = ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), got;
    CUfunctionLoadingState st = CU_FUNCTION_LOADING_STATE_MAX;
    CUfunction f, g;
    const char *name = NULL;

    CU_OK(cuModuleGetFunction(&f, m, "fill"));
    CU_OK(cuModuleGetFunction(&g, m, "spin"));
    CU_OK(cuFuncGetName(&name, f));
    cr_assert_str_eq(name, "fill");
    CU_OK(cuFuncGetName(&name, g));
    cr_assert_str_eq(name, "spin");
    CU_OK(cuFuncGetModule(&got, f));
    cr_assert_eq(got, m);
    CU_OK(cuFuncIsLoaded(&st, f));
    cr_assert_eq(st, CU_FUNCTION_LOADING_STATE_LOADED);
    CU_OK(cuFuncLoad(f));
    CU_IS(cuFuncGetName(NULL, f), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuFuncGetModule(NULL, f), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuModuleUnload(m));
    CU_IS(cuFuncGetName(&name, f), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuFuncGetModule(&got, f), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuFuncIsLoaded(&st, f), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuFuncLoad(f), CUDA_ERROR_INVALID_HANDLE);
}

Test(funcquery, kernels_know_their_name_and_library)
{
    CUlibrary lib, got;
    CUkernel k;
    const char *name = NULL;

    CU_OK(cuLibraryLoadFromFile(&lib, DS_KERNEL_DIR "/launch.fatbin", NULL, NULL, 0, NULL,
                                NULL, 0));
    CU_OK(cuLibraryGetKernel(&k, lib, "step"));
    CU_OK(cuKernelGetName(&name, k));
    cr_assert_str_eq(name, "step");
    CU_OK(cuKernelGetLibrary(&got, k));
    cr_assert_eq(got, lib);
    CU_IS(cuKernelGetName(&name, NULL), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuLibraryUnload(lib));
    CU_IS(cuKernelGetLibrary(&got, k), CUDA_ERROR_INVALID_HANDLE);
}

/* The largest cluster a launch could have: on the sim an H100's 8 blocks, 16 once the
 * kernel allows non-portable sizes; on a GPU what its driver says, never less for the
 * opt-in. */
Test(funcquery, potential_cluster_size)
{
    CUlaunchConfig cfg = { .gridDimX = 64, .gridDimY = 1, .gridDimZ = 1,
                           .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1 };
    int portable = -1, wide = -1;
    CUfunction f;

    CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuOccupancyMaxPotentialClusterSize(&portable, f, &cfg));
    CU_OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    CU_OK(cuOccupancyMaxPotentialClusterSize(&wide, f, &cfg));
    cr_assert_geq(portable, 1);
    cr_assert_geq(wide, portable);
    if (ds_test_on_sim()) {
        cr_assert_eq(portable, 8);
        cr_assert_eq(wide, 16);
    }
    CU_IS(cuOccupancyMaxPotentialClusterSize(NULL, f, &cfg), CUDA_ERROR_INVALID_VALUE);
    /* A block no SM can hold is an answer, not an error, for the driver (H100, run 80). */
    cfg.blockDimX = 2048;
    CU_OK(cuOccupancyMaxPotentialClusterSize(&portable, f, &cfg));
    if (ds_test_on_sim())
        cr_assert_eq(portable, 0);
}
