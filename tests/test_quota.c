/* Quotas by tenant name: a tenant over its memory quota gets CUDA_ERROR_OUT_OF_MEMORY and
 * nobody else notices; its device view and cuMemGetInfo show the quota; VMM allocations
 * count; rules come from detshare-ctl at run time and from the config file at start and
 * on SIGHUP (which also reads the token file again); an SM share caps what any policy
 * gives; a tenant's exit releases what it held. */
#include "ds_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1ull << 20)

static struct ds_test_server srv;
static char dir[64], config[128];

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* A server whose config file holds `rules`, with more arguments `args`. */
static void start_with(const char *rules, int with_tcp, const char *args)
{
    char all[512];

    snprintf(dir, sizeof(dir), "/tmp/dsquota.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(config, sizeof(config), "%s/detshare.conf", dir);
    write_file(config, rules);
    snprintf(all, sizeof(all), "--config %s %s", config, args ? args : "");
    ds_test_server_start(&srv, with_tcp, all);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

static int ctl(const char *args, char *out, size_t len)
{
    return ds_test_ctl(&srv, args, out, len);
}

static void wait_log_count(const char *needle, int n)
{
    for (int i = 0; i < 500 && ds_test_log_count(&srv, needle) < n; i++)
        usleep(10000);
    cr_assert_geq(ds_test_log_count(&srv, needle), n, "the server never logged \"%s\" %d times",
                  needle, n);
}

static void hangup(void)
{
    static int sent;

    cr_assert_eq(kill(srv.pid, SIGHUP), 0);
    wait_log_count("SIGHUP handled", ++sent);
}

/* Connect as tenant `name`. */
static void connect_as(const char *name)
{
    setenv("DETSHARE_TENANT", name, 1);
    ds_test_ctx();
}

static size_t total_mem(void)
{
    size_t total = 0;

    CU_OK(cuDeviceTotalMem(&total, 0));
    return total;
}

/* A peer that allocates 64 MiB, unhindered by anyone else's quota. */
static int roomy(void *arg)
{
    CUdeviceptr d;
    size_t free_b, total;

    (void)arg;
    setenv("DETSHARE_TENANT", "roomy", 1);
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 64 * MiB) != CUDA_SUCCESS ||
        cuMemGetInfo(&free_b, &total) != CUDA_SUCCESS)
        return 1;
    return total > 64 * MiB && cuMemFree(d) == CUDA_SUCCESS ? 0 : 2;
}

TestSuite(quota, .fini = stop, .timeout = 120);

