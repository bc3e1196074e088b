/* JIT linking (DS_LINK): the tenant's inputs and options, checked, go to the backend's
 * linker in one job; the linked image and the logs go back. */
#include "ops.h"

#include "ds_error.h"
#include "ds_jit.h"
#include "ds_image.h"
#include "ds_log.h"

#include <stdlib.h>
#include <string.h>

/* The wire's options as the driver takes them; freed with free_options. */
static CUresult options_of(const ds_link_option *o, u_int n, struct ds_jit_options *out)
{
    out->n = 0;
    out->opt = calloc(n ? n : 1, sizeof(*out->opt));
    out->val = calloc(n ? n : 1, sizeof(*out->val));
    if (out->opt == NULL || out->val == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (u_int i = 0; i < n; i++) {
        if (!ds_jit_scalar_option(o[i].option))
            return CUDA_ERROR_INVALID_VALUE;
        out->opt[i] = (CUjit_option)o[i].option;
        out->val[i] = (void *)(uintptr_t)o[i].value;
    }
    out->n = n;
    return CUDA_SUCCESS;
}

static void free_options(struct ds_jit_options *o)
{
    free(o->opt);
    free(o->val);
}

/* Bytes the driver may read as far as it likes must end inside what came: PTX at its
 * NUL, a cubin or fatbin where its headers say. */
static int input_bounded(const ds_link_input *in)
{
    enum ds_image_kind kind;
    size_t size;

    if (in->data.data_len == 0)
        return 0;
    switch (in->type) {
    case CU_JIT_INPUT_PTX:
        return memchr(in->data.data_val, '\0', in->data.data_len) != NULL;
    case CU_JIT_INPUT_CUBIN:
    case CU_JIT_INPUT_FATBINARY:
        return ds_image_identify(in->data.data_val, in->data.data_len, &kind, NULL, &size) ==
                   0 && size <= in->data.data_len;
    default:
        return in->type >= 0 && in->type < CU_JIT_NUM_INPUT_TYPES;
    }
}

static CUresult inputs_of(const ds_link_args *a, struct ds_link_in *in)
{
    for (u_int i = 0; i < a->inputs.inputs_len; i++) {
        const ds_link_input *w = &a->inputs.inputs_val[i];
        CUresult rc;

        if (!input_bounded(w))
            return CUDA_ERROR_INVALID_IMAGE;
        in[i].type = (CUjitInputType)w->type;
        in[i].name = w->name;
        in[i].data = w->data.data_val;
        in[i].len = w->data.data_len;
        rc = options_of(w->options.options_val, w->options.options_len, &in[i].options);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

static void free_inputs(struct ds_link_in *in, u_int n)
{
    for (u_int i = 0; in != NULL && i < n; i++)
        free_options(&in[i].options);
    free(in);
}

/* Logs of the sizes asked for, empty; XDR sends no NULL string, so never smaller than 1. */
static CUresult logs_of(const ds_link_args *a, struct ds_link_job *job)
{
    if (a->info_log_size > DS_LINK_LOG_MAX || a->error_log_size > DS_LINK_LOG_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    job->info_size = a->info_log_size;
    job->error_size = a->error_log_size;
    job->info_log = calloc(1, job->info_size + 1);
    job->error_log = calloc(1, job->error_size + 1);
    return job->info_log != NULL && job->error_log != NULL ? CUDA_SUCCESS
                                                           : CUDA_ERROR_OUT_OF_MEMORY;
}

static void fill(ds_link_logs *logs, const struct ds_link_job *job)
{
    logs->info_log = job->info_log;
    logs->error_log = job->error_log;
    logs->wall_ms = job->wall_ms;
}

/* The reply owns the logs and the image (xdr_free frees them).  A failure before the
 * logs were made, or without room for them, is answered without logs. */
static void answer(struct ds_link_job *job, CUresult rc, ds_link_res *r)
{
    ds_link_logs *logs;

    if (rc == CUDA_SUCCESS) {
        fill(&r->ds_link_res_u.ok.logs, job);
        r->ds_link_res_u.ok.image.image_val = job->image;
        r->ds_link_res_u.ok.image.image_len = (u_int)job->image_len;
        return;
    }
    free(job->image);
    logs = calloc(1, sizeof(*logs));
    if (logs == NULL || job->info_log == NULL || job->error_log == NULL) {
        free(logs);
        free(job->info_log);
        free(job->error_log);
        logs = NULL;
    } else {
        fill(logs, job);
    }
    r->ds_link_res_u.logs = logs;
}

CUresult ds__ops_link(struct ds_tenant *t, const ds_link_args *a, ds_link_res *r)
{
    struct ds_link_job job = { 0 };
    struct ds_link_in *in = calloc(a->inputs.inputs_len ? a->inputs.inputs_len : 1, sizeof(*in));
    CUresult rc = in != NULL ? logs_of(a, &job) : CUDA_ERROR_OUT_OF_MEMORY;
    int err;

    if (rc == CUDA_SUCCESS)
        rc = options_of(a->options.options_val, a->options.options_len, &job.options);
    if (rc == CUDA_SUCCESS)
        rc = inputs_of(a, in);
    if (rc == CUDA_SUCCESS) {
        job.in = in;
        job.n = a->inputs.inputs_len;
        err = t->ops->link(t->be, &job);
        rc = ds_error_to_cu(err);
        if (err != 0)
            ds_debug("link of %zu input(s) failed: %s", job.n, ds_strerror(err));
        if (rc == CUDA_SUCCESS && job.image_len > DS_IMAGE_WIRE_MAX)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    answer(&job, rc, r);
    free_options(&job.options);
    free_inputs(in, a->inputs.inputs_len);
    return rc;
}
