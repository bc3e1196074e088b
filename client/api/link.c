/*
 * JIT linking (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete,
 * cuLinkDestroy).  The link state lives here: it gathers the inputs (a file is read in
 * the tenant, whose files the executor cannot see) and sends them all at cuLinkComplete
 * (DS_LINK, rpcgen/detshare.x); the executor links with the device's linker and returns
 * the image, which stays here until cuLinkDestroy, as the driver's does.
 *
 * So an input the linker rejects (PTX that does not compile) fails cuLinkComplete, not
 * the cuLinkAddData that added it; the error log says which input it was.  The log
 * buffers, their filled sizes and the wall time of cuLinkCreate's options are written
 * at cuLinkComplete, which is when the driver has written them all too.
 */
#include "cuda_api.h"

#include "ctx.h"
#include "ds_image.h"
#include "ds_jit.h"
#include "module.h"
#include "rpc.h"

#include <stdlib.h>
#include <string.h>

#define LINK_MAGIC 0x64734c6bu

struct ds_clink {
    uint32_t magic;
    ds_link_args a; /* options and inputs so far; the logs' sizes */
    char *info_log, *error_log; /* the tenant's buffers */
    size_t info_size, error_size;
    void **info_filled, **error_filled, **wall; /* slots of its optionValues */
    ds_link_res res; /* the last completion's: its image lives until cuLinkDestroy */
    int completed;
};

static struct ds_clink *link_of(CUlinkState state)
{
    struct ds_clink *l = (struct ds_clink *)state;

    return l != NULL && l->magic == LINK_MAGIC ? l : NULL;
}

/* The logs and the wall time, which only cuLinkCreate takes; 0, or a CUresult when o is
 * none of them. */
static CUresult output_option(struct ds_clink *l, CUjit_option o, void **v)
{
    switch (o) {
    case CU_JIT_INFO_LOG_BUFFER:
        l->info_log = *v;
        return CUDA_SUCCESS;
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        l->info_size = (size_t)(uintptr_t)*v;
        l->info_filled = v;
        return CUDA_SUCCESS;
    case CU_JIT_ERROR_LOG_BUFFER:
        l->error_log = *v;
        return CUDA_SUCCESS;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        l->error_size = (size_t)(uintptr_t)*v;
        l->error_filled = v;
        return CUDA_SUCCESS;
    case CU_JIT_WALL_TIME:
        l->wall = v;
        return CUDA_SUCCESS;
    default:
        /* Symbol tables and referenced names hold pointers into this process. */
        return o >= 0 && o < CU_JIT_NUM_OPTIONS ? CUDA_ERROR_NOT_SUPPORTED
                                                 : CUDA_ERROR_INVALID_VALUE;
    }
}

/* The numeric options among n into *out (malloc'd); the others go to l when l is
 * given (cuLinkCreate), and are refused when not (an input's). */
