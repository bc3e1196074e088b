/* Initialisation, device queries, error names and entry-point lookup. */
#include "ds_test.h"

#include <cudaProfiler.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(device, .init = start, .fini = stop);

Test(device, calls_before_init_are_refused)
{
    int n;
    CUdeviceptr p;

    CU_IS(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CU_IS(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    CU_IS(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

/* cudaProfilerStart/Stop reach these; no profiler of the tenant's sees the executor, so
 * they do what the driver does without one. */
Test(device, profiler_start_and_stop_exist_and_succeed)
{
    void *lib = dlopen(DS_CLIENT_LIB, RTLD_NOW | RTLD_NOLOAD);

    cr_assert_not_null(lib);
    cr_assert_not_null(dlsym(lib, "cuProfilerStart"));
    cr_assert_not_null(dlsym(lib, "cuProfilerStop"));
    CU_IS(cuProfilerStart(), CUDA_ERROR_NOT_INITIALIZED);
    ds_test_ctx();
    CU_OK(cuProfilerStart());
    CU_OK(cuProfilerStop());
    dlclose(lib);
}

/* What JAX asks to enumerate devices: the bus id is the device's own, and names it. */
Test(device, pci_bus_id_names_the_device)
{
    char id[32], bad[32];
    int bus, domain, slot;
    CUdevice dev = 7;

    ds_test_ctx();
    CU_OK(cuDeviceGetPCIBusId(id, sizeof(id), 0));
    CU_OK(cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0));
    CU_OK(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0));
    CU_OK(cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0));
    snprintf(bad, sizeof(bad), "%04X:%02X:%02X.0", domain, bus, slot);
    cr_assert_str_eq(id, bad);
    CU_OK(cuDeviceGetByPCIBusId(&dev, id));
    cr_assert_eq(dev, 0);
    snprintf(bad, sizeof(bad), "%04x:%02x:%02x.0", domain, bus + 1, slot);
    CU_IS(cuDeviceGetByPCIBusId(&dev, bad), CUDA_ERROR_INVALID_DEVICE);
    CU_IS(cuDeviceGetPCIBusId(id, sizeof(id), 1), CUDA_ERROR_INVALID_DEVICE);
}

Test(device, queries_describe_the_sim_device)
{
    char name[256];
    int n, v, major, minor, sms;
    size_t total;
    CUdevice dev;
    CUuuid u1, u2;

    CU_OK(cuInit(0));
    CU_OK(cuInit(0));
    CU_OK(cuDriverGetVersion(&v));
    cr_assert_geq(v, 13000);
    CU_OK(cuDeviceGetCount(&n));
    cr_assert_eq(n, 1);
    CU_OK(cuDeviceGet(&dev, 0));
    CU_IS(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuDeviceGetName(name, sizeof(name), dev));
    CU_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    cr_assert_gt(sms, 0);
    CU_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CU_OK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    cr_assert_eq(major * 10 + minor, 90);
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
    cr_assert_eq(v, 32);
    CU_IS(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, dev), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuDeviceGetAttribute(&v, (CUdevice_attribute)-3, dev), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuDeviceTotalMem(&total, dev));
    if (ds_test_on_sim()) {
        cr_assert(strstr(name, "sim") != NULL, "%s", name);
        cr_assert_eq(sms, 132);
        cr_assert_eq(total, 80ull << 30);
    }
    CU_OK(cuDeviceGetUuid(&u1, dev));
    CU_OK(cuDeviceGetUuid(&u2, dev));
    cr_assert_arr_eq(u1.bytes, u2.bytes, 16);
}

static void start_small(void)
{
    ds_test_server_start(&srv, 0, "--sim-sms 48 --sim-memory 2G");
}

Test(device_options, sim_shape_follows_server_options, .init = start_small, .fini = stop)
{
    int sms;
    size_t total;

    DS_SIM_ONLY();
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CU_OK(cuDeviceTotalMem(&total, 0));
    cr_assert_eq(sms, 48);
    cr_assert_eq(total, 2ull << 30);
}

