/* The admin API through detshare-ctl: status matches what tenants do, a policy switch at
 * run time moves live tenants, the socket is owner-only unless --admin-group opens it to
 * a group, bad requests are refused, and silent connections are bounded in number and
 * closed after a deadline. */
#include "ds_test.h"

#include "admin_client.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
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
    const char *decisions;
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
    /* Two joins at least, each a timed decision of the policy's. */
    decisions = strstr(out, "\"policy_decisions\":{\"count\":");
    cr_expect(decisions != NULL && atoi(decisions + strlen("\"policy_decisions\":{\"count\":")) >= 2 &&
                  strstr(decisions, "\"mean_us\":") && strstr(decisions, "\"max_us\":"),
              "%s", out);
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

/* A tenant request sent as is: {"cmd": "tenant", "name": NAME, "class": "latency"} and
 * the SLO keys given (slo_us, slo_ms; -1 leaves one out).  The answer's text in out. */
static void ask_tenant(const char *name, long long slo_us, long long slo_ms, char *out,
                       size_t len)
{
    const char *kv[] = { "cmd", "tenant", "name", name, "class", "latency" };
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_unpacker u;
    msgpack_unpacked r;
    struct ds_addr admin;
    char addr[160], why[256];

    snprintf(addr, sizeof(addr), "unix:%s.admin", srv.sock);
    cr_assert_eq(ds_addr_parse(addr, &admin), 0);
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3 + (slo_us >= 0) + (slo_ms >= 0));
    for (int i = 0; i < 6; i++) {
        msgpack_pack_str(&pk, strlen(kv[i]));
        msgpack_pack_str_body(&pk, kv[i], strlen(kv[i]));
    }
    if (slo_us >= 0) {
        msgpack_pack_str(&pk, 6);
        msgpack_pack_str_body(&pk, "slo_us", 6);
        msgpack_pack_uint64(&pk, (uint64_t)slo_us);
    }
    if (slo_ms >= 0) {
        msgpack_pack_str(&pk, 6);
        msgpack_pack_str_body(&pk, "slo_ms", 6);
        msgpack_pack_uint64(&pk, (uint64_t)slo_ms);
    }
    cr_assert(msgpack_unpacker_init(&u, 4096));
    msgpack_unpacked_init(&r);
    cr_assert_eq(ds_admin_ask(&admin, sb.data, sb.size, 5000, &u, &r, why, sizeof(why)), 0,
                 "%s", why);
    msgpack_object_print_buffer(out, len, r.data);
    msgpack_unpacked_destroy(&r);
    msgpack_unpacker_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
}

/* alpha's "slo_ms" and "slo_us" in status --json. */
static void expect_slo(const char *want)
{
    char out[16384], obj[2048];

    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "alpha", obj, sizeof(obj));
    cr_expect(strstr(obj, want), "expected %s in %s", want, obj);
}

/* SLOs to the microsecond: detshare-ctl takes milliseconds with up to three decimals and
 * refuses anything else; the server keeps microseconds, takes older clients' whole
 * "slo_ms" too (not both at once), and says the SLO both ways in status. */
Test(admin, slos_are_kept_to_the_microsecond)
{
    static const char *const junk[] = { "4.0505", "abc", "0", "0.000", "-1", "+4", "4.",
                                        ".5", "1e3", "4,05", "3600000.001", "99999999999" };
    char out[4096], args[128];

    ds_test_server_start(&srv, 0, NULL);
    setenv("DETSHARE_TENANT", "alpha", 1);
    ds_test_ctx();

    cr_assert_eq(ctl("tenant alpha class latency slo 4.05", out, sizeof(out)), 0, "%s", out);
    expect_slo("\"slo_ms\":5,\"slo_us\":4050");
    cr_expect(ds_test_log_has(&srv, "(alpha) is now latency-critical, SLO 4.05 ms"));
    cr_assert_eq(ctl("status", out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, ", SLO 4.05 ms"), "%s", out);
    /* Below a millisecond: whole milliseconds round up, never to none. */
    cr_assert_eq(ctl("tenant alpha class latency slo 0.5", out, sizeof(out)), 0, "%s", out);
    expect_slo("\"slo_ms\":1,\"slo_us\":500");
    cr_assert_eq(ctl("tenant alpha class latency slo 3600000", out, sizeof(out)), 0, "%s", out);
    expect_slo("\"slo_ms\":3600000,\"slo_us\":3600000000");
    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
        snprintf(args, sizeof(args), "tenant alpha class latency slo %s", junk[i]);
        cr_expect_eq(ctl(args, out, sizeof(out)), 2, "slo %s: %s", junk[i], out);
        cr_expect(strstr(out, "with at most three decimals"), "slo %s: %s", junk[i], out);
    }
    expect_slo("\"slo_us\":3600000000");

    /* An older client's whole milliseconds. */
    ask_tenant("alpha", -1, 7, out, sizeof(out));
    cr_expect(strstr(out, "\"ok\"=>true"), "%s", out);
    expect_slo("\"slo_ms\":7,\"slo_us\":7000");
    ask_tenant("alpha", 1500, -1, out, sizeof(out));
    expect_slo("\"slo_ms\":2,\"slo_us\":1500");
    ask_tenant("alpha", 1500, 2, out, sizeof(out));
    cr_expect(strstr(out, "not both"), "%s", out);
    ask_tenant("alpha", 3600000001ll, -1, out, sizeof(out));
    cr_expect(strstr(out, "microseconds up to an hour"), "%s", out);
    ask_tenant("alpha", -1, 3600001, out, sizeof(out));
    cr_expect(strstr(out, "milliseconds up to an hour"), "%s", out);
    expect_slo("\"slo_us\":1500");
    /* 0 is none, as before. */
    ask_tenant("alpha", 0, -1, out, sizeof(out));
    expect_slo("\"slo_ms\":null,\"slo_us\":null");
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
    cr_assert(strstr(out, "policy: slo-aware"), "the default policy: %s", out);
    ds_test_server_stop(&srv);
}

