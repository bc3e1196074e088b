/* Tenants that die or misbehave: nothing they do reaches another tenant, and what they
 * held comes back. */
#include "ds_test.h"
#include "ds_preface.h"
#include "detshare.h"

#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(hostile, .init = start, .fini = stop, .timeout = 120);

static size_t free_bytes(void)
{
    size_t f, t;

    CU_OK(cuMemGetInfo(&f, &t));
    return f;
}

/* Poll until the device's free memory is back to at least `want`, for up to 10 s.  On
 * the sim it comes back exactly; a GPU also gets back the dead executor's context. */
static int wait_free(size_t want)
{
    for (int i = 0; i < 1000; i++) {
        if (free_bytes() >= want)
            return 1;
        usleep(10000);
    }
    return 0;
}

/* A survivor's proof of health: a round trip with a fresh pattern. */
static void still_works(CUdeviceptr d, size_t n, unsigned seed)
{
    unsigned char *src = malloc(n), *dst = malloc(n);

    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i * seed + seed);
    CU_OK(cuMemcpyHtoD(d, src, n));
    CU_OK(cuMemcpyDtoH(dst, d, n));
    cr_assert_eq(memcmp(src, dst, n), 0);
    free(src);
    free(dst);
}

/* Allocates 1 GiB, says so, then copies into it forever. */
static void copying_tenant(int ready)
{
    static unsigned char buf[16 << 20];
    CUcontext ctx;
    CUdeviceptr d;

    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) ||
        cuMemAlloc(&d, 1u << 30))
        _exit(1);
    if (write(ready, "r", 1) != 1)
        _exit(2);
    for (;;)
        cuMemcpyHtoD(d, buf, sizeof(buf));
}

Test(hostile, sigkill_mid_copy_frees_the_tenant_and_spares_the_others)
{
    int p[2], status;
    size_t before;
    CUdeviceptr d;
    pid_t pid;
    char c;

    /* Fork before this process connects: a child must have its own connection. */
    cr_assert_eq(pipe(p), 0);
    pid = fork();
    if (pid == 0)
        copying_tenant(p[1]);
    close(p[1]);
    cr_assert_eq(read(p[0], &c, 1), 1, "the victim did not start");
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 8 << 20));
    /* What will be free once the victim's 1 GiB comes back. */
    before = free_bytes() + (1u << 30);
    usleep(100000); /* let it get well into its copies */
    still_works(d, 8 << 20, 3);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    still_works(d, 8 << 20, 5);
    cr_assert(wait_free(before), "the killed tenant's memory did not come back");
    still_works(d, 8 << 20, 7);
}

static pid_t executor_pid_of_last_tenant(void)
{
    char line[512], path[160];
    pid_t pid = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s", srv.log);
    f = fopen(path, "r");
    cr_assert_not_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char *p = strstr(line, "(executor pid ");

        if (p != NULL)
            pid = (pid_t)atoi(p + strlen("(executor pid "));
    }
    fclose(f);
    return pid;
}

Test(hostile, a_crashed_executor_takes_down_only_its_tenant)
{
    int p[2], status;
    size_t before;
    pid_t victim, exec_pid;
    CUdeviceptr d;
    char c;

    cr_assert_eq(pipe(p), 0);
    victim = fork();
    if (victim == 0)
        copying_tenant(p[1]);
    close(p[1]);
    cr_assert_eq(read(p[0], &c, 1), 1, "the victim did not start");
    /* The victim's executor is the last one so far; this process connects after. */
    exec_pid = executor_pid_of_last_tenant();
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 1 << 20));
    before = free_bytes() + (1u << 30);
    cr_assert_gt(exec_pid, 0);
    kill(exec_pid, SIGKILL);
    cr_assert(wait_free(before), "the control process did not return the memory");
    still_works(d, 1 << 20, 11);
    kill(victim, SIGKILL);
    waitpid(victim, &status, 0);
    cr_assert(ds_test_log_has(&srv, "killed by signal 9"));
}

static int bare_connect(void)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", srv.sock);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    return fd;
}

/* A connection past its preface (every tenant shows one first, ds_preface.h), whose
 * executor reads what comes next. */
static int raw_connect(void)
{
    return ds_test_raw_connect(&srv, "from-the-future");
}

/* 1 when the server closes fd within 5 s. */
static int closed_by_server(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    char buf[256];

    while (poll(&p, 1, 5000) == 1) {
        ssize_t n = read(fd, buf, sizeof(buf));

        if (n <= 0)
            return 1;
    }
    return 0;
}

/* Garbage instead of a preface costs no executor, and the peer is told why. */
Test(hostile, garbage_instead_of_a_preface_is_refused_with_a_reason)
{
    int executors = ds_test_log_count(&srv, "connected on");
    int fd = bare_connect();
    char buf[300] = "";
    ssize_t n;

    cr_assert_eq(write(fd, "\x80\x00\x00\x28garbage", 11), 11);
    n = read(fd, buf, sizeof(buf) - 1);
    cr_assert_gt(n, 2);
    cr_assert_eq(buf[0], DS_PREFACE_REFUSED);
    cr_assert_not_null(strstr(buf + 2, "not a preface"), "answer: %s", buf + 2);
    close(fd);
    cr_assert_eq(ds_test_log_count(&srv, "connected on"), executors);
}

