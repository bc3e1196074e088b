/* detshare-server as an operator meets it: options, errors, start and stop. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int run(const char *args, char *out, size_t len)
{
    char cmd[1024];
    FILE *p;
    size_t n;
    int status;

    snprintf(cmd, sizeof(cmd), "%s %s 2>&1", DS_SERVER_BIN, args);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(server, help_and_bad_options)
{
    char out[8192];

    cr_assert_eq(run("--help", out, sizeof(out)), 0);
    cr_assert(strstr(out, "--listen") && strstr(out, "--sim-memory"));
    cr_assert_eq(run("--bogus", out, sizeof(out)), 2);
    cr_assert_eq(run("--listen nowhere", out, sizeof(out)), 2);
    cr_assert(strstr(out, "--listen"), "%s", out);
    cr_assert_eq(run("--sim-memory lots", out, sizeof(out)), 2);
    cr_assert_eq(run("--device quantum", out, sizeof(out)), 2);
    cr_assert(strstr(out, "expected sim, cuda or auto"), "%s", out);
}

Test(server, an_unusable_gpu_is_refused_with_the_reason)
{
    char out[4096];

    cr_assert_eq(run("--device cuda --gpu 999 --listen unix:/tmp/ds-never.sock", out,
                     sizeof(out)), 2);
    cr_assert(strstr(out, "GPU 999 cannot be used"), "%s", out);
}

Test(server, a_second_server_on_the_same_socket_is_refused)
{
    struct ds_test_server s;
    char out[4096], args[256];

    ds_test_server_start(&s, 0, NULL);
    snprintf(args, sizeof(args), "--device sim --listen unix:%s", s.sock);
    cr_assert_eq(run(args, out, sizeof(out)), 1);
    cr_assert(strstr(out, "already listening"), "%s", out);
    ds_test_server_stop(&s);
}

Test(server, a_stale_socket_file_is_replaced)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct ds_test_server s;
    int fd;

    ds_test_server_start(&s, 0, NULL);
    ds_test_server_stop(&s);
    /* Leave a socket file with nobody behind it, as a crashed server would. */
    cr_assert_eq(mkdir(s.dir, 0700), 0);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", s.sock);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    close(fd);
    cr_assert_eq(access(s.sock, F_OK), 0);
    ds_test_server_start(&s, 0, NULL);
    CU_OK(cuInit(0));
    ds_test_server_stop(&s);
}

Test(server, sigterm_closes_connected_tenants_and_exits_zero)
{
    struct ds_test_server s;
    CUdeviceptr d;

    ds_test_server_start(&s, 0, NULL);
    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 1 << 20));
    ds_test_server_stop(&s); /* asserts exit status 0 */
    CU_IS(cuMemAlloc(&d, 1 << 20), CUDA_ERROR_DEVICE_UNAVAILABLE);
    CU_IS(cuCtxSynchronize(), CUDA_ERROR_DEVICE_UNAVAILABLE);
}
