/* The host memory an executor holds for a tenant's pending calls is bounded: a record
 * larger than the tenant's share (--tenant-host-memory) or than what is left of all
 * executors' (--host-memory) is refused with CUDA_ERROR_OUT_OF_MEMORY before it is held,
 * with a log line naming the tenant; the tenant's connection goes on, and status and
 * metrics show what is held. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1ull << 20)

static struct ds_test_server srv;

static void stop(void)
{
    ds_test_server_stop(&srv);
}

/* Load a valid module image of `size` bytes (sent whole, over the socket). */
static CUresult load_of_size(size_t size, CUmodule *m)
{
    void *img = ds_test_padded_cubin(DS_KERNEL_DIR "/launch.cubin", size);
    CUresult rc;

    cr_assert_not_null(img);
    rc = cuModuleLoadData(m, img);
    free(img);
    return rc;
}

/* A 100 MiB image is refused, the connection goes on, and a 32 MiB one loads. */
static void refused_then_served(const char *name)
{
    char out[16384], obj[2048], want[160];
    CUfunction f;
    CUmodule m;

    setenv("DETSHARE_TENANT", name, 1);
    ds_test_ctx();
    CU_IS(load_of_size(100 * MiB, &m), CUDA_ERROR_OUT_OF_MEMORY);
    snprintf(want, sizeof(want), "more bytes of host memory for tenant %s (pid %d", name,
             (int)getpid());
    cr_expect(ds_test_log_has(&srv, want), "expected \"%s\" in the log", want);
    CU_OK(load_of_size(32 * MiB, &m));
    CU_OK(cuModuleGetFunction(&f, m, "fill"));
    CU_OK(cuModuleUnload(m));
    cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, name, obj, sizeof(obj));
    cr_expect(strstr(obj, "\"host_bytes\":0"), "nothing held once served: %s", obj);
}

TestSuite(host_bound, .fini = stop, .timeout = 120);

Test(host_bound, a_record_past_the_tenants_share_is_refused)
{
    ds_test_server_start(&srv, 0, "--tenant-host-memory 64MiB");
    refused_then_served("imager");
    cr_expect(ds_test_log_has(&srv, "limit of 67108864 per tenant"));
}

Test(host_bound, a_record_past_what_all_executors_may_hold_is_refused)
{
    ds_test_server_start(&srv, 0, "--tenant-host-memory none --host-memory 48MiB");
    refused_then_served("imager-2");
    cr_expect(ds_test_log_has(&srv, "or 50331648 for all"));
}

Test(host_bound_args, a_bad_limit_refuses_to_start_and_says_why)
{
    char cmd[256], out[4096];
    size_t n;
    FILE *p;
    int status;

    snprintf(cmd, sizeof(cmd), "%s --device sim --tenant-host-memory lots 2>&1", DS_SERVER_BIN);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    status = pclose(p);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status 0x%x: %s", status, out);
    cr_expect(strstr(out, "--tenant-host-memory takes a size (1GiB, 512MiB) or none"), "%s", out);
}
