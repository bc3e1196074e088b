/* JIT linking on the sim device, which has neither a PTX compiler nor a linker: a link
 * of one cubin, or of one fatbin holding an sm_90 cubin, needs neither and gives that
 * cubin; anything else fails as a driver without those tools would, with the reason in
 * the error log. */
#include "sim_core.h"

#include "ds_error.h"

#include <stdarg.h>
#include <stdio.h>

static void log_to(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void log_to(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;

    if (size == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

static const char *input_name(const struct ds_link_in *in)
{
    return in->name != NULL && in->name[0] != '\0' ? in->name : "(unnamed)";
}

/* Why the sim cannot link input `in`, as a CUresult, with the error log written; 0 when
 * it could on its own. */
static CUresult refuse_input(struct ds_link_job *job, const struct ds_link_in *in)
{
    if (in->type == CU_JIT_INPUT_PTX || in->type == CU_JIT_INPUT_NVVM) {
        log_to(job->error_log, job->error_size,
               "error: %s: the sim device has no JIT compiler; link a cubin\n", input_name(in));
        return CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
    }
    if (in->type != CU_JIT_INPUT_CUBIN && in->type != CU_JIT_INPUT_FATBINARY) {
        log_to(job->error_log, job->error_size,
               "error: %s: the sim device has no linker for objects or libraries\n",
               input_name(in));
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

/* Why the sim cannot link the job, or 0.  An input that would need the JIT is named
 * first, as a driver compiles inputs before it links them. */
static CUresult refuse(struct ds_link_job *job)
{
    CUresult why;

    for (size_t i = 0; i < job->n; i++)
        if ((why = refuse_input(job, &job->in[i])) != CUDA_SUCCESS)
            return why;
    if (job->n > 1) {
        log_to(job->error_log, job->error_size,
               "error: the sim device has no linker: it links one cubin or fatbin, not %zu "
               "inputs\n", job->n);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

int ds__sim_link(struct ds_backend *b, struct ds_link_job *job)
{
    const struct ds_link_in *in = job->in;
    CUresult why;
    int rc;

    (void)b;
    job->wall_ms = 0;
    log_to(job->info_log, job->info_size, "%s", "");
    log_to(job->error_log, job->error_size, "%s", "");
    if (job->n == 0) {
        log_to(job->error_log, job->error_size, "error: nothing to link\n");
        return DS_ECU(CUDA_ERROR_INVALID_VALUE);
    }
    if ((why = refuse(job)) != CUDA_SUCCESS)
        return DS_ECU(why);
    rc = ds__sim_cubin_of(in->data, in->len, &job->image, &job->image_len);
    if (rc == DS_ENOTSUP) {
        log_to(job->error_log, job->error_size, "error: %s: no sm_%d cubin in the fatbin\n",
               input_name(in), SIM_ARCH);
        return DS_ECU(CUDA_ERROR_NO_BINARY_FOR_GPU);
    }
    if (rc == DS_EINVAL) {
        log_to(job->error_log, job->error_size, "error: %s: not a cubin or fatbin\n",
               input_name(in));
        return DS_ECU(CUDA_ERROR_INVALID_IMAGE);
    }
    return rc;
}
