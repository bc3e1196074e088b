/* The metrics endpoint: /metrics parses as Prometheus text, shows each tenant with its
 * labels and what it does (memory, launches, calls and errors by procedure), and
 * changes as tenants work; other paths, methods and malformed or oversized requests get
 * their status without disturbing other scrapers; silent clients and floods of idle
 * connections do not lock a scraper out; a bad --metrics address stops the start. */
#include "ds_test.h"

#include <arpa/inet.h>
#include <ctype.h>
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

#define BODY_MAX (256 * 1024)
#define SERIES_MAX 4096
/* Larger than the endpoint takes (DS_METRICS_MAX_REQUEST). */
#define BIG_REQUEST 9000

/* More connections than the endpoint keeps open (DS_METRICS_MAX_CONNS, 32). */
#define DS_TEST_FLOOD 40

static struct ds_test_server srv;
static int port;           /* the metrics port, or 0 */
static char unix_path[100];  /* the metrics socket, when port is 0 */

static void start(int with_tcp, const char *more)
{
    char args[512];

    port = ds_test_free_tcp_port();
    snprintf(args, sizeof(args), "--metrics tcp:127.0.0.1:%d %s", port, more ? more : "");
    ds_test_server_start(&srv, with_tcp, args);
}

static int connect_metrics(void)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd;

    if (port == 0) {
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", unix_path);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        cr_assert_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0, "%s", strerror(errno));
        return fd;
    }
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "%s", strerror(errno));
    return fd;
}

static void send_all(int fd, const char *bytes, size_t n)
{
    cr_assert_eq(write(fd, bytes, n), (ssize_t)n, "%s", strerror(errno));
}

/* Everything the server sends until it closes, within timeout_ms; returns its length,
 * or -1 when the server did not close in time. */
static long read_to_end(int fd, char *buf, size_t len, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    size_t have = 0;
    ssize_t n = 1;

    while (have < len - 1 && poll(&p, 1, timeout_ms) == 1) {
        if ((n = read(fd, buf + have, len - 1 - have)) <= 0)
            break;
        have += (size_t)n;
    }
    buf[have] = '\0';
    return n <= 0 ? (long)have : -1;
}

/* Send `request` (n bytes) on a new connection and read the answer into out; returns
 * the HTTP status, *body pointing past the head. */
static int exchange(const char *request, size_t n, char *out, size_t len, char **body)
{
    int fd = connect_metrics(), status = 0;
    char *end;

    send_all(fd, request, n);
    cr_assert_geq(read_to_end(fd, out, len, 10000), 0, "the server did not close");
    close(fd);
    cr_assert_eq(sscanf(out, "HTTP/1.1 %d ", &status), 1, "not an HTTP answer: %.200s", out);
    end = strstr(out, "\r\n\r\n");
    cr_assert_not_null(end, "no end of head: %.200s", out);
    if (body != NULL)
        *body = end + 4;
    return status;
}

static int request(const char *req, char *out, size_t len, char **body)
{
    return exchange(req, strlen(req), out, len, body);
}

/* ---- The text format ---- */

static int name_len(const char *s, int colons)
{
    int n = 0;

    if (!(isalpha((unsigned char)s[0]) || s[0] == '_' || (colons && s[0] == ':')))
        return 0;
    while (isalnum((unsigned char)s[n]) || s[n] == '_' || (colons && s[n] == ':'))
        n++;
    return n;
}

/* Labels `{a="x",b="y"}` at *p; returns 0 and moves past them, or -1. */
static int parse_labels(const char **p)
{
    const char *s = *p + 1;

    while (*s != '}') {
        int n = name_len(s, 0);

        if (n == 0 || s[n] != '=' || s[n + 1] != '"')
            return -1;
        for (s += n + 2; *s != '"'; s++) {
            if (*s == '\n' || *s == '\0')
                return -1;
            if (*s == '\\' && s[1] != '\\' && s[1] != '"' && s[1] != 'n')
                return -1;
            if (*s == '\\')
                s++;
        }
        s++;
        if (*s == ',')
            s++;
        else if (*s != '}')
            return -1;
    }
    *p = s + 1;
    return 0;
}

