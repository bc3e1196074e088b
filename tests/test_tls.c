/*
 * TLS tenants (docs/security.md, "TLS"): a tenant that trusts the server's certificate
 * runs a kernel and copies byte-exact through a server with --tls-cert, over a stream
 * its executor protects without having shaken hands; a cleartext tenant of a
 * --tls-only server, and a tenant whose CA did not sign the server's certificate, are
 * refused with a line saying why.  The test makes its own certificates with openssl(1).
 */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;
static char dir[] = "/tmp/ds-tls-XXXXXX";
static char cert[128], key[128], other[128], args[512];

/* A self-signed certificate for 127.0.0.1 at dir/NAME.pem, its key at dir/NAME.key. */
static void make_cert(const char *name)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
             "-days 3650 -subj /CN=detshare-test -addext subjectAltName=IP:127.0.0.1 "
             "-keyout %s/%s.key -out %s/%s.pem 2>/dev/null",
             dir, name, dir, name);
    cr_assert_eq(system(cmd), 0, "openssl could not make a certificate");
}

static void start(const char *extra)
{
    cr_assert_not_null(mkdtemp(dir));
    make_cert("server");
    make_cert("other");
    snprintf(cert, sizeof(cert), "%s/server.pem", dir);
    snprintf(key, sizeof(key), "%s/server.key", dir);
    snprintf(other, sizeof(other), "%s/other.pem", dir);
    snprintf(args, sizeof(args), "--tls-cert %s --tls-key %s %s", cert, key, extra);
    setenv("DETSHARE_LOG", "debug", 1);
    ds_test_server_start(&srv, 1, args);
    setenv("DETSHARE_SERVER", srv.tcp_addr, 1);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

/* Run fn in a child whose stderr goes to dir/stderr; returns its exit status. */
static int in_child(int (*fn)(void))
{
    char path[160];
    int status;
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        snprintf(path, sizeof(path), "%s/stderr", dir);
        if (freopen(path, "w", stderr) == NULL)
            _exit(20);
        _exit(fn());
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the tenant died: status %d", status);
    return WEXITSTATUS(status);
}

/* Whether the child's stderr says `what`. */
static int stderr_says(const char *what)
{
    char path[160], buf[4096] = "";
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/stderr", dir);
    f = fopen(path, "r");
    cr_assert_not_null(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    cr_log_info("tenant's stderr: %s", buf);
    return strstr(buf, what) != NULL;
}

/* Copy n bytes (records of every size, a chunk boundary and a tail) both ways and fill
 * with a kernel: 0 when every byte is right, else the step that failed. */
static int kernel_and_copies(void)
{
    const size_t n = (5u << 20) + 16390;
    unsigned char *h = malloc(n), *back = malloc(n);
    int v = 7, count = 1000, out[1000];
    CUdeviceptr d, k;
    CUfunction fill;
    CUmodule m;
    void *params[] = { &k, &v, &count };

    if (h == NULL || back == NULL || ds_test_connect() != CUDA_SUCCESS)
        return 1;
    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned char)(i * 131 + (i >> 14));
    if (cuModuleLoad(&m, DS_KERNEL_DIR "/launch.fatbin") != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, m, "fill") != CUDA_SUCCESS ||
        cuMemAlloc(&d, n) != CUDA_SUCCESS || cuMemAlloc(&k, sizeof(out)) != CUDA_SUCCESS)
        return 2;
    if (cuMemcpyHtoD(d, h, n) != CUDA_SUCCESS || cuMemcpyDtoH(back, d, n) != CUDA_SUCCESS)
        return 3;
    if (memcmp(h, back, n) != 0)
        return 4;
    if (cuLaunchKernel(fill, 4, 1, 1, 256, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
        cuCtxSynchronize() != CUDA_SUCCESS || cuMemcpyDtoH(out, k, sizeof(out)) != CUDA_SUCCESS)
        return 5;
    /* The sim runs no kernel code (docs/sim-device.md); a GPU does. */
    for (int i = 0; !ds_test_on_sim() && i < count; i++)
        if (out[i] != v + i)
            return 6;
    return 0;
}

static int trusting_tenant(void)
{
    setenv("DETSHARE_TLS_CA", cert, 1);
    return kernel_and_copies();
}

Test(tls, a_tls_tenant_runs_a_kernel_and_copies_byte_exact, .timeout = 180)
{
    int rc;

    start("");
    rc = in_child(trusting_tenant);
    cr_assert_eq(rc, 0, "the TLS tenant failed at step %d (see its stderr)", rc);
    for (int i = 0; i < 100 && !ds_test_log_has(&srv, "TLS tenant: the kernel protects"); i++)
        usleep(20000);
    cr_expect(ds_test_log_has(&srv, "TLS tenant: the kernel protects"),
              "the executor did not protect the stream");
    stop();
}

static int cleartext_tenant(void)
{
    unsetenv("DETSHARE_TLS_CA");
    unsetenv("DETSHARE_TLS");
    return ds_test_connect() == CUDA_ERROR_NO_DEVICE ? 0 : 1;
}

Test(tls, a_cleartext_tenant_is_refused_under_tls_only, .timeout = 120)
{
    start("--tls-only");
    cr_assert_eq(in_child(cleartext_tenant), 0, "cuInit did not fail with NO_DEVICE");
    cr_expect(stderr_says("refused this tenant: this server takes TCP tenants only over TLS"));
    cr_expect(ds_test_log_has(&srv, "only over TLS"), "the server did not log the refusal");
    cr_expect_eq(in_child(trusting_tenant), 0, "a TLS tenant failed under --tls-only");
    stop();
}

static int wrong_ca_tenant(void)
{
    setenv("DETSHARE_TLS_CA", other, 1);
    return ds_test_connect() == CUDA_ERROR_NO_DEVICE ? 0 : 1;
}

Test(tls, a_server_whose_certificate_the_ca_did_not_sign_is_refused, .timeout = 120)
{
    start("");
    cr_assert_eq(in_child(wrong_ca_tenant), 0, "cuInit did not fail with NO_DEVICE");
    cr_expect(stderr_says("the server's certificate is not trusted"));
    stop();
}
