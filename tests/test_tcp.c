/* Copies of a remote (TCP) tenant: their bytes travel in-band, in chunks, and must go
 * between the socket and their buffers in place on both sides (common/ds_rec.h), with
 * no round trip per host-to-device chunk, and at a speed near the socket's own, which
 * the test measures first on the same loopback.  Launches over TCP are batched and take
 * no round trip.  Copies of every size where their shape changes (in place or buffered,
 * one chunk or more, one device-to-host batch or more) are byte-exact in the clear and
 * over TLS, and so are two threads' copies at once. */
#include "ds_test.h"
#include "detshare.h"
#include "ds_preface.h"
#include "ds_rec.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Larger than a chunk many times over, and ending mid-chunk. */
#define COPY_BYTES ((64u << 20) + 4099)
#define REPEATS 3

static struct ds_test_server srv;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What a tenant measured, sent to the test through a pipe. */
struct report {
    int ok;
    double htod_s, dtoh_s; /* best of REPEATS */
};

static double best(double a, double b)
{
    return a < b ? a : b;
}

/* Copy both ways, synchronously and on a stream, from pageable and from page-locked
 * memory (in-band too for a remote tenant), and check every byte. */
static int copy_both_ways(struct report *r, unsigned char *h, unsigned char *back,
                          CUdeviceptr d, CUstream s)
{
    size_t n = COPY_BYTES;
    double t;

    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned char)(i * 131 + (i >> 20));
    for (int k = 0; k < REPEATS; k++) {
        memset(back, 0, n);
        t = now_s();
        if (cuMemcpyHtoD(d, h, n) != CUDA_SUCCESS)
            return 0;
        r->htod_s = best(r->htod_s, now_s() - t);
        t = now_s();
        if (cuMemcpyDtoH(back, d, n) != CUDA_SUCCESS)
            return 0;
        r->dtoh_s = best(r->dtoh_s, now_s() - t);
        if (memcmp(h, back, n) != 0)
            return 0;
    }
    memset(back, 0, n);
    /* The source may change once an asynchronous copy from pageable memory returns. */
    if (cuMemcpyHtoDAsync(d, h + 1, n - 1, s) != CUDA_SUCCESS)
        return 0;
    memset(h, 0xee, n);
    if (cuMemcpyDtoHAsync(back, d, n - 1, s) != CUDA_SUCCESS ||
        cuStreamSynchronize(s) != CUDA_SUCCESS)
        return 0;
    for (size_t i = 0; i < n - 1; i++)
        if (back[i] != (unsigned char)((i + 1) * 131 + ((i + 1) >> 20)))
            return 0;
    return 1;
}

static void tenant(int out)
{
    struct report r = { .htod_s = 1e9, .dtoh_s = 1e9 };
    unsigned char *h = malloc(COPY_BYTES), *back = NULL, *pinned = NULL;
    CUdeviceptr d;
    CUstream s;

    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    r.ok = h != NULL && ds_test_connect() == CUDA_SUCCESS &&
           cuMemAlloc(&d, COPY_BYTES) == CUDA_SUCCESS &&
           cuMemAllocHost((void **)&pinned, COPY_BYTES) == CUDA_SUCCESS &&
           cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
           (back = malloc(COPY_BYTES)) != NULL;
    r.ok = r.ok && copy_both_ways(&r, h, back, d, s);
    r.ok = r.ok && copy_both_ways(&r, pinned, back, d, s);
    if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(12);
    _exit(r.ok ? 0 : 11);
}

/* Run the tenant against a fresh server with a TCP listener; returns its report once
 * its executor has logged how the socket's bytes went. */
static struct report run_tenant(void)
{
    struct report r;
    int p[2], status;
    pid_t pid;

    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 1, NULL);
    cr_assert_eq(pipe(p), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        tenant(p[1]);
    }
    close(p[1]);
    cr_assert_eq(read(p[0], &r, sizeof(r)), (ssize_t)sizeof(r), "the tenant reported nothing");
    close(p[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tenant status %d", status);
    for (int i = 0; i < 100 && !ds_test_log_has(&srv, "socket bytes in place:"); i++)
        usleep(20000);
    return r;
}

/* The number after `key` on the log line that has it; -1 when none does. */
static double log_number(const char *key)
{
    FILE *f = fopen(srv.log, "r");
    char line[1024];
    double v = -1;

    cr_assert_not_null(f);
    while (v < 0 && fgets(line, sizeof(line), f) != NULL) {
        const char *at = strstr(line, key);

        if (at != NULL && sscanf(at + strlen(key), "%lf", &v) != 1)
            v = -1;
    }
    fclose(f);
    return v;
}

Test(tcp, large_copies_go_in_place_without_a_round_trip_per_chunk, .timeout = 300)
{
    /* Bytes each way: per pass, REPEATS synchronous copies and one asynchronous. */
    const double each_way = 2.0 * (REPEATS + 1) * COPY_BYTES;
    double in_place_read, in_place_sent, buffered_read;

    /* The first connection's own path, as a tenant with one connection takes it. */
    setenv("DETSHARE_TCP_STREAMS", "1", 1);
    run_tenant();
    unsetenv("DETSHARE_TCP_STREAMS");
    cr_expect(!ds_test_log_has(&srv, "took data connection"),
              "DETSHARE_TCP_STREAMS=1 attached data connections");
    in_place_read = log_number("socket bytes in place: ");
    in_place_sent = log_number(" read, ");
    buffered_read = log_number("through the buffer: ");
    cr_log_info("to the device %.0f bytes; read in place %.0f, through the buffer %.0f; "
                "sent in place %.0f", each_way, in_place_read, buffered_read, in_place_sent);
    cr_expect_geq(in_place_read, 0.95 * each_way, "chunks were read through a buffer");
    cr_expect_leq(buffered_read, 0.05 * each_way, "chunks were read through a buffer");
    cr_expect_geq(in_place_sent, 0.95 * each_way, "chunks were sent through a buffer");
    /* A synchronous copy waits once, at its last chunk. */
    cr_expect(ds_test_log_has(&srv, "served memcpy_htod: 6,"),
              "host-to-device chunks took a round trip each");
    ds_test_server_stop(&srv);
}

/* The loopback's own speed: n bytes written to a TCP connection and read at its other
 * end by a thread, best of REPEATS. */
struct sink {
    int fd;
    size_t n;
};

static void *drain(void *arg)
{
    struct sink *s = arg;
    static char buf[1 << 20];
    size_t got = 0;

    while (got < s->n) {
        ssize_t k = recv(s->fd, buf, sizeof(buf), 0);

        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return NULL;
}

static int tcp_pair(int fds[2])
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    cr_assert_geq(l, 0);
    cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(l, 1), 0);
    cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(connect(fds[0], (struct sockaddr *)&a, sizeof(a)), 0);
    fds[1] = accept(l, NULL, NULL);
    cr_assert_geq(fds[1], 0);
    setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    close(l);
    return 0;
}

