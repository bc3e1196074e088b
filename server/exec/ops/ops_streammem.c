/* Stream memory operations: waits on and writes to words of the tenant's own memory,
 * ordered in its streams or run by a graph's batch memory operation node.  Each address
 * is checked against the tenant's ranges, so a tenant can neither read nor write another
 * tenant's memory or the control block (whose gate words the executor itself waits on
 * with the same device operations). */
#include "ops.h"

#include "ds_error.h"

#include <stdlib.h>

#define WAIT_CMP_MASK 0x3u /* CU_STREAM_WAIT_VALUE_GEQ, _EQ, _AND, _NOR */

/* The bytes op touches (0 when it touches none), or -1 when its kind or flags are not
 * cuda.h's. */
static int op_width(const ds_memop *op)
{
    switch (op->op) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        if ((op->flags & ~(WAIT_CMP_MASK | CU_STREAM_WAIT_VALUE_FLUSH)) != 0)
            return -1;
        return op->op == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 4 : 8;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        /* CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER is not one of the v2 calls' flags: the
         * driver refuses it (H100, run 80). */
        if (op->flags != 0)
            return -1;
        return op->op == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8;
    case CU_STREAM_MEM_OP_BARRIER:
        return op->flags <= CU_STREAM_MEMORY_BARRIER_TYPE_GPU ? 0 : -1;
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        return op->flags == 0 ? 0 : -1;
    default:
        return -1;
    }
}

static CUresult check_op(struct ds_tenant *t, const ds_memop *op, struct ds_memop_desc *out)
{
    int width = op_width(op);

    if (width < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (width > 0 && (op->addr % (uint64_t)width != 0 ||
                      ds__tenant_range(t, op->addr, (uint64_t)width) != 0))
        return CUDA_ERROR_INVALID_VALUE;
    out->kind = (CUstreamBatchMemOpType)op->op;
    out->flags = op->flags;
    out->addr = width > 0 ? op->addr : 0;
    out->value = width == 4 ? (uint32_t)op->value : op->value;
    return CUDA_SUCCESS;
}

CUresult ds__ops_stream_memop(struct ds_tenant *t, const ds_memop_args *a)
{
    struct ds_memop_desc *ops;
    struct ds_bstream *s;
    unsigned n = a->ops.ops_len;
    CUresult rc = CUDA_SUCCESS;

    if (ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (n == 0 || n > DS_MEMOPS_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    ops = calloc(n, sizeof(*ops));
    if (ops == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < n && rc == CUDA_SUCCESS; i++)
        rc = check_op(t, &a->ops.ops_val[i], &ops[i]);
    if (rc == CUDA_SUCCESS)
        rc = ds_error_to_cu(t->ops->memops(t->be, s, ops, n));
    free(ops);
    return rc;
}

CUresult ds__ops_memop_node(struct ds_tenant *t, const ds_memop *ops, unsigned n,
                            struct ds_gnode_desc *d, struct ds_memop_desc *out)
{
    CUresult rc = CUDA_SUCCESS;

    if (n == 0 || n > DS_MEMOPS_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n && rc == CUDA_SUCCESS; i++)
        rc = check_op(t, &ops[i], &out[i]);
    d->kind = DS_GNODE_MEMOP;
    d->memops = out;
    d->nmemops = n;
    return rc;
}
