/* The admin API through detshare-ctl: status matches what tenants do, a policy switch at
 * run time moves live tenants, the socket is owner-only, bad requests are refused. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static struct ds_test_server srv;

static int ctl(const char *args, char *out, size_t len)
{
    return ds_test_ctl(&srv, args, out, len);
}

static CUfunction fill_kernel(void)
{
    CUfunction f;

    CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    return f;
}

static void launches(CUfunction f, CUdeviceptr d, int count)
{
    int v = 1, n = 1;
    void *params[] = { &d, &v, &n };

    for (int i = 0; i < count; i++)
        CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuCtxSynchronize());
}

static int beta(void *arg)
{
    (void)arg;
    setenv("DETSHARE_TENANT", "beta", 1);
    setenv("DETSHARE_CLASS", "latency", 1);
    return ds_test_connect() == CUDA_SUCCESS ? 0 : 1;
}

static void wait_log(const char *needle)
{
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, needle); i++)
        usleep(10000);
    cr_assert(ds_test_log_has(&srv, needle), "the server never logged \"%s\"", needle);
}

Test(admin, status_shows_what_tenants_do_and_a_policy_switch_moves_them)
{
    char out[16384], obj[2048], peer_json[128];
    struct ds_test_peer peer;
    CUfunction f;
    CUdeviceptr d;

    DS_SIM_ONLY(); /* its SM groups are the sim's 16 of 8 */
    ds_test_server_start(&srv, 0, "--policy static");
    ds_test_peer_fork(&peer, beta, NULL);
    setenv("DETSHARE_TENANT", "alpha", 1);
    ds_test_ctx();
    f = fill_kernel();
    CU_OK(cuMemAlloc(&d, 1 << 20));
    ds_test_peer_join(&peer);
    launches(f, d, 7); /* alpha moves to its half at the first of them */

    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    cr_assert(strstr(out, "\"policy\":\"static\""), "%s", out);
    cr_assert(strstr(out, "\"backend\":\"sim\""), "%s", out);
    ds_test_tenant_json(out, "alpha", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"class\":\"best-effort\""), "%s", obj);
    cr_expect(strstr(obj, "\"sms\":64,\"sm_groups\":[0,1,2,3,4,5,6,7]"), "%s", obj);
    cr_expect(strstr(obj, "\"memory_used\":1048576,\"launches\":7,\"migrations\":1"), "%s", obj);
    ds_test_tenant_json(out, "beta", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"class\":\"latency\""), "%s", obj);
    cr_expect(strstr(obj, "\"launches\":0"), "%s", obj);
    /* Unix tenants are named by the kernel: this process, its user and group. */
    snprintf(peer_json, sizeof(peer_json), "\"peer\":{\"pid\":%d,\"uid\":%u,\"gid\":%u", (int)getpid(),
             (unsigned)getuid(), (unsigned)getgid());
    ds_test_tenant_json(out, "alpha", obj, sizeof(obj));
    cr_expect(strstr(obj, peer_json), "expected %s in %s", peer_json, obj);

    cr_assert_eq(ctl("policy shared", out, sizeof(out)), 0, "%s", out);
    cr_assert(strstr(out, "policy: shared"), "%s", out);
    launches(f, d, 1);
    wait_log("now runs on the whole device");
    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "alpha", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"sms\":132"), "%s", obj);
    cr_expect(strstr(obj, "\"launches\":8,\"migrations\":2"), "%s", obj);
    cr_assert_eq(ctl("status", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "policy: shared") && strstr(out, "tenants: 2"), "%s", out);
    snprintf(peer_json, sizeof(peer_json), "process %d of uid %u", (int)getpid(),
             (unsigned)getuid());
    cr_expect(strstr(out, peer_json), "expected \"%s\" in %s", peer_json, out);

    /* An operator changes a tenant's class and SLO while it runs. */
    cr_assert_eq(ctl("tenant beta class best-effort slo 40", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, "tenants changed: 1"), "%s", out);
    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "beta", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"class\":\"best-effort\",\"slo_ms\":40"), "%s", obj);
    cr_expect(ds_test_log_has(&srv, "(beta) is now best-effort, SLO 40 ms"));
    cr_assert_eq(ctl("tenant nobody class latency", out, sizeof(out)), 1, "%s", out);
    cr_expect(strstr(out, "no such tenant"), "%s", out);
    cr_assert_neq(ctl("tenant beta class urgent", out, sizeof(out)), 0, "%s", out);

    ds_test_peer_leave(&peer);
    ds_test_server_stop(&srv);
}

Test(admin, the_socket_is_owner_only_and_bad_requests_are_refused)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    char out[4096], reply[256];
    struct stat st;
    int fd;

    ds_test_server_start(&srv, 0, NULL);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s.admin", srv.sock);
    cr_assert_eq(stat(sun.sun_path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_neq(ctl("policy nonsense", out, sizeof(out)), 0);
    cr_assert(strstr(out, "no such policy"), "%s", out);
    /* Bytes that are not msgpack get an error reply; the server goes on. */
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    cr_assert_eq(write(fd, "\xc1\xc1\xc1\xc1", 4), 4);
    cr_assert_gt(read(fd, reply, sizeof(reply)), 0);
    close(fd);
    cr_assert_eq(ctl("policy", out, sizeof(out)), 0, "%s", out);
    cr_assert(strstr(out, "policy: shared"), "%s", out);
    ds_test_server_stop(&srv);
}