static double loopback_seconds(size_t n)
{
    char *data = calloc(1, n);
    double t = 1e9;

    cr_assert_not_null(data);
    for (int k = 0; k < REPEATS; k++) {
        struct sink s = { .n = n };
        pthread_t th;
        int fds[2];
        double t0;

        tcp_pair(fds);
        s.fd = fds[1];
        t0 = now_s();
        cr_assert_eq(pthread_create(&th, NULL, drain, &s), 0);
        for (size_t off = 0; off < n;) {
            ssize_t k2 = send(fds[0], data + off, n - off, MSG_NOSIGNAL);

            cr_assert_gt(k2, 0);
            off += (size_t)k2;
        }
        pthread_join(th, NULL);
        t = best(t, now_s() - t0);
        close(fds[0]);
        close(fds[1]);
    }
    free(data);
    return t;
}

/* Four times the loopback's own time allows for a loaded machine and the device copy;
 * a chunk that waits for a timer, or bytes copied thrice, take longer. */
Test(tcp, a_large_copy_runs_near_the_loopbacks_speed, .timeout = 300)
{
    double raw = loopback_seconds(COPY_BYTES);
    struct report r = run_tenant();

    cr_log_info("64 MiB: loopback %.1f ms; detshare to the device %.1f ms, back %.1f ms", raw * 1e3,
                r.htod_s * 1e3, r.dtoh_s * 1e3);
    cr_expect_leq(r.htod_s, 4 * raw + 0.02, "host to device: %.1f ms against the loopback's %.1f",
                  r.htod_s * 1e3, raw * 1e3);
    cr_expect_leq(r.dtoh_s, 4 * raw + 0.02, "device to host: %.1f ms against the loopback's %.1f",
                  r.dtoh_s * 1e3, raw * 1e3);
    ds_test_server_stop(&srv);
}

static int connect_and_stay(void *arg)
{
    (void)arg;
    return ds_test_connect() == CUDA_SUCCESS ? 0 : 1;
}

/* Whether `detshare-ctl status --json` shows tenant `name` held, within 5 s. */
static int shown_held(const char *name)
{
    char out[16384], obj[4096];

    for (int i = 0; i < 500; i++) {
        if (ds_test_ctl(&srv, "status --json", out, sizeof(out)) == 0 &&
            ds_test_tenant_json(out, name, obj, sizeof(obj)) != NULL &&
            strstr(obj, "\"gated\":true"))
            return 1;
        usleep(10000);
    }
    return 0;
}

/* Chunks held behind a closed gate (after a launch) keep their bytes: each has left the
 * executor's in-band slot, which the next chunk is decoded into, for a buffer of its own. */
Test(tcp, chunks_held_behind_the_gate_keep_their_bytes, .timeout = 120)
{
    const size_t n = (13u << 20) + 12;
    unsigned char *h = malloc(n), *back = malloc(n);
    struct ds_test_peer peer;
    CUfunction fill;
    CUdeviceptr d;
    int v = 1, count = 1;
    void *params[] = { &d, &v, &count };

    cr_assert(h != NULL && back != NULL);
    ds_test_server_start(&srv, 1, "--policy " DS_HOLD_POLICY_SO);
    setenv("DETSHARE_CLASS", "latency", 1);
    setenv("DETSHARE_TENANT", "urgent", 1);
    ds_test_peer_fork(&peer, connect_and_stay, NULL);
    unsetenv("DETSHARE_CLASS");
    setenv("DETSHARE_TENANT", "remote", 1);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuMemAlloc(&d, n));
    /* A first large copy makes the slots. */
    memset(h, 0, n);
    CU_OK(cuMemcpyHtoD(d, h, n));
    ds_test_peer_join(&peer);
    cr_assert(shown_held("remote"), "the TCP tenant was never held");
    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned char)(i * 29 + (i >> 20));
    CU_OK(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuMemcpyHtoDAsync(d + 8, h + 8, n - 8, NULL));
    memset(h, 0, n);
    usleep(50 * 1000);
    ds_test_peer_leave(&peer);
    CU_OK(cuMemcpyDtoH(back, d, n));
    for (size_t i = 8; i < n; i++)
        if (back[i] != (unsigned char)(i * 29 + (i >> 20)))
            cr_assert_fail("byte %zu is %u after the gate opened", i, back[i]);
    free(h);
    free(back);
    ds_test_server_stop(&srv);
}