/* What a body declared and held so far. */
struct seen {
    char typed[256][96];
    int ntyped;
    char *series[SERIES_MAX]; /* name and labels of each sample */
    int nseries;
};

static int typed(const struct seen *w, const char *name, int n)
{
    for (int i = 0; i < w->ntyped; i++)
        if ((int)strlen(w->typed[i]) == n && strncmp(w->typed[i], name, (size_t)n) == 0)
            return 1;
    return 0;
}

static void check_comment(struct seen *w, const char *line)
{
    char kind[8], name[96], type[16];
    size_t n;

    cr_assert_eq(sscanf(line, "# %7s %95s %15s", kind, name, type), 3, "%s", line);
    cr_assert(strcmp(kind, "HELP") == 0 || strcmp(kind, "TYPE") == 0, "%s", line);
    n = strlen(name);
    cr_assert_eq(name_len(name, 1), (int)n, "bad name in %s", line);
    cr_assert(strncmp(name, "detshare_", 9) == 0, "%s has no detshare_ prefix", name);
    if (strcmp(kind, "HELP") == 0)
        return;
    cr_assert(strcmp(type, "gauge") == 0 || strcmp(type, "counter") == 0, "type %s", type);
    cr_assert(!typed(w, name, (int)n), "%s typed twice", name);
    cr_assert(strcmp(type, "counter") != 0 || (n > 6 && strcmp(name + n - 6, "_total") == 0),
              "counter %s does not end in _total", name);
    cr_assert_lt(w->ntyped, 256);
    snprintf(w->typed[w->ntyped++], sizeof(w->typed[0]), "%s", name);
}

static void check_sample(struct seen *w, char *line)
{
    const char *p = line;
    int n = name_len(line, 1);
    char *end;
    double v;

    cr_assert_gt(n, 0, "%s", line);
    cr_assert(typed(w, line, n), "no TYPE before %s", line);
    p += n;
    if (*p == '{')
        cr_assert_eq(parse_labels(&p), 0, "bad labels: %s", line);
    cr_assert_eq(*p, ' ', "%s", line);
    v = strtod(p + 1, &end);
    cr_assert(end != p + 1 && *end == '\0', "bad value: %s", line);
    cr_assert_geq(v, 0.0, "%s", line);
    for (int i = 0; i < w->nseries; i++)
        cr_assert(strncmp(w->series[i], line, (size_t)(p - line)) != 0 ||
                      w->series[i][p - line] != ' ',
                  "series twice: %s", line);
    cr_assert_lt(w->nseries, SERIES_MAX);
    w->series[w->nseries++] = line;
}

/* Every line a HELP, a TYPE before its samples, or a sample; no series twice. */
static void check_format(const char *body)
{
    static struct seen w;
    char *copy = strdup(body), *line, *next;

    cr_assert_not_null(copy);
    memset(&w, 0, sizeof(w));
    cr_assert_neq(body[0], '\0', "empty exposition");
    cr_assert_eq(body[strlen(body) - 1], '\n', "the last line has no newline");
    for (line = copy; *line != '\0'; line = next) {
        next = strchr(line, '\n');
        *next++ = '\0';
        if (line[0] == '#')
            check_comment(&w, line);
        else
            check_sample(&w, line);
    }
    free(copy);
}

static char *scrape(char *out, size_t len)
{
    char *body;
    int status = request("GET /metrics HTTP/1.1\r\nHost: gpu\r\nAccept: */*\r\n\r\n", out,
                         len, &body);

    cr_assert_eq(status, 200, "%.300s", out);
    cr_assert(strstr(out, "Content-Type: text/plain; version=0.0.4"), "%.300s", out);
    check_format(body);
    return body;
}

