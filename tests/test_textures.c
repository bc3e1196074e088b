/* CUDA arrays, texture and surface objects from the CUDA runtime, on a GPU only (gpu
 * label: kernels compute nothing on the sim): examples/textures.cu fills a 2-D cudaArray,
 * reads it through tex2D with point filtering (compared exactly with the texels) and
 * linear filtering (compared with bilinear interpolation within the 8-bit weights'
 * bound), and through surface objects (exact).  The program runs natively on the real
 * driver and through detshare (static and shared cudart), and their outputs, the linear
 * results' hash included, must be the same byte for byte. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(textures, .init = start, .fini = stop, .timeout = 300);

/* Run examples/<name>, through detshare's libcuda when `detshare`, else on the system's
 * driver; its stdout into out, its exit status returned. */
static int run(const char *name, int detshare, char *out, size_t len)
{
    char cmd[1024];
    FILE *p;
    size_t n;
    int status;

    snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH=%s%s%s:$LD_LIBRARY_PATH %s/%s",
             detshare ? DS_CLIENT_DIR : "", detshare ? ":" : "", DS_CUDART_DIR,
             DS_EXAMPLE_DIR, name);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(textures, tex2d_and_surfaces_match_the_host_and_a_native_run)
{
    static const char *const names[] = { "textures", "textures_shared" };
    char native[4096], through[4096];

    cr_assert_eq(run("textures", 0, native, sizeof(native)), 0, "natively:\n%s", native);
    cr_assert(strstr(native, "point filtering of 64x48 floats: exact"), "%s", native);
    cr_assert(strstr(native, "within the 8-bit weights' bound"), "%s", native);
    cr_assert(strstr(native, "surf2Dread/surf2Dwrite: exact"), "%s", native);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(run(names[i], 1, through, sizeof(through)), 0, "%s:\n%s", names[i],
                     through);
        cr_assert_str_eq(through, native, "%s through detshare differs from native", names[i]);
    }
}