/* Every value after `key` in the server's log, in order; returns how many (at most n). */
static int log_numbers(const char *key, double *v, int n)
{
    FILE *f = fopen(srv.log, "r");
    char line[1024];
    int k = 0;

    cr_assert_not_null(f);
    while (k < n && fgets(line, sizeof(line), f) != NULL) {
        const char *at = strstr(line, key);

        if (at != NULL && sscanf(at + strlen(key), "%lf", &v[k]) == 1)
            k++;
    }
    fclose(f);
    return k;
}

#define LAUNCHES 2000

/* A TCP tenant that synchronises once, after `launches` launches. */
static int launch_then_sync(void *arg)
{
    int launches = *(int *)arg, v = 1, count = 1;
    CUfunction fill;
    CUdeviceptr d;
    void *params[] = { &d, &v, &count };

    if (ds_test_connect() != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS ||
        cuMemAlloc(&d, 64) != CUDA_SUCCESS)
        return 1;
    for (int i = 0; i < launches; i++)
        if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS)
            return 2;
    return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 3;
}

/* Launches are fire-and-forget over TCP as through the call ring: a tenant that
 * launches LAUNCHES kernels before it synchronises makes as many round trips as one
 * that launches none (each executor logs its replies as its tenant leaves). */
Test(tcp, launches_take_no_round_trip, .timeout = 120)
{
    int counts[2] = { 0, LAUNCHES };
    double replies[2], calls[2];

    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 1, NULL);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    for (int k = 0; k < 2; k++) {
        struct ds_test_peer p;

        ds_test_peer_fork(&p, launch_then_sync, &counts[k]);
        ds_test_peer_join(&p);
        ds_test_peer_leave(&p);
        for (int i = 0; i < 250 && log_numbers("replies: ", replies, 2) <= k; i++)
            usleep(20000);
    }
    cr_assert_eq(log_numbers("replies: ", replies, 2), 2, "the executors did not log replies");
    cr_assert_eq(log_numbers("from the socket: ", calls, 2), 2);
    cr_log_info("calls %.0f and %.0f, replies %.0f and %.0f", calls[0], calls[1], replies[0],
                replies[1]);
    cr_expect_geq(calls[1] - calls[0], LAUNCHES, "the launches did not all come over TCP");
    cr_expect_leq(replies[1] - replies[0], 2, "launches took round trips: %.0f replies more",
                  replies[1] - replies[0]);
    ds_test_server_stop(&srv);
}

/* Sizes where a copy's shape changes: the stream's in-place threshold, one chunk, the
 * eight chunks of one device-to-host batch, and a byte either side of each. */
static const size_t edge_sizes[] = {
    1, DS_REC_DIRECT - 1, DS_REC_DIRECT, DS_REC_DIRECT + 1,
    DS_CHUNK_MAX - 1, DS_CHUNK_MAX, DS_CHUNK_MAX + 1,
    8 * (size_t)DS_CHUNK_MAX - 1, 8 * (size_t)DS_CHUNK_MAX, 8 * (size_t)DS_CHUNK_MAX + 1,
};

static void pattern(unsigned char *h, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned char)(i * 131 + (i >> 12) + seed);
}

/* n bytes from h to device offset 3 and back into `back`, synchronously, then on a
 * stream: 0 when every byte came back and nothing past n was written, else a step. */
static int round_trip(unsigned char *h, unsigned char *back, size_t n, CUdeviceptr d,
                      CUstream s, unsigned seed)
{
    pattern(h, n, seed);
    memset(back, 0x5a, n + 1);
    if (cuMemcpyHtoD(d + 3, h, n) != CUDA_SUCCESS || cuMemcpyDtoH(back, d + 3, n) != CUDA_SUCCESS)
        return 1;
    if (memcmp(h, back, n) != 0 || back[n] != 0x5a)
        return 2;
    pattern(h, n, seed + 1);
    memset(back, 0x5a, n + 1);
    if (cuMemcpyHtoDAsync(d + 3, h, n, s) != CUDA_SUCCESS ||
        cuMemcpyDtoHAsync(back, d + 3, n, s) != CUDA_SUCCESS ||
        cuStreamSynchronize(s) != CUDA_SUCCESS)
        return 3;
    return memcmp(h, back, n) != 0 || back[n] != 0x5a ? 4 : 0;
}

/* Copies of each of the n sizes there and back, from pageable and from page-locked
 * memory (both in-band over TCP): 0, or the failing step (said on stderr). */