/* The value of the series `name{...}` whose labels start with `first` and include
 * `also` (either may be NULL; `name VALUE` when first is); -1 when there is none. */
static double value(const char *body, const char *name, const char *first, const char *also)
{
    char start[256];

    snprintf(start, sizeof(start), "%s%s%s", name, first ? "{" : " ", first ? first : "");
    for (const char *line = body; *line != '\0'; line = strchr(line, '\n') + 1) {
        const char *sp = strchr(line, '\n');

        while (sp > line && *sp != ' ')
            sp--;
        if (strncmp(line, start, strlen(start)) != 0)
            continue;
        if (also == NULL || (strstr(line, also) != NULL && strstr(line, also) < sp))
            return strtod(sp + 1, NULL);
    }
    return -1;
}

static double of_tenant(const char *body, const char *name, const char *tenant, const char *also)
{
    char first[96];

    snprintf(first, sizeof(first), "tenant=\"%s\",", tenant);
    return value(body, name, first, also);
}

/* The tenant's calls of all procedures together. */
static double calls_of(const char *body, const char *tenant)
{
    char start[128];
    double sum = 0;

    snprintf(start, sizeof(start), "detshare_tenant_calls_total{tenant=\"%s\",", tenant);
    for (const char *l = strstr(body, start); l != NULL; l = strstr(l + 1, start))
        sum += strtod(strchr(l, '}') + 2, NULL);
    return sum;
}

/* ---- Tenants ---- */

static CUfunction fill_kernel(void)
{
    CUfunction f;

    CU_OK(cuModuleGetFunction(&f, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    return f;
}

static CUresult launches(CUfunction f, CUdeviceptr d, int count)
{
    int v = 1, n = 1;
    void *params[] = { &d, &v, &n };
    CUresult rc = CUDA_SUCCESS;

    for (int i = 0; i < count && rc == CUDA_SUCCESS; i++)
        rc = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
    return rc == CUDA_SUCCESS ? cuCtxSynchronize() : rc;
}

/* The second tenant: latency-critical, 3 MiB and 4 kernels. */
static int beta(void *arg)
{
    CUmodule m;
    CUfunction f;
    CUdeviceptr d;

    (void)arg;
    setenv("DETSHARE_TENANT", "beta", 1);
    setenv("DETSHARE_CLASS", "latency", 1);
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 3 << 20) != CUDA_SUCCESS ||
        cuModuleLoad(&m, DS_KERNEL_DIR "/launch.fatbin") != CUDA_SUCCESS ||
        cuModuleGetFunction(&f, m, "fill") != CUDA_SUCCESS)
        return 1;
    return launches(f, d, 4) == CUDA_SUCCESS ? 0 : 1;
}

TestSuite(metrics, .timeout = 120);