Test(quota, over_its_quota_a_tenant_alone_is_refused_and_sees_its_quota)
{
    struct ds_test_peer peer;
    CUdeviceptr a, b;
    size_t free_b, total;

    start_with("# test quotas\nquota small memory=4MiB   # a small one\n", 0, NULL);
    ds_test_peer_fork(&peer, roomy, NULL);
    connect_as("small");
    cr_assert_eq(total_mem(), 4 * MiB, "the device view shows the quota");
    CU_OK(cuMemGetInfo(&free_b, &total));
    cr_expect_eq(total, 4 * MiB);
    cr_expect_eq(free_b, 4 * MiB);

    CU_OK(cuMemAlloc(&a, 3 * MiB));
    CU_OK(cuMemGetInfo(&free_b, &total));
    cr_expect_eq(free_b, 1 * MiB, "free = quota - used");
    CU_IS(cuMemAlloc(&b, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    cr_expect(ds_test_log_has(&srv, "[small] info: over its memory quota: 2097152 bytes"));
    /* Someone else's allocations go on as before, while this tenant is at its limit. */
    ds_test_peer_join(&peer);
    /* The refusal changed nothing: what is left can still be had, and freeing returns
     * room. */
    CU_OK(cuMemAlloc(&b, 1 * MiB));
    CU_IS(cuMemAlloc(&b, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemFree(a));
    CU_OK(cuMemGetInfo(&free_b, &total));
    cr_expect_eq(free_b, 3 * MiB);
    CU_OK(cuMemAlloc(&a, 2 * MiB));
    ds_test_peer_leave(&peer);
}

static CUmemAllocationProp device_prop(void)
{
    CUmemAllocationProp p;

    memset(&p, 0, sizeof(p));
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    return p;
}

Test(quota, vmm_allocations_count_against_the_quota)
{
    CUmemAllocationProp p = device_prop();
    CUmemGenericAllocationHandle h1, h2, h3;
    char out[16384], obj[2048], want[128];
    CUdeviceptr d;
    size_t g = 0;

    start_with("quota vmm-* memory=8MiB\n", 0, NULL);
    connect_as("vmm-1");
    CU_OK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    cr_assert(g > 0 && 8 * MiB % g == 0 && g <= 2 * MiB, "granularity %zu", g);
    CU_OK(cuMemCreate(&h1, 4 * MiB, &p, 0));
    CU_OK(cuMemCreate(&h2, 4 * MiB - g, &p, 0));
    CU_IS(cuMemCreate(&h3, 2 * g, &p, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CU_IS(cuMemAlloc(&d, g + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemAlloc(&d, g));

    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "vmm-1", obj, sizeof(obj));
    snprintf(want, sizeof(want), "\"memory_used\":%llu,", 8 * MiB);
    cr_expect(strstr(obj, want), "expected %s in %s", want, obj);
    snprintf(want, sizeof(want), "\"memory\":{\"device\":%zu,\"vmm\":%llu", g, 8 * MiB - g);
    cr_expect(strstr(out, want), "expected %s in %s", want, out);
    snprintf(want, sizeof(want), "\"memory_quota\":%llu", 8 * MiB);
    cr_expect(strstr(out, want), "expected %s in %s", want, out);

    CU_OK(cuMemRelease(h1));
    CU_OK(cuMemCreate(&h3, 2 * g, &p, 0));
    CU_OK(cuMemRelease(h3));
    CU_OK(cuMemRelease(h2));
    CU_OK(cuMemFree(d));
}

struct expected {
    const char *name;
    size_t total;
};

static int expect_total(void *arg)
{
    const struct expected *e = arg;
    size_t total = 0;
    CUdeviceptr d;

    setenv("DETSHARE_TENANT", e->name, 1);
    if (ds_test_connect() != CUDA_SUCCESS || cuDeviceTotalMem(&total, 0) != CUDA_SUCCESS)
        return 1;
    if (total != e->total)
        return 2;
    /* Over it by one byte. */
    return cuMemAlloc(&d, e->total + 1) == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 3;
}

/* A tenant called `name` connects, sees `want` bytes of device and is held to them.
 * Only while this process has not connected (ds_test_peer_fork). */
static void tenant_sees(const char *name, size_t want)
{
    struct expected e = { name, want };
    struct ds_test_peer peer;

    ds_test_peer_fork(&peer, expect_total, &e);
    ds_test_peer_join(&peer);
    ds_test_peer_leave(&peer);
}

Test(quota, detshare_ctl_sets_quotas_for_tenants_connecting_later_and_lists_them)
{
    char out[4096];
    CUdeviceptr d;

    start_with("", 0, NULL);
    cr_assert_eq(ctl("quota", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "quotas: 0"), "%s", out);
    cr_assert_eq(ctl("quota late-* memory=8MiB", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "late-*: memory 8 MiB, sm-share no limit"), "%s", out);
    cr_assert_eq(ctl("quota late-2 memory=16777216 sm-share=50", out, sizeof(out)), 0, "%s", out);
    cr_assert_eq(ctl("quota", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "quotas: 2"), "%s", out);
    cr_expect(strstr(out, "late-2: memory 16 MiB, sm-share 50%"), "%s", out);

    tenant_sees("late-1", 8 * MiB);
    tenant_sees("late-2", 16 * MiB); /* the exact name is more specific */

    /* A connected tenant's view stays; its enforcement follows a new limit. */
    connect_as("late-3");
    cr_assert_eq(total_mem(), 8 * MiB);
    cr_assert_eq(ctl("quota late-* memory=2MiB", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "tenants under it now: 1"), "%s", out);
    CU_IS(cuMemAlloc(&d, 3 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    cr_expect_eq(total_mem(), 8 * MiB);
    cr_assert_eq(ctl("quota late-* memory=none", out, sizeof(out)), 0, "%s", out);
    CU_OK(cuMemAlloc(&d, 12 * MiB));
    cr_assert_eq(ctl("quota", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "quotas: 1") && !strstr(out, "late-*"), "a rule without limits goes: %s",
              out);

    cr_expect_neq(ctl("quota late-* memory=lots", out, sizeof(out)), 0, "%s", out);
    cr_expect_neq(ctl("quota late-* sm-share=101", out, sizeof(out)), 0, "%s", out);
    cr_expect_neq(ctl("quota la*te memory=1MiB", out, sizeof(out)), 0, "%s", out);
    cr_expect_neq(ctl("quota late-4", out, sizeof(out)), 0, "%s", out);
}

Test(quota, the_config_file_is_read_at_start_and_on_sighup_and_a_bad_one_changes_nothing)
{
    char bad[256];

    start_with("quota cfg memory=4MiB\n", 0, NULL);
    tenant_sees("cfg", 4 * MiB);

    write_file(config, "\n# bigger now\nquota cfg memory=16MiB sm-share=100\n");
    hangup();
    cr_expect(ds_test_log_has(&srv, "SIGHUP: 1 quota(s) from"));
    tenant_sees("cfg", 16 * MiB);

    write_file(config, "quota cfg memory=8MiB\nquota cfg2 memory=lots\nfrobnicate\n");
    hangup();
    snprintf(bad, sizeof(bad), "%s:2: memory=lots:", config);
    cr_expect(ds_test_log_has(&srv, bad), "no line saying %s", bad);
    snprintf(bad, sizeof(bad), "%s:3: unknown directive frobnicate", config);
    cr_expect(ds_test_log_has(&srv, bad), "no line saying %s", bad);
    cr_expect(ds_test_log_has(&srv, "the 1 quota(s) in force stay"));
    tenant_sees("cfg", 16 * MiB);
}

Test(quota, a_bad_config_file_refuses_to_start)
{
    char cmd[512], out[4096], expect[256];
    FILE *p;
    size_t n;
    int status;

    snprintf(dir, sizeof(dir), "/tmp/dsquota.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(config, sizeof(config), "%s/detshare.conf", dir);
    write_file(config, "quota ok memory=1GiB\n\nquota train-* sm-share=0\n");
    snprintf(cmd, sizeof(cmd), "%s --device sim --mps off --listen unix:%s/s.sock --config %s 2>&1",
             DS_SERVER_BIN, dir, config);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    status = pclose(p);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status 0x%x: %s", status, out);
    snprintf(expect, sizeof(expect), "%s:3: sm-share=0:", config);
    cr_expect(strstr(out, expect), "expected %s in %s", expect, out);
    cr_expect(strstr(out, "not starting"), "%s", out);
}

/* A TCP tenant showing `token`, in a child process: what its connection returned. */
static CUresult tcp_tenant(const char *token)
{
    int status;
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
        setenv("DETSHARE_TOKEN", token, 1);
        setenv("DETSHARE_TENANT", "remote", 1);
        _exit((int)ds_test_connect() & 0xff);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "status 0x%x", status);
    return (CUresult)WEXITSTATUS(status);
}

Test(quota, sighup_reads_the_token_file_again)
{
    char tokens[160], args[256];

    snprintf(dir, sizeof(dir), "/tmp/dsquota.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(tokens, sizeof(tokens), "%s/tokens", dir);
    write_file(tokens, "tok-old\n");
    snprintf(args, sizeof(args), "--token-file %s", tokens);
    ds_test_server_start(&srv, 1, args);

    cr_assert_eq(tcp_tenant("tok-old"), CUDA_SUCCESS);
    cr_assert_eq(tcp_tenant("tok-new"), CUDA_ERROR_NO_DEVICE);
    write_file(tokens, "tok-new\n");
    hangup();
    cr_expect_eq(tcp_tenant("tok-new"), CUDA_SUCCESS);
    cr_expect_eq(tcp_tenant("tok-old"), CUDA_ERROR_NO_DEVICE);
    /* A token file that no longer reads keeps the tokens in force. */
    write_file(tokens, "# nothing\n");
    hangup();
    cr_expect(ds_test_log_has(&srv, "SIGHUP: the tokens in force stay"));
    cr_expect_eq(tcp_tenant("tok-new"), CUDA_SUCCESS);
}

static CUfunction fill_kernel(void)
{
    CUfunction f;

    CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    return f;
}

/* Launch until the server has bound this tenant where the policy and its share say. */
static void launch_until(CUfunction f, CUdeviceptr d, const char *status_part)
{
    char out[16384], obj[2048];
    int v = 1, n = 1;
    void *params[] = { &d, &v, &n };

    for (int i = 0; i < 200; i++) {
        CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
        CU_OK(cuCtxSynchronize());
        cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
        ds_test_tenant_json(out, "capped", obj, sizeof(obj));
        if (strstr(obj, status_part))
            return;
        usleep(10000);
    }
    cr_assert_fail("never %s: %s", status_part, obj);
}

static int other(void *arg)
{
    (void)arg;
    setenv("DETSHARE_TENANT", "other", 1);
    return ds_test_connect() == CUDA_SUCCESS ? 0 : 1;
}

Test(quota, an_sm_share_caps_the_groups_of_every_policy)
{
    struct ds_test_peer peer;
    char out[16384], obj[2048];
    CUdeviceptr d;
    CUfunction f;

    DS_SIM_ONLY(); /* the sim's 16 groups of 8 SMs */
    start_with("quota capped sm-share=25\n", 0, "--policy shared");
    ds_test_peer_fork(&peer, other, NULL);
    connect_as("capped");
    f = fill_kernel();
    CU_OK(cuMemAlloc(&d, 4096));
    ds_test_peer_join(&peer);
    /* shared gives everyone the whole device: a quarter of the groups for this one. */
    launch_until(f, d, "\"sms\":32,\"sm_groups\":[0,1,2,3]");
    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "other", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"sms\":132"), "%s", obj);
    cr_expect(strstr(out, "\"sm_share\":25"), "%s", out);
    cr_expect(ds_test_log_has(&srv, "(held to its sm-share)"));

    /* static gives it half, groups 0-7: held to 4 of them. */
    cr_assert_eq(ctl("policy static", out, sizeof(out)), 0, "%s", out);
    launch_until(f, d, "\"sms\":32,\"sm_groups\":[0,1,2,3]");
    cr_assert_eq(ctl("quota capped sm-share=50", out, sizeof(out)), 0, "%s", out);
    launch_until(f, d, "\"sms\":64,\"sm_groups\":[0,1,2,3,4,5,6,7]");
    /* Without a share it gets what the policy gives it again. */
    cr_assert_eq(ctl("policy shared", out, sizeof(out)), 0, "%s", out);
    cr_assert_eq(ctl("quota capped sm-share=none", out, sizeof(out)), 0, "%s", out);
    launch_until(f, d, "\"sms\":132");
    CU_OK(cuMemFree(d));
    ds_test_peer_leave(&peer);
}

/* A peer that takes 3 MiB and never frees it. */
static int hoard(void *arg)
{
    CUdeviceptr d;

    (void)arg;
    setenv("DETSHARE_TENANT", "hoard", 1);
    return ds_test_connect() == CUDA_SUCCESS && cuMemAlloc(&d, 3 * MiB) == CUDA_SUCCESS ? 0 : 1;
}

Test(quota, a_tenants_exit_releases_what_it_held)
{
    struct expected e = { "hoard", 4 * MiB };
    struct ds_test_peer peer, again;
    char out[16384], obj[2048], want[64];
    size_t free_before, free_during, free_after, total;
    int status;

    start_with("quota hoard memory=4MiB\n", 0, "--sim-memory 64MiB");
    /* In this order: hoard holds copies of again's pipes, and is gone before again
     * runs. */
    ds_test_peer_fork(&again, expect_total, &e);
    ds_test_peer_fork(&peer, hoard, NULL);
    connect_as("watcher");
    CU_OK(cuMemGetInfo(&free_before, &total));
    ds_test_peer_join(&peer);
    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "hoard", obj, sizeof(obj));
    snprintf(want, sizeof(want), "\"memory_used\":%llu,", 3 * MiB);
    cr_expect(strstr(obj, want), "expected %s in %s", want, obj);
    CU_OK(cuMemGetInfo(&free_during, &total));
    if (ds_test_on_sim())
        cr_expect_eq(free_during, free_before - 3 * MiB, "the device's free memory is shared");

    kill(peer.pid, SIGKILL);
    cr_assert_eq(waitpid(peer.pid, &status, 0), peer.pid);
    wait_log_count("(hoard) left", 1);
    CU_OK(cuMemGetInfo(&free_after, &total));
    if (ds_test_on_sim())
        cr_expect_eq(free_after, free_before);
    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    cr_expect_null(strstr(out, "\"hoard\""), "%s", out);
    /* Its name starts afresh, with the whole quota. */
    ds_test_peer_join(&again);
    ds_test_peer_leave(&again);
}

Test(quota, a_quota_larger_than_the_device_shows_the_device)
{
    DS_SIM_ONLY(); /* the sim's memory is the server's setting */
    start_with("quota big memory=1GiB\n", 0, "--sim-memory 64MiB");
    tenant_sees("big", 64 * MiB);
}

static int connect_and_stay_as(void *name)
{
    setenv("DETSHARE_TENANT", name, 1);
    return ds_test_connect() == CUDA_SUCCESS ? 0 : 1;
}

/* The class is the tenant's own word unless a rule sets it: a tenant of a class=best-effort
 * rule that claims latency is best-effort, at its hello and, when the rule comes later,
 * from then on; class=claimed gives the claim back to tenants that connect later. */
Test(quota, a_rule_sets_the_class_whatever_the_tenant_claims)
{
    struct ds_test_peer peer;
    char out[16384], obj[2048];

    start_with("quota pushy class=best-effort\n", 0, NULL);
    setenv("DETSHARE_CLASS", "latency", 1);
    ds_test_peer_fork(&peer, connect_and_stay_as, "later");
    connect_as("pushy");
    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "pushy", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"class\":\"best-effort\""), "%s", obj);
    cr_expect(ds_test_log_has(&srv, "(its quota rule's class, not the one it claimed)"));

    ds_test_peer_join(&peer);
    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "later", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"class\":\"latency\""), "no rule yet: %s", obj);
    cr_assert_eq(ctl("quota later class=best-effort", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "later: memory no limit, sm-share no limit, kernel-time no limit, "
                          "class best-effort"), "%s", out);
    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "later", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"class\":\"best-effort\""), "a connected tenant follows: %s", obj);
    cr_expect_neq(ctl("quota later class=urgent", out, sizeof(out)), 0, "%s", out);
    cr_assert_eq(ctl("quota later class=claimed", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "quotas: 1"), "a rule left with nothing goes: %s", out);
    ds_test_peer_leave(&peer);
    unsetenv("DETSHARE_CLASS");
}
