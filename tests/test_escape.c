/* Partition escapes: a kernel whose thread-block clusters do not fit the tenant's SM
 * groups runs on the whole device, and the executor counts it in the tenant's slot
 * (`escapes` in status) for policies and operators to see.  On the sim a partition holds
 * clusters of at most 8 blocks (docs/sim-device.md); on a GPU, whether a cluster fits
 * depends on how the driver lays groups over GPCs, so only the launch is checked there. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct ds_test_server srv;

static CUfunction fill_kernel(void)
{
    CUfunction f;

    CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    return f;
}

/* The tenant's object in `detshare-ctl status --json`, in obj. */
static void status_of(const char *name, char *obj, size_t len)
{
    static char out[16384];

    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(ds_test_tenant_json(out, name, obj, len), "%s", out);
}

/* 16 blocks of fill in clusters of `cluster` blocks (0: no cluster attribute). */
static CUresult launch_clustered(CUfunction f, CUdeviceptr d, unsigned cluster)
{
    CUlaunchAttribute attr = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
    CUlaunchConfig cfg = { .gridDimX = 16, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
                           .blockDimY = 1, .blockDimZ = 1, .attrs = &attr,
                           .numAttrs = cluster ? 1 : 0 };
    int v = 1, n = 16 * 32;
    void *params[] = { &d, &v, &n };
    CUresult rc;

    attr.value.clusterDim.x = cluster;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    rc = cuLaunchKernelEx(&cfg, f, params, NULL);
    return rc == CUDA_SUCCESS ? cuCtxSynchronize() : rc;
}

/* The array after `key` in obj (up to its ']'), in out; "" when absent. */
static void array_of(const char *obj, const char *key, char *out, size_t len)
{
    const char *p = strstr(obj, key);
    size_t n;

    out[0] = '\0';
    if (p == NULL)
        return;
    p += strlen(key);
    n = strcspn(p, "]");
    if (n < len)
        snprintf(out, len, "%.*s", (int)n, p);
}

/* Has the tenant moved onto the groups the policy decided for its share?  The sim has 16
 * groups, so a quarter is [0,1,2,3]; a GPU's group count depends on its SMs, so there
 * the tenant is bound once it moved and runs where it was decided. */
static int bound(const char *obj)
{
    char now[128], decided[128];

    if (ds_test_on_sim())
        return strstr(obj, "\"sm_groups\":[0,1,2,3]") != NULL;
    array_of(obj, "\"sm_groups\":[", now, sizeof(now));
    array_of(obj, "\"decided_sm_groups\":[", decided, sizeof(decided));
    return strstr(obj, "\"migrations\":0,") == NULL && now[0] != '\0' &&
           strcmp(now, decided) == 0;
}

/* Launch plain kernels until the tenant runs on the groups its share leaves it. */
static void until_bound(CUfunction f, CUdeviceptr d)
{
    char obj[4096];

    for (int i = 0; i < 200; i++) {
        CU_OK(launch_clustered(f, d, 0));
        status_of("escaper", obj, sizeof(obj));
        if (bound(obj))
            return;
        usleep(10000);
    }
    cr_assert_fail("never bound to its share: %s", obj);
}

Test(escape, a_kernel_whose_clusters_do_not_fit_the_partition_counts_as_an_escape)
{
    char out[512], obj[4096];
    CUdeviceptr d;
    CUfunction f;

    ds_test_server_start(&srv, 0, "--policy shared");
    cr_assert_eq(ds_test_ctl(&srv, "quota escaper sm-share=25", out, sizeof(out)), 0, "%s",
                 out);
    setenv("DETSHARE_TENANT", "escaper", 1);
    ds_test_ctx();
    f = fill_kernel();
    CU_OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    CU_OK(cuMemAlloc(&d, 16 * 32 * sizeof(int)));
    until_bound(f, d);
    status_of("escaper", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"escapes\":0,"), "%s", obj);

    CU_OK(launch_clustered(f, d, 8));
    CU_OK(launch_clustered(f, d, 16));
    CU_OK(launch_clustered(f, d, 16));
    status_of("escaper", obj, sizeof(obj));
    if (ds_test_on_sim()) {
        /* Clusters of 8 fit one group; of 16, no partition on the sim. */
        cr_expect(strstr(obj, "\"escapes\":2,"), "%s", obj);
        cr_expect(strstr(obj, "\"sm_groups\":[0,1,2,3]"), "an escape moves nothing: %s", obj);
    } else {
        cr_log_info("on the GPU: %s", obj);
    }
    CU_OK(cuMemFree(d));
    ds_test_server_stop(&srv);
}

/* The whole device holds any cluster: a tenant on every SM never escapes. */
Test(escape, on_the_whole_device_nothing_escapes)
{
    char obj[4096];
    CUdeviceptr d;
    CUfunction f;

    ds_test_server_start(&srv, 0, "--policy shared");
    setenv("DETSHARE_TENANT", "escaper", 1);
    ds_test_ctx();
    f = fill_kernel();
    CU_OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    CU_OK(cuMemAlloc(&d, 16 * 32 * sizeof(int)));
    CU_OK(launch_clustered(f, d, 16));
    status_of("escaper", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"escapes\":0,"), "%s", obj);
    CU_OK(cuMemFree(d));
    ds_test_server_stop(&srv);
}