Test(metrics, tenants_appear_with_their_labels_and_counters_grow)
{
    static char out[BODY_MAX];
    struct ds_test_peer peer;
    double calls, sms;
    char *body;
    CUfunction f;
    CUdeviceptr d;

    start(0, "--policy shared");
    ds_test_peer_fork(&peer, beta, NULL);
    setenv("DETSHARE_TENANT", "alpha", 1);
    unsetenv("DETSHARE_CLASS");
    ds_test_ctx();
    f = fill_kernel();
    CU_OK(cuMemAlloc(&d, 1 << 20));
    CU_OK(launches(f, d, 5));
    ds_test_peer_join(&peer);

    body = scrape(out, sizeof(out));
    cr_expect_eq(value(body, "detshare_tenants", NULL, NULL), 2, "%s", body);
    cr_expect_geq(value(body, "detshare_tenants_served_total", NULL, NULL), 2);
    cr_expect_eq(value(body, "detshare_backend_info", "backend=\"", ds_test_device()), 1);
    cr_expect_eq(value(body, "detshare_policy_info", "policy=\"shared\"", NULL), 1);
    cr_expect_eq(of_tenant(body, "detshare_tenant_memory_used_bytes", "alpha",
                           "class=\"best-effort\""), 1 << 20, "%s", body);
    cr_expect_eq(of_tenant(body, "detshare_tenant_memory_used_bytes", "beta",
                           "class=\"latency\""), 3 << 20, "%s", body);
    cr_expect_geq(value(body, "detshare_device_memory_used_bytes", NULL, NULL), 4 << 20);
    /* The sim's setting, or on a GPU what the start-up probe read from the driver. */
    cr_expect_gt(value(body, "detshare_device_memory_bytes", NULL, NULL), 4 << 20, "%s", body);
    cr_expect_eq(of_tenant(body, "detshare_tenant_launches_total", "alpha", NULL), 5);
    cr_expect_eq(of_tenant(body, "detshare_tenant_launches_total", "beta", NULL), 4);
    cr_expect_eq(of_tenant(body, "detshare_tenant_calls_total", "alpha", "procedure=\"launch\""),
                 5, "%s", body);
    cr_expect_eq(of_tenant(body, "detshare_tenant_calls_total", "alpha",
                           "procedure=\"mem_alloc\""), 1);
    cr_expect_eq(of_tenant(body, "detshare_tenant_calls_total", "beta", "procedure=\"launch\""),
                 4);
    cr_expect_eq(of_tenant(body, "detshare_tenant_errors_total", "alpha", NULL), -1,
                 "errors without a failed call: %s", body);
    /* Under the shared policy every tenant runs on the whole device. */
    sms = value(body, "detshare_device_sms", NULL, NULL);
    cr_expect_gt(sms, 0);
    cr_expect_eq(of_tenant(body, "detshare_tenant_sms", "alpha", NULL), sms);
    cr_expect_eq(of_tenant(body, "detshare_tenant_gated_seconds_total", "alpha", NULL), 0);
    cr_expect_geq(of_tenant(body, "detshare_tenant_kernel_seconds_total", "alpha", NULL), 0,
                  "%s", body);
    cr_expect_eq(of_tenant(body, "detshare_tenant_throttled", "alpha", NULL), 0);
    cr_expect_eq(of_tenant(body, "detshare_tenant_migrations_total", "beta", NULL), 0);
    cr_expect_eq(of_tenant(body, "detshare_tenant_partition_escapes_total", "alpha", NULL), 0,
                 "%s", body);
    calls = calls_of(body, "alpha");

    /* More work, and a call that fails: the counters follow. */
    CU_OK(launches(f, d, 3));
    CU_IS(cuMemFree(d + 1), CUDA_ERROR_INVALID_VALUE);
    body = scrape(out, sizeof(out));
    cr_expect_eq(of_tenant(body, "detshare_tenant_launches_total", "alpha", NULL), 8);
    cr_expect_eq(of_tenant(body, "detshare_tenant_calls_total", "alpha", "procedure=\"launch\""),
                 8);
    cr_expect_geq(calls_of(body, "alpha"), calls + 5);
    cr_expect_eq(of_tenant(body, "detshare_tenant_errors_total", "alpha",
                           "procedure=\"mem_free\""), 1, "%s", body);
    cr_expect_eq(of_tenant(body, "detshare_tenant_launches_total", "beta", NULL), 4);
    /* Kernel time is what the control process's 5 ms samples saw: one has passed. */
    usleep(20000);
    body = scrape(out, sizeof(out));
    cr_expect_gt(of_tenant(body, "detshare_tenant_kernel_seconds_total", "alpha", NULL), 0,
                 "%s", body);

    /* A tenant that leaves leaves the metrics. */
    ds_test_peer_leave(&peer);
    for (int i = 0; i < 200 && value(scrape(out, sizeof(out)), "detshare_tenants", NULL, NULL)
                                   != 1; i++)
        usleep(10000);
    body = scrape(out, sizeof(out));
    cr_expect_eq(value(body, "detshare_tenants", NULL, NULL), 1);
    cr_expect_eq(of_tenant(body, "detshare_tenant_launches_total", "beta", NULL), -1);
    CU_OK(cuMemFree(d));
    ds_test_server_stop(&srv);
}

