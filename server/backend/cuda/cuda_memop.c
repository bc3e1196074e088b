/* Stream memory operations on the real device: the executor checked every address, so
 * the batch goes to the driver as the tenant made it, on the tenant's real stream (or
 * into a batch memory operation node, cuda_graph.c). */
#include "cuda_backend.h"

#include "ds_error.h"

#include <stdlib.h>
#include <string.h>

static void to_param(const struct ds_memop_desc *d, CUstreamBatchMemOpParams *p)
{
    memset(p, 0, sizeof(*p));
    p->operation = d->kind;
    switch (d->kind) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        p->waitValue.address = d->addr;
        p->waitValue.value64 = d->value;
        p->waitValue.flags = d->flags;
        break;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        p->writeValue.address = d->addr;
        p->writeValue.value64 = d->value;
        p->writeValue.flags = d->flags;
        break;
    case CU_STREAM_MEM_OP_BARRIER:
        p->memoryBarrier.flags = d->flags;
        break;
    default:
        p->flushRemoteWrites.flags = d->flags;
        break;
    }
}

CUstreamBatchMemOpParams *ds__cuda_memop_params(const struct ds_memop_desc *ops, unsigned n)
{
    CUstreamBatchMemOpParams *p = calloc(n, sizeof(*p));

    for (unsigned i = 0; p != NULL && i < n; i++)
        to_param(&ops[i], &p[i]);
    return p;
}

int ds__cuda_memops(struct ds_backend *b, struct ds_bstream *s, const struct ds_memop_desc *ops,
                    unsigned n)
{
    CUstreamBatchMemOpParams *p = ds__cuda_memop_params(ops, n);
    int rc;

    if (p == NULL)
        return DS_ENOMEM;
    s = ds__cuda_real(b, s);
    rc = ds__cuda_order(b, s);
    if (rc == 0)
        rc = ds__cuda_err(b->cu.cuStreamBatchMemOp(s->s, n, p, 0));
    free(p);
    return rc;
}
