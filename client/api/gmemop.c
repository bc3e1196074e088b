/*
 * Batch memory operation graph nodes (cuGraphAddBatchMemOpNode and the calls that read
 * and set them): the operations of cuStreamBatchMemOp, kept by a node.  The executor
 * checks each as it checks the stream calls'.  A node's operations read back are kept
 * here, one array per node, as the node's own memory would be: the same array while they
 * stay the same, a new one once they were set anew.
 */
#include "cuda_api.h"
#include "gnode.h"
#include "memop.h"

#include "rpc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Arrays handed out by cuGraphBatchMemOpNodeGetParams, by node. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct handed {
    CUgraphNode node;
    CUstreamBatchMemOpParams *ops;
    unsigned n;
    struct handed *next;
} *handed;

/* p's operations in wire form, into *out (the caller frees it), or the CUresult that
 * refuses p. */
static CUresult to_node(const CUDA_BATCH_MEM_OP_NODE_PARAMS *p, ds_node_params *out)
{
    ds_memop *ops;

    if (p == NULL || p->count == 0 || p->paramArray == NULL || p->flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->count > DS_MEMOPS_MAX)
        return CUDA_ERROR_NOT_SUPPORTED;
    if ((ops = calloc(p->count, sizeof(*ops))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < p->count; i++)
        ds__memop_to_wire(&p->paramArray[i], &ops[i]);
    memset(out, 0, sizeof(*out));
    out->kind = DS_NODE_MEMOP;
    out->ds_node_params_u.memops.memops_len = p->count;
    out->ds_node_params_u.memops.memops_val = ops;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddBatchMemOpNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                  size_t ndeps, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    ds_node_params np;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = to_node(p, &np)) != CUDA_SUCCESS)
        return rc;
    rc = ds__gnode_add(node, graph, deps, ndeps, &np);
    free(np.ds_node_params_u.memops.memops_val);
    return rc;
}

static CUresult set(CUgraphExec exec, CUgraphNode node, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    ds_node_params np;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = to_node(p, &np)) != CUDA_SUCCESS)
        return rc;
    rc = ds__gnode_set(exec, node, &np);
    free(np.ds_node_params_u.memops.memops_val);
    return rc;
}

CUresult cuGraphBatchMemOpNodeSetParams(CUgraphNode node, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    return set(NULL, node, p);
}

CUresult cuGraphExecBatchMemOpNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                            const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    if (exec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set(exec, node, p);
}

/* Operation m in CUDA's form. */
static void from_wire(const ds_memop *m, CUstreamBatchMemOpParams *p)
{
    memset(p, 0, sizeof(*p));
    p->operation = (CUstreamBatchMemOpType)m->op;
    switch (m->op) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        p->waitValue.address = m->addr;
        p->waitValue.value64 = m->value;
        p->waitValue.flags = m->flags;
        break;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        p->writeValue.address = m->addr;
        p->writeValue.value64 = m->value;
        p->writeValue.flags = m->flags;
        break;
    case CU_STREAM_MEM_OP_BARRIER:
        p->memoryBarrier.flags = m->flags;
        break;
    default:
        p->flushRemoteWrites.flags = m->flags;
        break;
    }
}

/* The array node's operations (n of them, in fresh) are handed out in: the one handed
 * out before when they are the same (fresh is freed), else fresh.  Called with the lock
 * held; NULL when no entry can be made. */
static CUstreamBatchMemOpParams *keep(CUgraphNode node, CUstreamBatchMemOpParams *fresh,
                                      unsigned n)
{
    struct handed *h = handed;

    while (h != NULL && h->node != node)
        h = h->next;
    if (h != NULL && h->n == n && memcmp(h->ops, fresh, n * sizeof(*fresh)) == 0) {
        free(fresh);
        return h->ops;
    }
    if (h == NULL) {
        if ((h = calloc(1, sizeof(*h))) == NULL) {
            free(fresh);
            return NULL;
        }
        h->node = node;
        h->next = handed;
        handed = h;
    }
    free(h->ops);
    h->ops = fresh;
    h->n = n;
    return fresh;
}

CUresult cuGraphBatchMemOpNodeGetParams(CUgraphNode node, CUDA_BATCH_MEM_OP_NODE_PARAMS *out)
{
    CUstreamBatchMemOpParams *ops = NULL;
    ds_node_info_res r;
    const ds_node_params *p;
    CUresult rc;
    unsigned n;

    DS_NEED_INIT();
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__gnode_info(node, &r)) != CUDA_SUCCESS)
        return rc;
    p = &r.ds_node_info_res_u.info.params;
    n = p->kind == DS_NODE_MEMOP ? p->ds_node_params_u.memops.memops_len : 0;
    if (p->kind != DS_NODE_MEMOP)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if ((ops = calloc(n > 0 ? n : 1, sizeof(*ops))) == NULL)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; rc == CUDA_SUCCESS && i < n; i++)
        from_wire(&p->ds_node_params_u.memops.memops_val[i], &ops[i]);
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&r);
    if (rc != CUDA_SUCCESS) {
        free(ops);
        return rc;
    }
    pthread_mutex_lock(&lock);
    ops = keep(node, ops, n);
    pthread_mutex_unlock(&lock);
    if (ops == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = (CUDA_BATCH_MEM_OP_NODE_PARAMS){ .ctx = NULL, .count = n, .paramArray = ops };
    return cuCtxGetCurrent(&out->ctx);
}