/* Scrape until series `name` of tenant `tenant` has value `want`, for up to 5 s;
 * returns the last body. */
static char *await_value(char *out, size_t len, const char *name, const char *tenant,
                         double want)
{
    char *body = scrape(out, len);

    for (int i = 0; i < 500 && of_tenant(body, name, tenant, NULL) != want; i++) {
        usleep(10000);
        body = scrape(out, len);
    }
    return body;
}

static int connect_tcp(const char *addr)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sin.sin_port = htons((uint16_t)atoi(strrchr(addr, ':') + 1));
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "%s", strerror(errno));
    return fd;
}

static int quiet(void *arg)
{
    (void)arg;
    setenv("DETSHARE_TENANT", "quiet", 1);
    return ds_test_connect() == CUDA_SUCCESS ? 0 : 1;
}

Test(metrics, a_policy_switch_and_a_refused_connection_show)
{
    static char out[BODY_MAX];
    struct ds_test_peer peer;
    char ctl[256], answer[512];
    CUfunction f;
    CUdeviceptr d;
    char *body;
    int fd;

    DS_SIM_ONLY(); /* its SM groups are the sim's 16 of 8 */
    start(1, "--policy static");
    ds_test_peer_fork(&peer, quiet, NULL);
    setenv("DETSHARE_TENANT", "gamma", 1);
    ds_test_ctx();
    f = fill_kernel();
    CU_OK(cuMemAlloc(&d, 4096));
    ds_test_peer_join(&peer);
    /* Two tenants under static: gamma moves to half the groups at its next kernel. */
    CU_OK(launches(f, d, 1));
    body = await_value(out, sizeof(out), "detshare_tenant_sms", "gamma", 64);
    cr_expect_eq(value(body, "detshare_policy_info", "policy=\"static\"", NULL), 1);
    cr_expect_eq(of_tenant(body, "detshare_tenant_sms", "gamma", NULL), 64, "%s", body);
    cr_expect_eq(of_tenant(body, "detshare_tenant_migrations_total", "gamma", NULL), 1);
    cr_assert_eq(ds_test_ctl(&srv, "policy shared", ctl, sizeof(ctl)), 0, "%s", ctl);
    CU_OK(launches(f, d, 1));
    body = await_value(out, sizeof(out), "detshare_tenant_sms", "gamma", 132);
    cr_expect_eq(value(body, "detshare_policy_info", "policy=\"shared\"", NULL), 1);
    cr_expect_eq(value(body, "detshare_policy_info", "policy=\"static\"", NULL), -1);
    cr_expect_eq(of_tenant(body, "detshare_tenant_sms", "gamma", NULL), 132, "%s", body);
    cr_expect_eq(of_tenant(body, "detshare_tenant_migrations_total", "gamma", NULL), 2);

    /* A TCP peer without a token preface is refused and counted. */
    cr_expect_eq(value(body, "detshare_tenants_refused_total", "reason=\"token\"", NULL), 0);
    fd = connect_tcp(srv.tcp_addr);
    send_all(fd, "\x80\x01", 2);
    read_to_end(fd, answer, sizeof(answer), 5000);
    close(fd);
    body = scrape(out, sizeof(out));
    cr_expect_eq(value(body, "detshare_tenants_refused_total", "reason=\"token\"", NULL), 1,
                 "%s", body);
    cr_expect_eq(value(body, "detshare_tenants", NULL, NULL), 2);
    ds_test_peer_leave(&peer);
    CU_OK(cuMemFree(d));
    ds_test_server_stop(&srv);
}