static int copies_of(const size_t *sizes, size_t n)
{
    size_t most = 0;
    unsigned char *h, *back, *pinned;
    CUdeviceptr d;
    CUstream s;

    for (size_t k = 0; k < n; k++)
        most = sizes[k] > most ? sizes[k] : most;
    h = malloc(most + 1);
    back = malloc(most + 1);
    if (h == NULL || back == NULL || ds_test_connect() != CUDA_SUCCESS ||
        cuMemAlloc(&d, most + 8) != CUDA_SUCCESS ||
        cuMemAllocHost((void **)&pinned, most + 1) != CUDA_SUCCESS ||
        cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return 10;
    for (size_t k = 0; k < n; k++) {
        int rc = round_trip(h, back, sizes[k], d, s, (unsigned)k);

        if (rc == 0)
            rc = round_trip(pinned, back, sizes[k], d, s, (unsigned)k + 7);
        if (rc != 0) {
            fprintf(stderr, "copy of %zu bytes: step %d\n", sizes[k], rc);
            return 20 + (int)k;
        }
    }
    return 0;
}

static int edge_copies(void *arg)
{
    (void)arg;
    return copies_of(edge_sizes, sizeof(edge_sizes) / sizeof(edge_sizes[0]));
}

Test(tcp, copies_around_chunk_boundaries_are_byte_exact, .timeout = 300)
{
    struct ds_test_peer p;

    ds_test_server_start(&srv, 1, NULL);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    ds_test_peer_fork(&p, edge_copies, NULL);
    ds_test_peer_join(&p);
    ds_test_peer_leave(&p);
    ds_test_server_stop(&srv);
}

/* A self-signed certificate for 127.0.0.1 in dir (server.pem, server.key). */
static void make_cert(const char *dir)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
             "-days 3650 -subj /CN=detshare-test -addext subjectAltName=IP:127.0.0.1 "
             "-keyout %s/server.key -out %s/server.pem 2>/dev/null",
             dir, dir);
    cr_assert_eq(system(cmd), 0, "openssl could not make a certificate");
}

/* The same copies over TLS: records of every size around the chunk boundaries. */
Test(tcp, copies_around_chunk_boundaries_are_byte_exact_over_tls, .timeout = 300)
{
    char dir[] = "/tmp/ds-tcptls-XXXXXX", args[512], cert[128];
    struct ds_test_peer p;

    cr_assert_not_null(mkdtemp(dir));
    make_cert(dir);
    snprintf(cert, sizeof(cert), "%s/server.pem", dir);
    snprintf(args, sizeof(args), "--tls-cert %s --tls-key %s/server.key --tls-only", cert, dir);
    ds_test_server_start(&srv, 1, args);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    setenv("DETSHARE_TLS_CA", cert, 1);
    ds_test_peer_fork(&p, edge_copies, NULL);
    ds_test_peer_join(&p);
    ds_test_peer_leave(&p);
    unsetenv("DETSHARE_TLS_CA");
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

/* Two threads of one TCP tenant copying at once, each its own bytes to its own device
 * memory and back, in more chunks than one device-to-host batch. */
#define THREAD_BYTES (9 * (size_t)DS_CHUNK_MAX + 5)
#define THREAD_ROUNDS 4

struct copier {
    unsigned seed;
    int failed; /* the step that failed, 0 for none */
};

static void *copy_repeatedly(void *arg)
{
    struct copier *c = arg;
    unsigned char *h = malloc(THREAD_BYTES + 1), *back = malloc(THREAD_BYTES + 1);
    CUdeviceptr d;
    CUstream s;

    if (h == NULL || back == NULL || ds_test_connect() != CUDA_SUCCESS ||
        cuMemAlloc(&d, THREAD_BYTES + 8) != CUDA_SUCCESS ||
        cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        c->failed = 1;
    for (unsigned r = 0; r < THREAD_ROUNDS && c->failed == 0; r++)
        c->failed = round_trip(h, back, THREAD_BYTES, d, s, c->seed + 16 * r);
    free(h);
    free(back);
    return NULL;
}

static int two_copiers(void *arg)
{
    struct copier c[2] = { { .seed = 1 }, { .seed = 9 } };
    pthread_t th[2];

    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS)
        return 10;
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, copy_repeatedly, &c[i]) != 0)
            return 11;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++)
        if (c[i].failed != 0) {
            fprintf(stderr, "thread %d: step %d\n", i, c[i].failed);
            return 20 + i;
        }
    return 0;
}

Test(tcp, two_threads_copying_at_once_each_get_their_own_bytes, .timeout = 300)
{
    struct ds_test_peer p;

    ds_test_server_start(&srv, 1, NULL);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    ds_test_peer_fork(&p, two_copiers, NULL);
    ds_test_peer_join(&p);
    ds_test_peer_leave(&p);
    ds_test_server_stop(&srv);
}

/* Sizes where a striped copy's shape changes: two chunks (the least striped, a byte
 * less goes over the first connection), an odd
 * number of chunks over two connections, a last chunk of one byte. */
static const size_t striped_sizes[] = {
    2 * (size_t)DS_CHUNK_MAX - 1, 2 * (size_t)DS_CHUNK_MAX, 2 * (size_t)DS_CHUNK_MAX + 1,
    3 * (size_t)DS_CHUNK_MAX + 7, 5 * (size_t)DS_CHUNK_MAX,
};

/* Every striped size, from pageable and from page-locked memory. */
static int striped_copies(void *arg)
{
    (void)arg;
    return copies_of(striped_sizes, sizeof(striped_sizes) / sizeof(striped_sizes[0]));
}

static int log_shows_soon(const char *needle)
{
    for (int i = 0; i < 150 && !ds_test_log_has(&srv, needle); i++)
        usleep(20000);
    return ds_test_log_has(&srv, needle);
}