Test(hostile, garbage_bytes_close_only_that_connection)
{
    unsigned char junk[4096];
    CUdeviceptr d;
    int fd;

    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 4096));
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(i * 7919 + 13);
    fd = raw_connect();
    cr_assert_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    cr_assert(closed_by_server(fd), "the server kept a connection sending garbage");
    close(fd);
    still_works(d, 4096, 13);
}

/* A well-formed RPC record whose procedure arguments are malformed. */
Test(hostile, malformed_arguments_close_only_that_connection)
{
    uint32_t msg[] = {
        0, /* record mark, filled below */
        htonl(1), htonl(0) /* CALL */, htonl(2) /* RPC version */, htonl(DS_PROG),
        htonl(DS_V1), htonl(DS_MEMCPY_HTOD), 0, 0, 0, 0, /* null cred and verf */
        0, htonl(0x1000), 0, 7, htonl(0x7fffffff), /* dst, stream, absurd length */
    };
    CUdeviceptr d;
    int fd;

    msg[0] = htonl(0x80000000u | (uint32_t)(sizeof(msg) - 4));
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 4096));
    fd = raw_connect();
    cr_assert_eq(write(fd, msg, sizeof(msg)), (ssize_t)sizeof(msg));
    cr_assert(closed_by_server(fd));
    close(fd);
    still_works(d, 4096, 17);
}

/* A DS_NULL call cut into two fragments, the first of `first` bytes, in out; returns
 * the bytes to send. */
static size_t fragmented_null(unsigned char *out, uint32_t first)
{
    uint32_t call[] = { htonl(5), htonl(0) /* CALL */, htonl(2), htonl(DS_PROG), htonl(DS_V1),
                        htonl(DS_NULL), 0, 0, 0, 0 };
    uint32_t a = htonl(first), b = htonl(0x80000000u | (uint32_t)(sizeof(call) - first));

    memcpy(out, &a, 4);
    memcpy(out + 4, call, first);
    memcpy(out + 4 + first, &b, 4);
    memcpy(out + 8 + first, (unsigned char *)call + first, sizeof(call) - first);
    return 8 + sizeof(call);
}

/* Every writer of the protocol cuts fragments between XDR units; one cut inside a unit
 * misaligned the words after it in TI-RPC's record buffer (found by fuzz/fuzz_reply).
 * The executor's record stream (common/ds_rec.c) hands out words in place only where
 * they are aligned, so such a call is served like any other (and a sanitizer build
 * would catch a misaligned read). */
Test(hostile, a_fragment_cut_inside_a_unit_is_read_right)
{
    unsigned char msg[64], reply[64];
    size_t n = fragmented_null(msg, 8);
    int fd = raw_connect();

    cr_assert_eq(write(fd, msg, n), (ssize_t)n);
    cr_assert_gt(read(fd, reply, sizeof(reply)), 0, "a call in whole units is served");
    n = fragmented_null(msg, 5);
    cr_assert_eq(write(fd, msg, n), (ssize_t)n);
    cr_assert_gt(read(fd, reply, sizeof(reply)), 0, "a call cut inside a unit is served");
    close(fd);
}

Test(hostile, calls_before_the_handshake_are_refused)
{
    struct timeval wait = { .tv_sec = 5 };
    ds_alloc_args a = { .ctx = 1, .size = 4096 };
    ds_alloc_res r;
    int fd = raw_connect();
    CLIENT *c = clnt_vc_create(fd, &(struct netbuf){ 0 }, DS_PROG, DS_V1, 0, 0);

    cr_assert_not_null(c);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(clnt_call(c, DS_MEM_ALLOC, (xdrproc_t)xdr_ds_alloc_args, (char *)&a,
                           (xdrproc_t)xdr_ds_alloc_res, (char *)&r, wait),
                 RPC_SUCCESS);
    cr_assert_eq(r.err, CUDA_ERROR_NOT_INITIALIZED);
    clnt_destroy(c);
    close(fd);
}

Test(hostile, a_protocol_version_mismatch_is_refused_clearly)
{
    struct timeval wait = { .tv_sec = 5 };
    ds_hello_args a = { .proto_version = DS_PROTO_VERSION + 7, .tenant = "from-the-future" };
    ds_hello_res r;
    int fd = raw_connect();
    CLIENT *c = clnt_vc_create(fd, &(struct netbuf){ 0 }, DS_PROG, DS_V1, 0, 0);

    memset(&r, 0, sizeof(r));
    cr_assert_eq(clnt_call(c, DS_HELLO, (xdrproc_t)xdr_ds_hello_args, (char *)&a,
                           (xdrproc_t)xdr_ds_hello_res, (char *)&r, wait),
                 RPC_SUCCESS);
    cr_assert_eq(r.err, CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(closed_by_server(fd));
    clnt_destroy(c);
    close(fd);
    cr_assert(ds_test_log_has(&srv, "refusing client speaking protocol"));
}