/* ---- Requests ---- */

Test(metrics, other_paths_methods_and_bad_requests_get_their_status)
{
    static char out[BODY_MAX];
    static char big[BIG_REQUEST];
    char *body;
    int fd;

    start(0, NULL);
    cr_expect_eq(request("GET / HTTP/1.1\r\n\r\n", out, sizeof(out), NULL), 404);
    cr_expect_eq(request("GET /metricsx HTTP/1.0\r\n\r\n", out, sizeof(out), NULL), 404);
    cr_expect_eq(request("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", out,
                         sizeof(out), NULL), 405);
    cr_expect_eq(request("HEAD /metrics HTTP/1.1\r\n\r\n", out, sizeof(out), &body), 200);
    cr_expect_eq(body[0], '\0', "HEAD got a body");
    cr_expect_eq(request("GET /metrics?x=1 HTTP/1.1\n\n", out, sizeof(out), NULL), 200);
    cr_expect_eq(request("garbage\r\n\r\n", out, sizeof(out), NULL), 400);
    cr_expect_eq(request("GET /metrics SPDY/3\r\n\r\n", out, sizeof(out), NULL), 400);
    cr_expect_eq(request("GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", out, sizeof(out),
                         NULL), 400);
    cr_expect_eq(exchange("GET /metrics HTTP/1.1\r\nX: a\0b\r\n\r\n", 32, out, sizeof(out),
                          NULL), 400);

    /* A scraper halfway through its request meanwhile is served all the same. */
    fd = connect_metrics();
    send_all(fd, "GET /metr", 9);
    memset(big, 'A', sizeof(big));
    cr_expect_eq(exchange(big, sizeof(big), out, sizeof(out), NULL), 400, "%.200s", out);
    cr_expect(strstr(out, "too large"), "%.200s", out);
    send_all(fd, "ics HTTP/1.1\r\n\r\n", 16);
    cr_assert_geq(read_to_end(fd, out, sizeof(out), 10000), 0);
    close(fd);
    cr_expect(strncmp(out, "HTTP/1.1 200 OK", 15) == 0, "%.200s", out);
    check_format(strstr(out, "\r\n\r\n") + 4);

    /* And tenants never noticed. */
    setenv("DETSHARE_TENANT", "delta", 1);
    ds_test_ctx();
    cr_expect_eq(of_tenant(scrape(out, sizeof(out)), "detshare_tenant_launches_total", "delta",
                           NULL), 0);
    ds_test_server_stop(&srv);
}

static double since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

Test(metrics, silent_clients_do_not_block_a_scrape)
{
    static char out[BODY_MAX];
    int idle[40], silent;
    struct timespec t0;
    double took;

    start(0, NULL);
    silent = connect_metrics();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    scrape(out, sizeof(out));
    took = since(&t0);
    cr_expect_lt(took, 2.0, "a scrape beside a silent client took %.2f s", took);
    /* The silent one is dropped after the timeout, not before. */
    cr_assert_geq(read_to_end(silent, out, sizeof(out), 15000), 0, "never dropped");
    took = since(&t0);
    close(silent);
    cr_expect_geq(took, 4.0, "dropped after %.2f s", took);
    cr_expect_lt(took, 12.0, "dropped after %.2f s", took);

    /* More idle connections than the endpoint keeps: a scraper still gets in. */
    for (int i = 0; i < 40; i++)
        idle[i] = connect_metrics();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    scrape(out, sizeof(out));
    cr_expect_lt(since(&t0), 2.0, "a scrape behind 40 idle clients took %.2f s", since(&t0));
    for (int i = 0; i < 40; i++)
        close(idle[i]);
    ds_test_server_stop(&srv);
}

/* A scraper whose request is on its way when a flood of silent connections arrives
 * keeps its place: the flood's own oldest make room (1 scrape in 70 failed while the
 * endpoint was flooded, when the oldest connection went whatever it was doing). */