/* Copies striped over two data connections are byte-exact both ways, and the tenant's
 * exit closes its data connections. */
Test(tcp, copies_striped_over_data_connections_are_byte_exact, .timeout = 300)
{
    struct ds_test_peer p;

    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 1, NULL);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    setenv("DETSHARE_TCP_STREAMS", "3", 1);
    ds_test_peer_fork(&p, striped_copies, NULL);
    ds_test_peer_join(&p);
    ds_test_peer_leave(&p);
    unsetenv("DETSHARE_TCP_STREAMS");
    cr_expect(log_shows_soon("data connections: 2 closed, 0 refused"),
              "the tenant's exit did not close its two data connections");
    cr_expect(ds_test_log_has(&srv, "served memcpy_htod_striped: 16,"),
              "copies to the device were not striped");
    cr_expect(ds_test_log_has(&srv, "served memcpy_dtoh_striped: 16,"),
              "copies to the host were not striped");
    cr_expect(!ds_test_log_has(&srv, "took data connection 3"), "more than 2 were taken");
    ds_test_server_stop(&srv);
}

/* An attach preface for tenant `id` with a secret of `fill` bytes; returns the first
 * byte answered (0 when the connection closed first) and, in *then, the byte after the
 * control process's acceptance (0 when closed). */
static int tcp_connect(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    const char *port = strrchr(srv.tcp_addr, ':');
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert(fd >= 0 && port != NULL);
    a.sin_port = htons((unsigned short)atoi(port + 1));
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* A connection that sent an attach preface for tenant id with `secret`; returns it,
 * with the first byte answered in *first (0 when the connection closed first) and, in
 * *then, the byte after the control process's acceptance (0 when closed). */
static int attach_with(unsigned long long id, const unsigned char *secret, int *first,
                       int *then)
{
    unsigned char pre[DS_PREFACE_ATTACH_LEN], c;
    int fd = tcp_connect();

    ds_preface_encode_attach(pre, id, secret);
    cr_assert_eq(send(fd, pre, sizeof(pre), 0), (ssize_t)sizeof(pre));
    *first = recv(fd, &c, 1, MSG_WAITALL) == 1 ? c : 0;
    *then = *first == 'Y' && recv(fd, &c, 1, MSG_WAITALL) == 1 ? c : 0;
    return fd;
}

static int attach_as(unsigned long long id, unsigned char fill, int *then)
{
    unsigned char secret[DS_ATTACH_SECRET];
    int first;

    memset(secret, fill, sizeof(secret));
    close(attach_with(id, secret, &first, then));
    return first;
}

/* A data connection showing a wrong secret is closed by the tenant's executor, one
 * naming no tenant by the control process; the tenant's session goes on, striped. */
Test(tcp, an_attach_with_a_wrong_secret_is_refused_and_the_session_goes_on, .timeout = 300)
{
    const size_t n = 3 * (size_t)DS_CHUNK_MAX + 5;
    unsigned char *h = malloc(n + 1), *back = malloc(n + 1);
    CUdeviceptr d;
    CUstream s;
    int then;

    cr_assert(h != NULL && back != NULL);
    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 1, NULL);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    setenv("DETSHARE_TENANT", "victim", 1);
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, n + 8));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    cr_assert(ds_test_log_has(&srv, "tenant 1 (victim)"), "the tenant is not tenant 1");
    cr_expect_eq(attach_as(1, 0xa5, &then), 'Y', "the control process refused a well-formed attach");
    cr_expect_eq(then, 0, "the executor kept a data connection with a wrong secret");
    cr_expect(log_shows_soon("refused a data connection: wrong secret"));
    cr_expect_eq(attach_as(999, 0xa5, &then), 'N', "an attach to no tenant was accepted");
    cr_expect_eq(round_trip(h, back, n, d, s, 3), 0, "the session was harmed");
    unsetenv("DETSHARE_TENANT");
    free(h);
    free(back);
    ds_test_server_stop(&srv);
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

/* A data connection whose chunk header names a copy that was not announced ends its own
 * tenant's session, and only its own: a raw tenant shakes hands, attaches with its
 * secret, announces copy 5 and sends a chunk of copy 6. */
