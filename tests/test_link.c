/* JIT linking (cuLink*): inputs gathered by the client, linked by the executor's device,
 * the image handed back and loadable.  On the sim, which has no JIT compiler and no
 * linker, one cubin (or one fatbin's sm_90 cubin) links to itself and anything else fails
 * with the reason in the error log; on a GPU, two files and PTX link and run. */
#include "ds_test.h"
#include "detshare.h"

#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(link, .init = start, .fini = stop, .timeout = 60);

static const char *kernel(const char *name)
{
    static char path[512];

    snprintf(path, sizeof(path), "%s/%s", DS_KERNEL_DIR, name);
    return path;
}

static void *slurp(const char *name, size_t *len)
{
    FILE *f = fopen(kernel(name), "rb");
    void *buf;

    cr_assert_not_null(f, "%s", kernel(name));
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(*len);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

/* A link whose logs land in info and error, with their filled sizes and the wall time. */
struct logs {
    char info[4096], error[4096];
    CUjit_option opt[5];
    void *val[5];
};

static CUlinkState create(struct logs *g, size_t error_size)
{
    CUlinkState st;

    memset(g, 0x5a, sizeof(*g));
    g->opt[0] = CU_JIT_INFO_LOG_BUFFER;
    g->val[0] = g->info;
    g->opt[1] = CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES;
    g->val[1] = (void *)(uintptr_t)sizeof(g->info);
    g->opt[2] = CU_JIT_ERROR_LOG_BUFFER;
    g->val[2] = g->error;
    g->opt[3] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
    g->val[3] = (void *)(uintptr_t)error_size;
    g->opt[4] = CU_JIT_WALL_TIME;
    g->val[4] = NULL;
    CU_OK(cuLinkCreate(5, g->opt, g->val, &st));
    return st;
}

/* Launch apply(out, 21) of module m and return *out. */
static int run_apply(CUmodule m)
{
    CUfunction f;
    CUdeviceptr d;
    int v = 21, out = 0;
    void *args[] = { &d, &v };

    CU_OK(cuModuleGetFunction(&f, m, "apply"));
    CU_OK(cuMemAlloc(&d, sizeof(int)));
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CU_OK(cuMemcpyDtoH(&out, d, sizeof(out)));
    CU_OK(cuMemFree(d));
    return out;
}

Test(link, one_cubin_links_to_a_loadable_image)
{
    struct logs g;
    CUlinkState st;
    CUmodule m;
    CUfunction f;
    void *image, *file;
    size_t size = 0, len;

    ds_test_ctx();
    st = create(&g, sizeof(g.error));
    CU_OK(cuLinkAddFile(st, CU_JIT_INPUT_CUBIN, kernel("launch_rdc.cubin"), 0, NULL, NULL));
    CU_OK(cuLinkComplete(st, &image, &size));
    cr_assert_gt(size, 0);
    cr_assert_eq(strlen(g.error), 0, "error log: %s", g.error);
    if (ds_test_on_sim()) {
        file = slurp("launch_rdc.cubin", &len);
        cr_assert_eq(size, len);
        cr_assert_eq(memcmp(image, file, len), 0, "the sim's link of one cubin is that cubin");
        free(file);
    }
    CU_OK(cuModuleLoadData(&m, image));
    CU_OK(cuModuleGetFunction(&f, m, "echo"));
    CU_OK(cuLinkDestroy(st));
    CU_OK(cuModuleUnload(m));
}

Test(link, one_fatbin_links_to_its_cubin)
{
    struct logs g;
    CUlinkState st;
    CUmodule m;
    CUfunction f;
    void *image, *fatbin;
    size_t size = 0, len;

    ds_test_ctx();
    fatbin = slurp("launch_rdc.fatbin", &len);
    st = create(&g, sizeof(g.error));
    CU_OK(cuLinkAddData(st, CU_JIT_INPUT_FATBINARY, fatbin, len, "launch", 0, NULL, NULL));
    free(fatbin);
    CU_OK(cuLinkComplete(st, &image, &size));
    cr_assert_eq(((unsigned char *)image)[0], 0x7f, "not an ELF image");
    cr_assert_eq(memcmp(image, "\x7f" "ELF", 4), 0);
    CU_OK(cuModuleLoadData(&m, image));
    CU_OK(cuModuleGetFunction(&f, m, "echo"));
    CU_OK(cuLinkDestroy(st));
}

Test(link, two_cubins_link_where_there_is_a_linker)
{
    struct logs g;
    CUlinkState st;
    CUmodule m;
    void *image;
    size_t size = 0;

    ds_test_ctx();
    st = create(&g, sizeof(g.error));
    CU_OK(cuLinkAddFile(st, CU_JIT_INPUT_CUBIN, kernel("link_main.cubin"), 0, NULL, NULL));
    CU_OK(cuLinkAddFile(st, CU_JIT_INPUT_CUBIN, kernel("link_lib.cubin"), 0, NULL, NULL));
    if (ds_test_on_sim()) {
        CU_IS(cuLinkComplete(st, &image, &size), CUDA_ERROR_NOT_SUPPORTED);
        cr_assert_not_null(strstr(g.error, "no linker"), "error log: %s", g.error);
        cr_assert_eq((uintptr_t)g.val[3], strlen(g.error) + 1, "the filled size is not told");
        CU_OK(cuLinkDestroy(st));
        return;
    }
    CU_OK(cuLinkComplete(st, &image, &size));
    CU_OK(cuModuleLoadData(&m, image));
    CU_OK(cuLinkDestroy(st));
    cr_assert_eq(run_apply(m), 42);
    CU_OK(cuModuleUnload(m));
}

Test(link, ptx_is_compiled_where_there_is_a_jit)
{
    struct logs g;
    CUlinkState st;
    CUmodule m;
    CUjit_option o = CU_JIT_OPTIMIZATION_LEVEL;
    void *v = (void *)(uintptr_t)3, *image, *ptx;
    size_t size = 0, len;

    ds_test_ctx();
    ptx = slurp("link_lib.ptx", &len); /* no NUL: the client adds it */
    st = create(&g, 24);
    CU_OK(cuLinkAddFile(st, CU_JIT_INPUT_CUBIN, kernel("link_main.cubin"), 0, NULL, NULL));
    CU_OK(cuLinkAddData(st, CU_JIT_INPUT_PTX, ptx, len, "link_lib.ptx", 1, &o, &v));
    free(ptx);
    if (ds_test_on_sim()) {
        CU_IS(cuLinkComplete(st, &image, &size), CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
        /* Cut to the buffer's 24 bytes, as the driver cuts a log. */
        cr_assert_eq(strlen(g.error), 23, "error log: %s", g.error);
        cr_assert_eq(strncmp(g.error, "error: link_lib.ptx: the", 23), 0, "%s", g.error);
        cr_assert_str_eq(g.info, "");
        CU_OK(cuLinkDestroy(st));
        return;
    }
    CU_OK(cuLinkComplete(st, &image, &size));
    CU_OK(cuModuleLoadData(&m, image));
    CU_OK(cuLinkDestroy(st));
    cr_assert_eq(run_apply(m), 42);
    cr_assert_eq(strlen(g.error), 0, "error log: %s", g.error);
}

Test(link, bad_inputs_and_states_are_refused)
{
    static const char junk[64] = "not an image at all";
    CUjit_option o = CU_JIT_GLOBAL_SYMBOL_ADDRESSES;
    void *v = NULL;
    CUlinkState st;

    ds_test_ctx();
    CU_IS(cuLinkCreate(1, &o, &v, &st), CUDA_ERROR_NOT_SUPPORTED);
    o = (CUjit_option)9999;
    CU_IS(cuLinkCreate(1, &o, &v, &st), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuLinkCreate(0, NULL, NULL, &st));
    CU_IS(cuLinkAddData(st, CU_JIT_INPUT_CUBIN, (void *)junk, sizeof(junk), NULL, 0, NULL,
                        NULL), CUDA_ERROR_INVALID_IMAGE);
    CU_IS(cuLinkAddData(st, (CUjitInputType)77, (void *)junk, sizeof(junk), NULL, 0, NULL,
                        NULL), CUDA_ERROR_INVALID_IMAGE);
    CU_IS(cuLinkAddFile(st, CU_JIT_INPUT_CUBIN, "/nonexistent/x.cubin", 0, NULL, NULL),
          CUDA_ERROR_FILE_NOT_FOUND);
    o = CU_JIT_WALL_TIME;
    CU_IS(cuLinkAddFile(st, CU_JIT_INPUT_CUBIN, kernel("launch_rdc.cubin"), 1, &o, &v),
          CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuLinkComplete(st, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuLinkDestroy(st));
    CU_IS(cuLinkDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuLinkAddData((CUlinkState)&o, CU_JIT_INPUT_CUBIN, (void *)junk, 1, NULL, 0, NULL,
                        NULL), CUDA_ERROR_INVALID_HANDLE);
}

/* DS_LINK as a hostile tenant would send it, not as the client does. */
static CUresult raw_link(CLIENT *c, ds_link_args *a, int *had_logs)
{
    struct timeval wait = { .tv_sec = 5 };
    ds_link_res r;
    CUresult rc;

    memset(&r, 0, sizeof(r));
    cr_assert_eq(clnt_call(c, DS_LINK, (xdrproc_t)xdr_ds_link_args, (char *)a,
                           (xdrproc_t)xdr_ds_link_res, (char *)&r, wait),
                 RPC_SUCCESS);
    rc = (CUresult)r.err;
    *had_logs = rc != CUDA_SUCCESS && r.ds_link_res_u.logs != NULL;
    xdr_free((xdrproc_t)xdr_ds_link_res, (char *)&r);
    return rc;
}

Test(link, the_executor_checks_what_the_client_would_have)
{
    struct timeval wait = { .tv_sec = 5 };
    ds_hello_args h = { .proto_version = DS_PROTO_VERSION, .tenant = "linker",
                        .klass = DS_CLASS_BEST_EFFORT };
    ds_hello_res hr;
    char ptx[] = ".version 8.0"; /* its NUL is not sent */
    ds_link_input in = { .type = CU_JIT_INPUT_PTX, .name = "x",
                         .data = { .data_len = (u_int)strlen(ptx), .data_val = ptx } };
    ds_link_option bad = { .option = CU_JIT_GLOBAL_SYMBOL_ADDRESSES, .value = 0x1000 };
    ds_link_args a = { .inputs = { 1, &in } };
    int fd = ds_test_raw_connect(&srv, "linker"), logs;
    CLIENT *c;

    c = clnt_vc_create(fd, &(struct netbuf){ 0 }, DS_PROG, DS_V1, 0, 0);
    cr_assert_not_null(c);
    cr_assert_eq(raw_link(c, &a, &logs), CUDA_ERROR_NOT_INITIALIZED);
    cr_assert_not(logs, "a refused call has no logs");
    memset(&hr, 0, sizeof(hr));
    cr_assert_eq(clnt_call(c, DS_HELLO, (xdrproc_t)xdr_ds_hello_args, (char *)&h,
                           (xdrproc_t)xdr_ds_hello_res, (char *)&hr, wait),
                 RPC_SUCCESS);
    cr_assert_eq(hr.err, CUDA_SUCCESS);
    xdr_free((xdrproc_t)xdr_ds_hello_res, (char *)&hr);
    cr_assert_eq(raw_link(c, &a, &logs), CUDA_ERROR_INVALID_IMAGE, "PTX read past its end");
    cr_assert(logs);
    in.type = CU_JIT_NUM_INPUT_TYPES;
    cr_assert_eq(raw_link(c, &a, &logs), CUDA_ERROR_INVALID_IMAGE);
    in.type = CU_JIT_INPUT_CUBIN;
    cr_assert_eq(raw_link(c, &a, &logs), CUDA_ERROR_INVALID_IMAGE);
    in.type = CU_JIT_INPUT_PTX;
    in.data.data_len++;
    a.options.options_len = 1;
    a.options.options_val = &bad;
    cr_assert_eq(raw_link(c, &a, &logs), CUDA_ERROR_INVALID_VALUE, "a host pointer went in");
    a.options.options_len = 0;
    a.error_log_size = DS_LINK_LOG_MAX + 1;
    cr_assert_eq(raw_link(c, &a, &logs), CUDA_ERROR_INVALID_VALUE);
    clnt_destroy(c);
    close(fd);
}
