/* Every tenant shows a preface before it costs an executor (ds_preface.h), within 3 s of
 * connecting, and at most 8 connections of one peer (a Unix uid, a TCP address) may be
 * waiting to show theirs: connections that hold their preface back, silent or a byte at
 * a time, cannot lock other peers' tenants out, start no executor, and are told why
 * they are refused. */
#include "ds_test.h"
#include "ds_preface.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOLDERS 20
#define PER_PEER 8

static struct ds_test_server srv;

static int unix_connect(void)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", srv.sock);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    return fd;
}

/* A TCP connection to the fixture's port from loopback address `from`. */
static int tcp_connect_from(const char *from)
{
    struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = atoi(strrchr(srv.tcp_addr, ':') + 1);

    cr_assert_eq(inet_pton(AF_INET, from, &src.sin_addr), 1);
    cr_assert_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0, "%s", strerror(errno));
    dst.sin_port = htons((uint16_t)port);
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0, "%s", strerror(errno));
    return fd;
}

/* The server's answer on fd within timeout_ms: 'Y', 'N' (reason in why), or 0 for none. */
static char answer(int fd, int timeout_ms, char *why, size_t len)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    unsigned char buf[2 + DS_PREFACE_REASON_MAX + 1];
    ssize_t n;

    why[0] = '\0';
    if (poll(&p, 1, timeout_ms) != 1 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
        return 0;
    if (buf[0] == DS_PREFACE_REFUSED && n > 2)
        snprintf(why, len, "%.*s", (int)(n - 2), (char *)buf + 2);
    return (char)buf[0];
}

/* Tenant over TCP with the fixture's token: 0 when served. */
static int tcp_tenant(void)
{
    pid_t pid = fork();
    int status;

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        CUdeviceptr d;

        setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
        _exit(ds_test_connect() == CUDA_SUCCESS && cuMemAlloc(&d, 4096) == CUDA_SUCCESS ? 0 : 1);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;

    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

Test(preface, silent_unix_connections_cost_no_executor_and_are_bounded, .timeout = 60)
{
    int fds[HOLDERS], executors, refused = 0, timed_out = 0;
    char why[300];

    ds_test_server_start(&srv, 0, NULL);
    executors = ds_test_log_count(&srv, "connected on");
    for (int i = 0; i < HOLDERS; i++)
        fds[i] = unix_connect();
    for (int i = PER_PEER; i < HOLDERS; i++) {
        cr_assert_eq(answer(fds[i], 2000, why, sizeof(why)), DS_PREFACE_REFUSED,
                     "connection %d beyond the peer's %d was not refused", i, PER_PEER);
        refused += strstr(why, "too many connections from this peer") != NULL;
    }
    cr_assert_eq(refused, HOLDERS - PER_PEER, "the refusals did not say why: %s", why);
    for (int i = 0; i < PER_PEER; i++) {
        cr_assert_eq(answer(fds[i], 5000, why, sizeof(why)), DS_PREFACE_REFUSED);
        timed_out += strstr(why, "no preface in time") != NULL;
    }
    cr_assert_eq(timed_out, PER_PEER);
    for (int i = 0; i < HOLDERS; i++)
        close(fds[i]);
    cr_assert_eq(ds_test_log_count(&srv, "connected on"), executors,
                 "a connection without a preface was given an executor");
    CU_OK(cuInit(0));
    ds_test_server_stop(&srv);
}

/* One peer trickling its prefaces a byte at a time (the reviewer's slowloris: every
 * token-holding tenant was refused for 16 s) leaves other peers' tenants served. */
Test(preface, a_slow_peer_does_not_lock_out_other_peers, .timeout = 60)
{
    int fds[HOLDERS], refused = 0;
    struct timespec t0;
    char why[300];

    ds_test_server_start(&srv, 1, NULL);
    for (int i = 0; i < HOLDERS; i++) {
        fds[i] = tcp_connect_from("127.0.0.2");
        cr_assert_eq(write(fds[i], "T", 1), 1);
    }
    for (int i = PER_PEER; i < HOLDERS; i++) {
        cr_assert_eq(answer(fds[i], 2000, why, sizeof(why)), DS_PREFACE_REFUSED);
        refused += strstr(why, "too many connections from this peer") != NULL;
    }
    cr_assert_eq(refused, HOLDERS - PER_PEER, "the refusals did not say why: %s", why);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int round = 0; round < 3; round++)
        cr_assert_eq(tcp_tenant(), 0, "a tenant of another address was refused");
    cr_assert_lt(seconds_since(&t0), 2.5, "tenants waited behind the slow peer");
    for (int i = 0; i < HOLDERS; i++)
        close(fds[i]);
    ds_test_server_stop(&srv);
}