Test(tcp, a_chunk_out_of_place_ends_only_its_own_session, .timeout = 120)
{
    struct timeval wait = { .tv_sec = 5 };
    ds_hello_args h = { .proto_version = DS_PROTO_VERSION, .tenant = "forger" };
    ds_striped_args a = { .dev = 4096, .size = 2 * (size_t)DS_CHUNK_MAX, .copy = 5, .conns = 1 };
    ds_chunk_hdr bad = { .copy = 6, .length = DS_CHUNK_MAX, .offset = 0 };
    char raw[16];
    ds_hello_res r;
    CLIENT *c;
    XDR x;
    int fd, data, first, then;

    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 1, NULL);
    fd = tcp_connect();
    cr_assert_eq(ds_preface_send(fd, srv.token, strlen(srv.token), "forger"), 0);
    cr_assert_eq(ds_preface_await(fd, raw, sizeof(raw)), 0);
    c = clnt_vc_create(fd, &(struct netbuf){ 0 }, DS_PROG, DS_V1, 0, 0);
    cr_assert_not_null(c);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(clnt_call(c, DS_HELLO, (xdrproc_t)xdr_ds_hello_args, (char *)&h,
                           (xdrproc_t)xdr_ds_hello_res, (char *)&r, wait),
                 RPC_SUCCESS);
    cr_assert_eq(r.err, 0);
    data = attach_with(r.ds_hello_res_u.ok.tenant_id,
                       (const unsigned char *)r.ds_hello_res_u.ok.attach_secret, &first, &then);
    cr_assert(first == 'Y' && then == 'Y', "the executor refused the right secret");
    /* A batched call: no reply to wait for. */
    clnt_call(c, DS_MEMCPY_HTOD_STRIPED, (xdrproc_t)xdr_ds_striped_args, (char *)&a,
              (xdrproc_t)(void (*)(void))xdr_void, NULL, (struct timeval){ 0 });
    xdrmem_create(&x, raw, sizeof(raw), XDR_ENCODE);
    cr_assert(xdr_ds_chunk_hdr(&x, &bad));
    cr_assert_eq(send(data, raw, sizeof(raw), MSG_NOSIGNAL), (ssize_t)sizeof(raw));
    cr_expect(closed_by_server(data), "the data connection stayed open");
    cr_expect(closed_by_server(fd), "the session went on after a chunk out of place");
    cr_expect(log_shows_soon("where chunk (copy 5, offset 0"), "the executor did not say why");
    xdr_free((xdrproc_t)xdr_ds_hello_res, (char *)&r);
    clnt_destroy(c);
    close(fd);
    close(data);
    /* Another tenant is served as before, its copies striped. */
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    setenv("DETSHARE_TCP_STREAMS", "3", 1);
    {
        struct ds_test_peer p;

        ds_test_peer_fork(&p, striped_copies, NULL);
        ds_test_peer_join(&p);
        ds_test_peer_leave(&p);
    }
    unsetenv("DETSHARE_TCP_STREAMS");
    ds_test_server_stop(&srv);
}

/* Sizes where the executor's pipeline of a striped copy changes shape (server/exec/
 * stripes.c): it keeps two chunks a data connection in flight, at most DS_BULK_SLOTS
 * (8) in all, so its window is 4 chunks over two data connections and 8 over seven;
 * each size lies at or a byte either side of a window, or wraps it more than twice. */
static const size_t window_sizes_2[] = {
    4 * (size_t)DS_CHUNK_MAX - 1, 4 * (size_t)DS_CHUNK_MAX, 4 * (size_t)DS_CHUNK_MAX + 1,
    9 * (size_t)DS_CHUNK_MAX + 3,
};
static const size_t window_sizes_7[] = {
    7 * (size_t)DS_CHUNK_MAX + 1, 8 * (size_t)DS_CHUNK_MAX - 1, 8 * (size_t)DS_CHUNK_MAX,
    8 * (size_t)DS_CHUNK_MAX + 1, 17 * (size_t)DS_CHUNK_MAX + 5,
};

static int window_copies(void *arg)
{
    int seven = *(const int *)arg;

    return seven ? copies_of(window_sizes_7, sizeof(window_sizes_7) / sizeof(window_sizes_7[0]))
                 : copies_of(window_sizes_2, sizeof(window_sizes_2) / sizeof(window_sizes_2[0]));
}

/* Striped copies around the executor's window, over two and over seven data
 * connections, are byte-exact both ways, from pageable and from page-locked memory. */
Test(tcp, striped_copies_around_the_executor_window_are_byte_exact, .timeout = 300)
{
    static const char *streams[] = { "3", "8" };

    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 1, NULL);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    for (int seven = 0; seven < 2; seven++) {
        struct ds_test_peer p;

        setenv("DETSHARE_TCP_STREAMS", streams[seven], 1);
        ds_test_peer_fork(&p, window_copies, &seven);
        ds_test_peer_join(&p);
        ds_test_peer_leave(&p);
    }
    unsetenv("DETSHARE_TCP_STREAMS");
    cr_expect(log_shows_soon("data connections: 7 closed, 0 refused"),
              "the second tenant did not copy over seven data connections");
    ds_test_server_stop(&srv);
}

/* Bytes the server's end of connection fd holds unread (/proc/net/tcp), or -1 when it
 * is not found. */
static long server_unread(int fd)
{
    struct sockaddr_in me, peer;
    socklen_t len = sizeof(me), plen = sizeof(peer);
    unsigned lp, rp, st, txq, rxq, la, ra;
    char line[512];
    long unread = -1;
    FILE *f;

    if (getsockname(fd, (struct sockaddr *)&me, &len) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &plen) != 0 ||
        (f = fopen("/proc/net/tcp", "r")) == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, " %*u: %x:%x %x:%x %x %x:%x", &la, &lp, &ra, &rp, &st, &txq, &rxq) == 7 &&
            lp == ntohs(peer.sin_port) && rp == ntohs(me.sin_port))
            unread = (long)rxq;
    fclose(f);
    return unread;
}

/* A raw TCP tenant: preface, hello, `conns` data connections attached (in data[]) and
 * a context (*ctx).  Returns its RPC client over *fd. */
