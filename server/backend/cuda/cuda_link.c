/* JIT linking with the driver's linker (backend.h, struct ds_link_job): one link state
 * per job, made, fed and destroyed in one go, so that the tenant's link holds nothing
 * of the executor's between its calls. */
#include "cuda_backend.h"

#include "ds_error.h"

#include <stdlib.h>
#include <string.h>

/* Options the executor adds to the tenant's: the two logs and the wall time. */
#define OWN_OPTIONS 5

static void add(CUjit_option *opt, void **val, unsigned *n, CUjit_option o, void *v)
{
    opt[*n] = o;
    val[*n] = v;
    (*n)++;
}

/* The job's options, and the logs' and the wall time's; returns the wall time's index. */
static unsigned options_of(const struct ds_link_job *job, CUjit_option *opt, void **val,
                           unsigned *n)
{
    unsigned wall;

    memcpy(opt, job->options.opt, job->options.n * sizeof(*opt));
    memcpy(val, job->options.val, job->options.n * sizeof(*val));
    *n = job->options.n;
    if (job->info_size > 0) {
        add(opt, val, n, CU_JIT_INFO_LOG_BUFFER, job->info_log);
        add(opt, val, n, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, (void *)(uintptr_t)job->info_size);
    }
    if (job->error_size > 0) {
        add(opt, val, n, CU_JIT_ERROR_LOG_BUFFER, job->error_log);
        add(opt, val, n, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            (void *)(uintptr_t)job->error_size);
    }
    wall = *n;
    add(opt, val, n, CU_JIT_WALL_TIME, NULL);
    return wall;
}

static CUresult feed(struct ds_backend *b, CUlinkState st, const struct ds_link_job *job)
{
    CUresult r = CUDA_SUCCESS;

    for (size_t i = 0; i < job->n && r == CUDA_SUCCESS; i++) {
        const struct ds_link_in *in = &job->in[i];

        r = b->cu.cuLinkAddData(st, in->type, (void *)in->data, in->len, in->name,
                                in->options.n, in->options.opt, in->options.val);
    }
    return r;
}

static CUresult complete(struct ds_backend *b, CUlinkState st, struct ds_link_job *job)
{
    void *cubin;
    size_t size;
    CUresult r = b->cu.cuLinkComplete(st, &cubin, &size);

    if (r != CUDA_SUCCESS)
        return r;
    job->image = malloc(size > 0 ? size : 1);
    if (job->image == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(job->image, cubin, size);
    job->image_len = size;
    return CUDA_SUCCESS;
}

int ds__cuda_link(struct ds_backend *b, struct ds_link_job *job)
{
    unsigned n, wall;
    CUjit_option *opt = calloc(job->options.n + OWN_OPTIONS, sizeof(*opt));
    void **val = calloc(job->options.n + OWN_OPTIONS, sizeof(*val));
    CUlinkState st;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

    job->wall_ms = 0;
    if (opt != NULL && val != NULL) {
        wall = options_of(job, opt, val, &n);
        r = b->cu.cuLinkCreate(n, opt, val, &st);
        if (r == CUDA_SUCCESS) {
            r = feed(b, st, job);
            if (r == CUDA_SUCCESS)
                r = complete(b, st, job);
            /* The driver writes the time as a float into the option's value. */
            memcpy(&job->wall_ms, &val[wall], sizeof(job->wall_ms));
            b->cu.cuLinkDestroy(st);
        }
    }
    if (job->info_size > 0)
        job->info_log[job->info_size - 1] = '\0';
    if (job->error_size > 0)
        job->error_log[job->error_size - 1] = '\0';
    free(opt);
    free(val);
    return ds__cuda_err(r);
}