static CUresult options_of(struct ds_clink *l, unsigned n, CUjit_option *opt, void **val,
                           ds_link_option **out, u_int *len)
{
    CUresult rc = CUDA_SUCCESS;

    *out = NULL;
    *len = 0;
    if (n == 0)
        return CUDA_SUCCESS;
    if (opt == NULL || val == NULL || n > DS_LINK_OPTIONS_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if ((*out = calloc(n, sizeof(**out))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < n && rc == CUDA_SUCCESS; i++)
        if (ds_jit_scalar_option(opt[i])) {
            (*out)[*len].option = (int)opt[i];
            (*out)[(*len)++].value = (uint64_t)(uintptr_t)val[i];
        } else {
            rc = l != NULL ? output_option(l, opt[i], &val[i]) : CUDA_ERROR_INVALID_VALUE;
        }
    return rc;
}

static void link_free(struct ds_clink *l)
{
    if (l->completed)
        ds__rpc_free((xdrproc_t)xdr_ds_link_res, &l->res);
    xdr_free((xdrproc_t)xdr_ds_link_args, (char *)&l->a);
    l->magic = 0;
    free(l);
}

CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
                         CUlinkState *stateOut)
{
    struct ds_clink *l;
    uint64_t ctx;
    CUresult rc;

    DS_NEED_INIT();
    if (stateOut == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__ctx_current(&ctx) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->magic = LINK_MAGIC;
    rc = options_of(l, numOptions, options, optionValues, &l->a.options.options_val,
                    &l->a.options.options_len);
    if (rc != CUDA_SUCCESS) {
        link_free(l);
        return rc;
    }
    l->info_size = l->info_log != NULL ? l->info_size : 0;
    l->error_size = l->error_log != NULL ? l->error_size : 0;
    l->a.info_log_size = (u_int)(l->info_size < DS_LINK_LOG_MAX ? l->info_size : DS_LINK_LOG_MAX);
    l->a.error_log_size =
        (u_int)(l->error_size < DS_LINK_LOG_MAX ? l->error_size : DS_LINK_LOG_MAX);
    *stateOut = (CUlinkState)l;
    return CUDA_SUCCESS;
}

/* An input's bytes must be what its type says, as far as the client can tell. */
static int plausible(CUjitInputType type, const void *data, size_t size)
{
    enum ds_image_kind kind;
    size_t n;

    if (type == CU_JIT_INPUT_CUBIN || type == CU_JIT_INPUT_FATBINARY)
        return ds_image_identify(data, size, &kind, NULL, &n) == 0 && n <= size &&
               kind == (type == CU_JIT_INPUT_CUBIN ? DS_IMAGE_ELF : DS_IMAGE_FATBIN);
    return (int)type >= 0 && type < CU_JIT_NUM_INPUT_TYPES;
}

/* A copy of the input; PTX gets the NUL it is read up to, whether size counted it or not. */
static CUresult add(struct ds_clink *l, CUjitInputType type, const void *data, size_t size,
                    const char *name, unsigned n, CUjit_option *opt, void **val)
{
    int nul = type == CU_JIT_INPUT_PTX && ((const char *)data)[size - 1] != '\0';
    u_int i = l->a.inputs.inputs_len;
    ds_link_input *in, *grown;
    CUresult rc;

    if (i >= DS_LINK_INPUTS_MAX || size + nul > DS_IMAGE_WIRE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (!plausible(type, data, size))
        return CUDA_ERROR_INVALID_IMAGE;
    grown = realloc(l->a.inputs.inputs_val, (i + 1) * sizeof(*grown));
    if (grown == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->a.inputs.inputs_val = grown;
    in = memset(&grown[i], 0, sizeof(*in));
    in->type = (int)type;
    in->name = strdup(name != NULL ? name : "");
    in->data.data_val = malloc(size + (size_t)nul);
    if (in->name == NULL || in->data.data_val == NULL) {
        xdr_free((xdrproc_t)xdr_ds_link_input, (char *)in);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(in->data.data_val, data, size);
    if (nul)
        in->data.data_val[size] = '\0';
    in->data.data_len = (u_int)(size + (size_t)nul);
    rc = options_of(NULL, n, opt, val, &in->options.options_val, &in->options.options_len);
    if (rc != CUDA_SUCCESS) {
        xdr_free((xdrproc_t)xdr_ds_link_input, (char *)in);
        return rc;
    }
    l->a.inputs.inputs_len = i + 1;
    return CUDA_SUCCESS;
}

CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
                          const char *name, unsigned int numOptions, CUjit_option *options,
                          void **optionValues)
{
    struct ds_clink *l = link_of(state);

    DS_NEED_INIT();
    if (l == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (data == NULL || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return add(l, type, data, size, name, numOptions, options, optionValues);
}

CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
                          unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    struct ds_clink *l = link_of(state);
    size_t len = 0;
    void *data;
    CUresult rc;

    DS_NEED_INIT();
    if (l == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (path == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((data = ds__module_read_file(path, &len)) == NULL)
        return CUDA_ERROR_FILE_NOT_FOUND;
    rc = len > 0 ? add(l, type, data, len, path, numOptions, options, optionValues)
                 : CUDA_ERROR_INVALID_IMAGE;
    free(data);
    return rc;
}

/* Copy a log into the tenant's buffer and say how much of it was filled. */
static void put_log(const char *log, char *buf, size_t size, void **filled)
{
    size_t n = strlen(log);

    if (buf == NULL || size == 0)
        return;
    if (n >= size)
        n = size - 1;
    memcpy(buf, log, n);
    buf[n] = '\0';
    *filled = (void *)(uintptr_t)(n > 0 ? n + 1 : 0);
}

/* logs may be NULL: the executor refused the call before linking. */
static void put_outputs(struct ds_clink *l, const ds_link_logs *logs)
{
    float ms = logs != NULL ? logs->wall_ms : 0;

    put_log(logs != NULL ? logs->info_log : "", l->info_log, l->info_size, l->info_filled);
    put_log(logs != NULL ? logs->error_log : "", l->error_log, l->error_size,
            l->error_filled);
    if (l->wall != NULL) {
        *l->wall = NULL;
        memcpy(l->wall, &ms, sizeof(ms));
    }
}

CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    struct ds_clink *l = link_of(state);
    ds_link_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (l == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (cubinOut == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(&r, 0, sizeof(r));
    rc = ds_rpc_link(&l->a, &r);
    if (rc == CUDA_ERROR_DEVICE_UNAVAILABLE && r.err == 0)
        return rc;
    put_outputs(l, rc == CUDA_SUCCESS ? &r.ds_link_res_u.ok.logs : r.ds_link_res_u.logs);
    if (rc != CUDA_SUCCESS) {
        ds__rpc_free((xdrproc_t)xdr_ds_link_res, &r);
        return rc;
    }
    if (l->completed)
        ds__rpc_free((xdrproc_t)xdr_ds_link_res, &l->res);
    l->res = r;
    l->completed = 1;
    *cubinOut = r.ds_link_res_u.ok.image.image_val;
    if (sizeOut != NULL)
        *sizeOut = r.ds_link_res_u.ok.image.image_len;
    return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state)
{
    struct ds_clink *l = link_of(state);

    DS_NEED_INIT();
    if (l == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    link_free(l);
    return CUDA_SUCCESS;
}

/* Before CUDA 6.5 the same calls went by these names. */
CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
                      CUlinkState *stateOut)
{
    return cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
                       const char *name, unsigned int numOptions, CUjit_option *options,
                       void **optionValues)
{
    return cuLinkAddData_v2(state, type, data, size, name, numOptions, options, optionValues);
}

CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
                       unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    return cuLinkAddFile_v2(state, type, path, numOptions, options, optionValues);
}