static CLIENT *raw_tenant(int *fd, int *data, int conns, const char *name, ds_handle *ctx)
{
    struct timeval wait = { .tv_sec = 5 };
    ds_hello_args h = { .proto_version = DS_PROTO_VERSION, .tenant = (char *)name };
    ds_ctx_create_args ca = { .dev = 0 };
    ds_handle_res cr;
    ds_hello_res r;
    char why[64];
    CLIENT *c;

    *fd = tcp_connect();
    cr_assert_eq(ds_preface_send(*fd, srv.token, strlen(srv.token), name), 0);
    cr_assert_eq(ds_preface_await(*fd, why, sizeof(why)), 0);
    c = clnt_vc_create(*fd, &(struct netbuf){ 0 }, DS_PROG, DS_V1, 0, 0);
    cr_assert_not_null(c);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(clnt_call(c, DS_HELLO, (xdrproc_t)xdr_ds_hello_args, (char *)&h,
                           (xdrproc_t)xdr_ds_hello_res, (char *)&r, wait),
                 RPC_SUCCESS);
    cr_assert_eq(r.err, 0);
    for (int i = 0; i < conns; i++) {
        int first, then;

        data[i] = attach_with(r.ds_hello_res_u.ok.tenant_id,
                              (const unsigned char *)r.ds_hello_res_u.ok.attach_secret, &first,
                              &then);
        cr_assert(first == 'Y' && then == 'Y', "data connection %d was refused", i);
    }
    xdr_free((xdrproc_t)xdr_ds_hello_res, (char *)&r);
    memset(&cr, 0, sizeof(cr));
    cr_assert_eq(clnt_call(c, DS_CTX_CREATE, (xdrproc_t)xdr_ds_ctx_create_args, (char *)&ca,
                           (xdrproc_t)xdr_ds_handle_res, (char *)&cr, wait),
                 RPC_SUCCESS);
    cr_assert_eq(cr.err, 0);
    *ctx = cr.ds_handle_res_u.handle;
    return c;
}

static void send_chunk_on(int fd, uint32_t copy, uint64_t off, const unsigned char *p, size_t n)
{
    ds_chunk_hdr hdr = { .copy = copy, .length = (u_int)n, .offset = off };
    char raw[16];
    XDR x;

    xdrmem_create(&x, raw, sizeof(raw), XDR_ENCODE);
    cr_assert(xdr_ds_chunk_hdr(&x, &hdr));
    cr_assert_eq(send(fd, raw, sizeof(raw), MSG_NOSIGNAL), (ssize_t)sizeof(raw));
    for (size_t done = 0; done < n;) {
        ssize_t k = send(fd, p + done, n - done, MSG_NOSIGNAL);

        cr_assert_gt(k, 0);
        done += (size_t)k;
    }
}

/* The executor reads every data connection at once (a thread each): a chunk that comes
 * on the second connection before the first chunk has come on the first is taken off
 * its socket at once, where reading the connections in turn left it there until the
 * first chunk came.  Both chunks then land where they belong. */
Test(tcp, the_executor_reads_every_data_connection_at_once, .timeout = 120)
{
    struct timeval wait = { .tv_sec = 5 };
    const size_t tail = 100, n = DS_CHUNK_MAX + tail;
    unsigned char *bytes = malloc(n);
    ds_alloc_args aa = { .size = n };
    ds_alloc_res ar;
    ds_striped_args a = { .size = n, .copy = 1, .conns = 2 };
    ds_dtoh_args back = { .size = (u_int)tail };
    ds_bytes_res br;
    int fd, data[2];
    long unread = -1;
    CLIENT *c;

    cr_assert_not_null(bytes);
    pattern(bytes, n, 5);
    ds_test_server_start(&srv, 1, NULL);
    c = raw_tenant(&fd, data, 2, "twohands", &aa.ctx);
    memset(&ar, 0, sizeof(ar));
    cr_assert_eq(clnt_call(c, DS_MEM_ALLOC, (xdrproc_t)xdr_ds_alloc_args, (char *)&aa,
                           (xdrproc_t)xdr_ds_alloc_res, (char *)&ar, wait),
                 RPC_SUCCESS);
    cr_assert_eq(ar.err, 0);
    a.dev = ar.ds_alloc_res_u.ptr;
    /* A batched call: no reply to wait for. */
    clnt_call(c, DS_MEMCPY_HTOD_STRIPED, (xdrproc_t)xdr_ds_striped_args, (char *)&a,
              (xdrproc_t)(void (*)(void))xdr_void, NULL, (struct timeval){ 0 });
    send_chunk_on(data[1], 1, DS_CHUNK_MAX, bytes + DS_CHUNK_MAX, tail);
    for (int i = 0; i < 150 && (unread = server_unread(data[1])) != 0; i++)
        usleep(20000);
    cr_expect_eq(unread, 0, "the second connection's chunk waited for the first's (%ld bytes "
                 "unread)", unread);
    send_chunk_on(data[0], 1, 0, bytes, DS_CHUNK_MAX);
    back.src = a.dev + DS_CHUNK_MAX;
    memset(&br, 0, sizeof(br));
    cr_assert_eq(clnt_call(c, DS_MEMCPY_DTOH, (xdrproc_t)xdr_ds_dtoh_args, (char *)&back,
                           (xdrproc_t)xdr_ds_bytes_res, (char *)&br, wait),
                 RPC_SUCCESS);
    cr_assert_eq(br.err, 0);
    cr_assert_eq(br.ds_bytes_res_u.data.data_len, tail);
    cr_expect_eq(memcmp(br.ds_bytes_res_u.data.data_val, bytes + DS_CHUNK_MAX, tail), 0,
                 "the second chunk's bytes did not land");
    xdr_free((xdrproc_t)xdr_ds_bytes_res, (char *)&br);
    back.src = a.dev;
    back.size = DS_CHUNK_MAX;
    memset(&br, 0, sizeof(br));
    cr_assert_eq(clnt_call(c, DS_MEMCPY_DTOH, (xdrproc_t)xdr_ds_dtoh_args, (char *)&back,
                           (xdrproc_t)xdr_ds_bytes_res, (char *)&br, wait),
                 RPC_SUCCESS);
    cr_assert_eq(br.err, 0);
    cr_expect_eq(memcmp(br.ds_bytes_res_u.data.data_val, bytes, DS_CHUNK_MAX), 0,
                 "the first chunk's bytes did not land");
    xdr_free((xdrproc_t)xdr_ds_bytes_res, (char *)&br);
    clnt_destroy(c);
    close(fd);
    close(data[0]);
    close(data[1]);
    free(bytes);
    ds_test_server_stop(&srv);
}