static long now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* For up to ms, read what the server sends on the connections in fd still open (>= 0),
 * closing (fd[i] = -1) those it closed, until `want` of the n are.  The bytes of the
 * first refusal go to said.  Returns how many are closed. */
static int reap(int *fd, int n, int want, int ms, char *said, size_t len)
{
    long end = now_ms() + ms;
    int closed = 0;

    for (;;) {
        struct pollfd p[64];

        closed = 0;
        for (int i = 0; i < n; i++) {
            p[i] = (struct pollfd){ .fd = fd[i], .events = POLLIN };
            closed += fd[i] < 0;
        }
        if (closed >= want || now_ms() >= end)
            return closed;
        poll(p, (nfds_t)n, (int)(end - now_ms()));
        for (int i = 0; i < n; i++) {
            char buf[256];
            ssize_t got;

            if (fd[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            got = read(fd[i], buf, sizeof(buf) - 1);
            if (got > 0 && said[0] == '\0') {
                /* msgpack strings are their bytes: the text reads through. */
                for (ssize_t k = 0; k < got; k++)
                    buf[k] = buf[k] >= ' ' && buf[k] <= '~' ? buf[k] : '.';
                buf[got] = '\0';
                snprintf(said, len, "%s", buf);
            }
            if (got == 0 || (got < 0 && errno == ECONNRESET)) {
                close(fd[i]);
                fd[i] = -1;
            }
        }
    }
}

/* 200 silent connections once kept 200 descriptors of the control process for good:
 * at most 16 are kept now, more are refused at once, and those kept are closed at the
 * deadline (3 s here, DETSHARE_ADMIN_DEADLINE_MS).  One log line says each, not one a
 * connection. */
Test(admin, silent_connections_are_bounded_and_closed_at_the_deadline)
{
    enum { N = 40, KEPT = 16 };
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    char out[4096], said[256] = "";
    int fd[N];
    long t0;

    setenv("DETSHARE_ADMIN_DEADLINE_MS", "3000", 1);
    ds_test_server_start(&srv, 0, NULL);
    unsetenv("DETSHARE_ADMIN_DEADLINE_MS");
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s.admin", srv.sock);
    t0 = now_ms();
    for (int i = 0; i < N; i++) {
        fd[i] = socket(AF_UNIX, SOCK_STREAM, 0);
        cr_assert_eq(connect(fd[i], (struct sockaddr *)&sun, sizeof(sun)), 0, "%s",
                     strerror(errno));
    }
    /* Those beyond the bound are refused at once, with a reason; the others stay until
     * their deadline, which is after t0 + 3000. */
    cr_assert_eq(reap(fd, N, N - KEPT, 1500, said, sizeof(said)), N - KEPT);
    cr_assert_eq(reap(fd, N, N, 500, said, sizeof(said)), N - KEPT,
                 "more than were refused closed early");
    cr_assert_not_null(strstr(said, "too many admin connections"), "refused with: %s", said);
    /* The rest at the deadline. */
    cr_assert_eq(reap(fd, N, N, 10000, said, sizeof(said)), N);
    cr_assert_geq(now_ms() - t0, 2900, "closed after %ld ms, before the deadline",
                  now_ms() - t0);
    cr_assert_eq(ds_test_log_count(&srv, "refusing an admin connection: 16 open already"), 1);
    cr_assert_eq(ds_test_log_count(&srv, "closing an admin connection: not done after 3000 ms"),
                 1);
    cr_assert(ds_test_log_has(&srv, "at most 16 connections at once, 3000 ms each"));
    cr_assert_eq(ctl("policy", out, sizeof(out)), 0, "%s", out);
    ds_test_server_stop(&srv);
}

/* A group other than this process's own that it may give files to: one it is a member
 * of, or any as root.  -1 when there is none. */
static long other_group(void)
{
    gid_t groups[64];
    int n = getgroups(64, groups);
    struct group *g;

    for (int i = 0; i < n; i++)
        if (groups[i] != getgid())
            return groups[i];
    if (geteuid() != 0)
        return -1;
    setgrent();
    while ((g = getgrent()) != NULL && g->gr_gid == getgid())
        ;
    endgrent();
    return g != NULL ? (long)g->gr_gid : -1;
}

Test(admin, admin_group_opens_the_socket_to_that_group)
{
    char sock[160], args[64], out[4096];
    long gid = other_group();
    struct group *g;
    struct stat st;

    if (gid < 0)
        cr_skip_test("no group to give the socket to");
    g = getgrgid((gid_t)gid);
    cr_assert_not_null(g);
    snprintf(args, sizeof(args), "--admin-group %s", g->gr_name);
    ds_test_server_start(&srv, 0, args);
    snprintf(sock, sizeof(sock), "%s.admin", srv.sock);
    cr_assert_eq(stat(sock, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0660, "mode %o", st.st_mode & 0777);
    cr_expect_eq(st.st_gid, (gid_t)gid);
    cr_expect(ds_test_log_has(&srv, "open to its group"));
    cr_assert_eq(ctl("policy", out, sizeof(out)), 0, "%s", out);
    ds_test_server_stop(&srv);

    /* By number too. */
    snprintf(args, sizeof(args), "--admin-group %ld", gid);
    ds_test_server_start(&srv, 0, args);
    snprintf(sock, sizeof(sock), "%s.admin", srv.sock);
    cr_assert_eq(stat(sock, &st), 0);
    cr_expect_eq(st.st_gid, (gid_t)gid);
    ds_test_server_stop(&srv);
}

/* The server's exit status with `args`, run through `as` (a command prefix, or ""), and
 * its output in out. */
static int server_exit(const char *as, const char *args, char *out, size_t len)
{
    char cmd[512];
    FILE *p;
    size_t n;

    snprintf(cmd, sizeof(cmd),
             "%s timeout 20 %s --device sim --mps off --warm 0 --listen "
             "unix:/tmp/dsadmin-%d.sock %s 2>&1", as, DS_SERVER_BIN, (int)getpid(), args);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return WEXITSTATUS(pclose(p));
}

Test(admin, an_admin_group_that_cannot_be_used_stops_the_start)
{
    char out[4096];
    gid_t mine[64];
    struct group *g;
    int n;

    cr_expect_eq(server_exit("", "--admin-group no-such-group-here", out, sizeof(out)), 2, "%s",
                 out);
    cr_expect(strstr(out, "--admin-group no-such-group-here: no such group"), "%s", out);
    cr_expect_eq(server_exit("", "--admin-group 4000000000", out, sizeof(out)), 2, "%s", out);
    /* A group the server's user is not in (only root may give files to those): as root,
     * the server runs as nobody and is given root's group. */
    if (geteuid() == 0) {
        if (access("/usr/bin/setpriv", X_OK) != 0)
            return;
        cr_expect_eq(server_exit("setpriv --reuid 65534 --regid 65534 --clear-groups",
                                 "--admin-group 0", out, sizeof(out)), 1, "%s", out);
        cr_expect(strstr(out, "cannot give the admin socket"), "%s", out);
        return;
    }
    n = getgroups(64, mine);
    setgrent();
    while ((g = getgrent()) != NULL) {
        char args[300];
        int member = g->gr_gid == getgid();

        for (int i = 0; i < n; i++)
            member |= mine[i] == g->gr_gid;
        if (member)
            continue;
        snprintf(args, sizeof(args), "--admin-group %s", g->gr_name);
        cr_expect_eq(server_exit("", args, out, sizeof(out)), 1, "%s", out);
        cr_expect(strstr(out, "cannot give the admin socket"), "%s", out);
        break;
    }
    endgrent();
}