Test(device, error_names_and_strings)
{
    const char *s;

    CU_OK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
    cr_assert_str_eq(s, "CUDA_ERROR_INVALID_VALUE");
    CU_OK(cuGetErrorName(CUDA_ERROR_NOT_SUPPORTED, &s));
    cr_assert_str_eq(s, "CUDA_ERROR_NOT_SUPPORTED");
    CU_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    cr_assert(strlen(s) > 10);
    CU_IS(cuGetErrorName((CUresult)123456, &s), CUDA_ERROR_INVALID_VALUE);
}

/* Every entry point in client/compat/entry_points.h, checked against the exported symbol. */
#include "../client/compat/entry_points.h"

Test(device, proc_address_matches_every_export)
{
    void *lib = dlopen(DS_CLIENT_LIB, RTLD_NOW | RTLD_NOLOAD);
    CUdriverProcAddressQueryResult st;
    void *fn;

    cr_assert_not_null(lib, "%s", dlerror());
#define CHECK_EP(base, ver, sym)                                                       \
    CU_OK(cuGetProcAddress_v2(#base, &fn, 13000 > (ver) ? (ver) : 13000, 0, &st));     \
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);                                      \
    cr_assert_eq(fn, dlsym(lib, #sym), "%s %d is not %s", #base, ver, #sym);
    DS_ENTRY_POINTS(CHECK_EP)
    dlclose(lib);
}

Test(device, proc_address_follows_versions)
{
    CUdriverProcAddressQueryResult st;
    void *fn, *lib = dlopen(DS_CLIENT_LIB, RTLD_NOW | RTLD_NOLOAD);

    CU_OK(cuGetProcAddress_v2("cuMemAlloc", &fn, 13000, 0, &st));
    cr_assert_eq(fn, dlsym(lib, "cuMemAlloc_v2"));
    CU_OK(cuGetProcAddress_v2("cuEventElapsedTime", &fn, 12000, 0, &st));
    cr_assert_eq(fn, dlsym(lib, "cuEventElapsedTime"));
    CU_OK(cuGetProcAddress_v2("cuEventElapsedTime", &fn, 12080, 2, &st));
    cr_assert_eq(fn, dlsym(lib, "cuEventElapsedTime_v2"));
    CU_IS(cuGetProcAddress_v2("cuMemAlloc", &fn, 3000, 0, &st), CUDA_ERROR_NOT_FOUND);
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CU_IS(cuGetProcAddress_v2("cuNoSuchThing", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    cr_assert_null(fn);
    CU_IS(cuGetProcAddress_v2("cuInit", &fn, 13000, 64, &st), CUDA_ERROR_INVALID_VALUE);
    dlclose(lib);
}

Test(device, unimplemented_entry_points_say_so)
{
    void *lib = dlopen(DS_CLIENT_LIB, RTLD_NOW | RTLD_NOLOAD);
    CUresult (*fn)(void);

    cr_assert_not_null(lib);
    /* A real export (frameworks dlsym such names), answering NOT_SUPPORTED. */
    fn = (CUresult(*)(void))dlsym(lib, "cuGraphAddExternalSemaphoresSignalNode");
    cr_assert_not_null(fn);
    CU_OK(cuInit(0));
    CU_IS(fn(), CUDA_ERROR_NOT_SUPPORTED);
    CU_IS(fn(), CUDA_ERROR_NOT_SUPPORTED);
    dlclose(lib);
}

Test(device_alone, no_server_means_no_device)
{
    setenv("DETSHARE_SERVER", "unix:/nonexistent/detshare.sock", 1);
    CU_IS(cuInit(0), CUDA_ERROR_NO_DEVICE);
    setenv("DETSHARE_SERVER", "bogus", 1);
    CU_IS(cuInit(0), CUDA_ERROR_NO_DEVICE);
}

Test(device, example_tenant_runs)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "%s > /dev/null", DS_EXAMPLE_BIN);
    cr_assert_eq(system(cmd), 0);
}
