/* Device queries whose answer only the device has (the tenant's view of the device,
 * sent at the handshake, answers the rest in the client). */
#include "ops.h"

#include "ds_error.h"

#include <stdlib.h>

/* How many answers a well-formed query gives, or 0 for a malformed one. */
static unsigned answers(const ds_devq_args *a)
{
    switch (a->kind) {
    case DS_DEVQ_LUID:
        return 2;
    case DS_DEVQ_TEX1D_LINEAR_WIDTH:
        return 1;
    case DS_DEVQ_HOST_ATOMIC_CAPS:
        for (unsigned i = 0; i < a->ops.ops_len; i++)
            if (a->ops.ops_val[i] < 0 || a->ops.ops_val[i] >= CU_ATOMIC_OPERATION_MAX)
                return 0;
        return a->ops.ops_len;
    default:
        return 0;
    }
}

CUresult ds__ops_dev_query(struct ds_tenant *t, const ds_devq_args *a, ds_devq_res *r)
{
    uint64_t *values;
    struct ds_devq q = { .kind = a->kind, .a = a->a, .b = a->b, .ops = a->ops.ops_val,
                         .n = a->ops.ops_len };
    unsigned n = answers(a);
    int rc;

    if (n == 0 || n > DS_DEVQ_OPS_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    values = calloc(n, sizeof(*values));
    if (values == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    rc = t->ops->dev_query(t->be, &q, values);
    if (rc != 0) {
        free(values);
        return rc == DS_ENOTSUP ? CUDA_ERROR_NOT_SUPPORTED : ds_error_to_cu(rc);
    }
    /* The dispatcher frees the reply with xdr_free once it is sent. */
    r->ds_devq_res_u.values.values_val = values;
    r->ds_devq_res_u.values.values_len = n;
    return CUDA_SUCCESS;
}