Test(metrics, a_flood_does_not_cut_a_scrape_in_progress)
{
    static char out[BODY_MAX];
    static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    int idle[DS_TEST_FLOOD], scraper;
    long n;

    start(0, NULL);
    scraper = connect_metrics();
    send_all(scraper, req, 10);
    usleep(100000);
    for (int i = 0; i < DS_TEST_FLOOD; i++)
        idle[i] = connect_metrics();
    usleep(100000);
    send_all(scraper, req + 10, strlen(req) - 10);
    n = read_to_end(scraper, out, sizeof(out), 5000);
    cr_assert_gt(n, 0, "the scrape was cut by the flood");
    cr_assert_not_null(strstr(out, "200 OK"), "%.200s", out);
    cr_assert_not_null(strstr(out, "detshare_tenants "), "%.200s", out);
    close(scraper);
    for (int i = 0; i < DS_TEST_FLOOD; i++)
        close(idle[i]);
    ds_test_server_stop(&srv);
}

Test(metrics, served_on_a_unix_socket)
{
    static char out[BODY_MAX];
    char dir[64] = "/tmp/dsmetrics.XXXXXX", args[200];

    cr_assert_not_null(mkdtemp(dir));
    port = 0;
    snprintf(unix_path, sizeof(unix_path), "%s/metrics.sock", dir);
    snprintf(args, sizeof(args), "--metrics unix:%s", unix_path);
    ds_test_server_start(&srv, 0, args);
    cr_expect_eq(value(scrape(out, sizeof(out)), "detshare_tenants", NULL, NULL), 0);
    cr_expect_eq(request("GET /nothing HTTP/1.1\r\n\r\n", out, sizeof(out), NULL), 404);
    ds_test_server_stop(&srv);
    cr_expect_neq(access(unix_path, F_OK), 0, "the socket file was left behind");
    ds_test_remove_tree(dir);
}

/* ---- Starting ---- */

/* The server's exit status with `args`, its output in out. */
static int server_exit(const char *args, char *out, size_t len)
{
    char cmd[1024];
    FILE *p;
    size_t n;

    snprintf(cmd, sizeof(cmd),
             "timeout 20 %s --device sim --mps off --warm 0 --admin none "
             "--listen unix:/tmp/dsmetrics-%d.sock %s 2>&1",
             DS_SERVER_BIN, (int)getpid(), args);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return WEXITSTATUS(pclose(p));
}

Test(metrics, a_bad_address_stops_the_start)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    socklen_t slen = sizeof(sin);
    char out[4096], args[128];
    int taken = socket(AF_INET, SOCK_STREAM, 0);

    cr_expect_eq(server_exit("--metrics 127.0.0.1:9100", out, sizeof(out)), 2, "%s", out);
    cr_expect(strstr(out, "--metrics takes tcp:HOST:PORT or unix:PATH"), "%s", out);
    cr_expect_eq(server_exit("--metrics tcp:no-such-host.invalid:9100", out, sizeof(out)), 1,
                 "%s", out);
    cr_expect(strstr(out, "cannot serve metrics on tcp:no-such-host.invalid:9100"), "%s", out);
    /* A port another program listens on. */
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(taken, (struct sockaddr *)&sin, sizeof(sin)), 0);
    cr_assert_eq(listen(taken, 1), 0);
    cr_assert_eq(getsockname(taken, (struct sockaddr *)&sin, &slen), 0);
    snprintf(args, sizeof(args), "--metrics tcp:127.0.0.1:%d", ntohs(sin.sin_port));
    cr_expect_eq(server_exit(args, out, sizeof(out)), 1, "%s", out);
    cr_expect(strstr(out, "cannot serve metrics on tcp:127.0.0.1:"), "%s", out);
    cr_expect(strstr(out, "address already in use"), "%s", out);
    close(taken);
}