#define FAILED_BYTES (16 * (size_t)DS_CHUNK_MAX)

/* A tenant whose context a kernel failed copies striped, both ways: each copy returns
 * the context's error, as natively, at once rather than when the executor leaves.
 * Exit status 0, or the failing step. */
static int copies_after_a_fault(void *arg)
{
    unsigned char *h = malloc(FAILED_BYTES);
    CUdeviceptr d, wild = 0x10000;
    CUfunction fill;
    int v = 3, n = 32;
    void *params[] = { &wild, &v, &n };
    double t;

    (void)arg;
    if (h == NULL || ds_test_connect() != CUDA_SUCCESS ||
        cuMemAlloc(&d, FAILED_BYTES) != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS)
        return 10;
    pattern(h, FAILED_BYTES, 1);
    /* A first striped copy attaches the data connections while all is well. */
    if (cuMemcpyHtoD(d, h, FAILED_BYTES) != CUDA_SUCCESS)
        return 11;
    if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
        cuCtxSynchronize() != CUDA_ERROR_ILLEGAL_ADDRESS)
        return 12;
    t = now_s();
    if (cuMemcpyHtoD(d, h, FAILED_BYTES) != CUDA_ERROR_ILLEGAL_ADDRESS)
        return 13;
    if (cuMemcpyDtoH(h, d, FAILED_BYTES) != CUDA_ERROR_ILLEGAL_ADDRESS)
        return 14;
    /* The executor leaves a second after the fault: the copies answered before. */
    if (now_s() - t > 0.5)
        return 15;
    free(h);
    return 0;
}

/* A tenant whose context failed gets its copies' error and only it; the server goes
 * on serving another tenant's striped copies. */
Test(tcp, a_striped_copy_into_a_failed_context_returns_its_error, .timeout = 120)
{
    struct ds_test_peer p;

    setenv("DETSHARE_SIM_FAULT", "fill", 1);
    ds_test_server_start(&srv, 1, NULL);
    unsetenv("DETSHARE_SIM_FAULT");
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    setenv("DETSHARE_TCP_STREAMS", "3", 1);
    ds_test_peer_fork(&p, copies_after_a_fault, NULL);
    ds_test_peer_join(&p);
    ds_test_peer_leave(&p);
    ds_test_peer_fork(&p, striped_copies, NULL);
    ds_test_peer_join(&p);
    ds_test_peer_leave(&p);
    unsetenv("DETSHARE_TCP_STREAMS");
    ds_test_server_stop(&srv);
}

/* Copies striped both ways until killed. */
static void copy_until_killed(int ready)
{
    const size_t n = 16 * (size_t)DS_CHUNK_MAX + 9;
    unsigned char *h = malloc(n);
    CUdeviceptr d;

    if (h == NULL || ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, n) != CUDA_SUCCESS)
        _exit(10);
    memset(h, 7, n);
    if (cuMemcpyHtoD(d, h, n) != CUDA_SUCCESS || write(ready, "r", 1) != 1)
        _exit(11);
    for (;;)
        if (cuMemcpyHtoDAsync(d, h, n, NULL) != CUDA_SUCCESS ||
            cuMemcpyDtoH(h, d, n) != CUDA_SUCCESS)
            _exit(12);
}

/* A tenant killed in the middle of its striped copies ends its own session, its
 * executor's connection threads and all: the executor logs its data connections closed,
 * and the server serves the next tenant's striped copies. */
Test(tcp, a_tenant_killed_mid_copy_leaves_the_server_serving, .timeout = 120)
{
    struct ds_test_peer p;
    int fds[2], status;
    char c;
    pid_t pid;

    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 1, NULL);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
    setenv("DETSHARE_TCP_STREAMS", "3", 1);
    cr_assert_eq(pipe(fds), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        copy_until_killed(fds[1]);
    }
    close(fds[1]);
    cr_assert_eq(read(fds[0], &c, 1), 1, "the tenant did not start copying");
    close(fds[0]);
    usleep(300 * 1000);
    kill(pid, SIGKILL);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status), "the tenant stopped copying before it was killed (%d)",
              WEXITSTATUS(status));
    cr_expect(log_shows_soon("data connections: 2 closed"),
              "the killed tenant's executor did not end");
    ds_test_peer_fork(&p, striped_copies, NULL);
    ds_test_peer_join(&p);
    ds_test_peer_leave(&p);
    unsetenv("DETSHARE_TCP_STREAMS");
    ds_test_server_stop(&srv);
}
