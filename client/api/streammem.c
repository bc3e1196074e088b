/* Stream memory operations: waits on and writes to words of device-visible memory, in
 * stream order.  They travel batched, like launches; the executor checks every address
 * against the tenant's own memory. */
#include "cuda_api.h"
#include "memop.h"

#include "rpc.h"
#include "stream.h"

#include <stdlib.h>

static CUresult send_ops(CUstream s, ds_memop *ops, unsigned n)
{
    ds_memop_args a = { .stream = ds__stream_of(s) };

    a.ops.ops_len = n;
    a.ops.ops_val = ops;
    return ds_rpc_stream_memop(&a);
}

static CUresult one(CUstream s, int op, CUdeviceptr addr, uint64_t value, unsigned flags)
{
    ds_memop m = { .op = op, .flags = flags, .addr = addr, .value = value };

    DS_NEED_INIT();
    /* Refused at once, as by the driver, rather than at the stream's next
     * synchronisation: the v2 writes take no flags (no CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER). */
    if ((op == CU_STREAM_MEM_OP_WRITE_VALUE_32 || op == CU_STREAM_MEM_OP_WRITE_VALUE_64) &&
        flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return send_ops(s, &m, 1);
}

CUresult cuStreamWaitValue32_v2(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags)
{
    return one(s, CU_STREAM_MEM_OP_WAIT_VALUE_32, addr, value, flags);
}

CUresult cuStreamWaitValue64_v2(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned flags)
{
    return one(s, CU_STREAM_MEM_OP_WAIT_VALUE_64, addr, value, flags);
}

CUresult cuStreamWriteValue32_v2(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags)
{
    return one(s, CU_STREAM_MEM_OP_WRITE_VALUE_32, addr, value, flags);
}

CUresult cuStreamWriteValue64_v2(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned flags)
{
    return one(s, CU_STREAM_MEM_OP_WRITE_VALUE_64, addr, value, flags);
}

void ds__memop_to_wire(const CUstreamBatchMemOpParams *p, ds_memop *m)
{
    m->op = (int)p->operation;
    m->addr = 0;
    m->value = 0;
    switch (p->operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        m->flags = p->waitValue.flags;
        m->addr = p->waitValue.address;
        m->value = p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? p->waitValue.value
                                                                 : p->waitValue.value64;
        break;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        m->flags = p->writeValue.flags;
        m->addr = p->writeValue.address;
        m->value = p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? p->writeValue.value
                                                                  : p->writeValue.value64;
        break;
    case CU_STREAM_MEM_OP_BARRIER:
        m->flags = p->memoryBarrier.flags;
        break;
    default:
        m->flags = p->flushRemoteWrites.flags;
        break;
    }
}

CUresult cuStreamBatchMemOp_v2(CUstream s, unsigned count, CUstreamBatchMemOpParams *params,
                               unsigned flags)
{
    ds_memop *ops;
    CUresult rc;

    DS_NEED_INIT();
    if (params == NULL || count == 0 || count > DS_MEMOPS_MAX || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    ops = calloc(count, sizeof(*ops));
    if (ops == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < count; i++)
        ds__memop_to_wire(&params[i], &ops[i]);
    rc = send_ops(s, ops, count);
    free(ops);
    return rc;
}

/* The CUDA 8.0 entry points: the same operations. */
CUresult cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags)
{
    return cuStreamWaitValue32_v2(s, addr, value, flags);
}

CUresult cuStreamWaitValue64(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned flags)
{
    return cuStreamWaitValue64_v2(s, addr, value, flags);
}

CUresult cuStreamWriteValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags)
{
    return cuStreamWriteValue32_v2(s, addr, value, flags);
}

CUresult cuStreamWriteValue64(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned flags)
{
    return cuStreamWriteValue64_v2(s, addr, value, flags);
}

CUresult cuStreamBatchMemOp(CUstream s, unsigned count, CUstreamBatchMemOpParams *params,
                            unsigned flags)
{
    return cuStreamBatchMemOp_v2(s, count, params, flags);
}
