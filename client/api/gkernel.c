/*
 * Kernel nodes read back: their parameters (cuGraphKernelNodeGetParams) and launch
 * attributes (cuGraphKernelNode{Get,Set}Attribute, CopyAttributes).  The executor holds
 * each node's packed parameters and attributes; an attribute is set by sending the node
 * back with its attribute list changed.
 *
 * What CUDA hands out as its own memory for a node is kept here per node: the parameter
 * pointers a read hands out point into a copy (valid until the node is read again or
 * destroyed, or its graph destroyed), and a conditional node's array of body graphs
 * (valid as long as the node).
 */
#include "cuda_api.h"
#include "gkernel.h"
#include "gnode.h"

#include "module.h"
#include "rpc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The last parameters handed out for a node: the packed bytes and pointers into them. */
struct kept {
    uint64_t node, graph;
    unsigned char *bytes;
    void **ptrs;
    CUgraph *bodies;
    struct kept *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept *kept;

static void free_kept(struct kept *k)
{
    free(k->bytes);
    free(k->ptrs);
    free(k->bodies);
    free(k);
}

/* Drop what was kept for node `node` (0: any) of graph `graph` (0: any). */
static void forget(uint64_t node, uint64_t graph)
{
    struct kept **p, *gone = NULL;

    pthread_mutex_lock(&lock);
    for (p = &kept; *p != NULL;) {
        struct kept *k = *p;

        if ((node != 0 && k->node == node) || (graph != 0 && k->graph == graph)) {
            *p = k->next;
            k->next = gone;
            gone = k;
        } else {
            p = &k->next;
        }
    }
    pthread_mutex_unlock(&lock);
    while (gone != NULL) {
        struct kept *next = gone->next;

        free_kept(gone);
        gone = next;
    }
}

/* Node `node` is destroyed. */
static void node_gone(uint64_t node)
{
    forget(node, 0);
}

/* Keep c until its node or graph is destroyed. */
static void add(struct kept *c)
{
    ds__gnode_on_destroy(node_gone);
    pthread_mutex_lock(&lock);
    c->next = kept;
    kept = c;
    pthread_mutex_unlock(&lock);
}

void ds__gkernel_graph_gone(uint64_t graph)
{
    forget(0, graph);
}

CUgraph *ds__gkernel_keep_bodies(uint64_t node, uint64_t graph, const uint64_t *bodies,
                                 unsigned n)
{
    struct kept *c = calloc(1, sizeof(*c));

    if (c == NULL || (c->bodies = calloc(n ? n : 1, sizeof(*c->bodies))) == NULL) {
        free(c);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++)
        c->bodies[i] = (CUgraph)(uintptr_t)bodies[i];
    c->node = node;
    c->graph = graph;
    add(c);
    return c->bodies;
}

/* Kernel node `node`'s description, in *r (xdr_free it after a success). */
static CUresult kernel_info(CUgraphNode node, ds_node_info_res *r)
{
    CUresult rc = ds__gnode_info(node, r);

    if (rc == CUDA_SUCCESS && r->ds_node_info_res_u.info.params.kind != DS_NODE_KERNEL) {
        xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)r);
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    return rc;
}

/* A kept copy of k's parameters for node, its pointers laid out as f's parameters. */
static struct kept *keep(uint64_t node, uint64_t graph, const struct ds_cfunc *f,
                         const ds_kernel_node *k)
{
    struct kept *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->bytes = malloc(k->params.params_len ? k->params.params_len : 1);
    c->ptrs = calloc(f->nparams ? f->nparams : 1, sizeof(*c->ptrs));
    if (c->bytes == NULL || c->ptrs == NULL) {
        free_kept(c);
        return NULL;
    }
    memcpy(c->bytes, k->params.params_val, k->params.params_len);
    for (uint32_t i = 0; i < f->nparams; i++)
        c->ptrs[i] = c->bytes + f->offset[i];
    c->node = node;
    c->graph = graph;
    return c;
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *kp)
{
    ds_node_info_res r;
    const ds_kernel_node *k = &r.ds_node_info_res_u.info.params.ds_node_params_u.kernel;
    struct ds_cfunc *f;
    struct kept *c = NULL;
    CUresult rc;

    DS_NEED_INIT();
    if (kp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = kernel_info(node, &r)) != CUDA_SUCCESS)
        return rc;
    if ((f = ds__module_func_of(k->fn)) == NULL || k->params.params_len != f->param_bytes)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if ((c = keep((uint64_t)(uintptr_t)node, r.ds_node_info_res_u.info.graph, f, k)) == NULL)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        *kp = (CUDA_KERNEL_NODE_PARAMS){
            .func = (CUfunction)f, .gridDimX = k->grid[0], .gridDimY = k->grid[1],
            .gridDimZ = k->grid[2], .blockDimX = k->block[0], .blockDimY = k->block[1],
            .blockDimZ = k->block[2], .sharedMemBytes = k->shared_mem,
            .kernelParams = c->ptrs,
        };
        forget((uint64_t)(uintptr_t)node, 0);
        add(c);
    }
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&r);
    return rc;
}

/* The CUDA 10 form: the same fields, without kern and ctx. */
CUresult cuGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v1 *kp)
{
    CUDA_KERNEL_NODE_PARAMS p;
    CUresult rc;

    if (kp == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = cuGraphKernelNodeGetParams_v2(node, &p)) == CUDA_SUCCESS)
        memcpy(kp, &p, sizeof(*kp));
    return rc;
}

/* An attribute never set reads as zeros, the driver's default for each. */
CUresult cuGraphKernelNodeGetAttribute(CUgraphNode node, CUkernelNodeAttrID id,
                                       CUkernelNodeAttrValue *value)
{
    ds_node_info_res r;
    const ds_kernel_node *k = &r.ds_node_info_res_u.info.params.ds_node_params_u.kernel;
    CUresult rc;

    DS_NEED_INIT();
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = kernel_info(node, &r)) != CUDA_SUCCESS)
        return rc;
    memset(value, 0, sizeof(*value));
    for (u_int i = 0; i < k->attrs.attrs_len; i++)
        if (k->attrs.attrs_val[i].id == (int)id)
            memcpy(value, k->attrs.attrs_val[i].value, sizeof(*value));
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&r);
    return CUDA_SUCCESS;
}

/* Node `node` (description r) sent back with attribute list attrs (n entries). */
static CUresult set_attrs(CUgraphNode node, ds_node_info_res *r, ds_launch_attr *attrs,
                          u_int n)
{
    ds_node_params p = r->ds_node_info_res_u.info.params;

    p.ds_node_params_u.kernel.attrs.attrs_val = attrs;
    p.ds_node_params_u.kernel.attrs.attrs_len = n;
    return ds__gnode_set(NULL, node, &p);
}

CUresult cuGraphKernelNodeSetAttribute(CUgraphNode node, CUkernelNodeAttrID id,
                                       const CUkernelNodeAttrValue *value)
{
    ds_launch_attr attrs[DS_LAUNCH_ATTRS_MAX];
    ds_node_info_res r;
    const ds_kernel_node *k = &r.ds_node_info_res_u.info.params.ds_node_params_u.kernel;
    u_int n = 0, at;
    CUresult rc;

    DS_NEED_INIT();
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = kernel_info(node, &r)) != CUDA_SUCCESS)
        return rc;
    for (u_int i = 0; i < k->attrs.attrs_len && n < DS_LAUNCH_ATTRS_MAX; i++)
        attrs[n++] = k->attrs.attrs_val[i];
    for (at = 0; at < n && attrs[at].id != (int)id; at++)
        ;
    if (at == DS_LAUNCH_ATTRS_MAX) {
        rc = CUDA_ERROR_NOT_SUPPORTED;
    } else {
        attrs[at].id = (int)id;
        memcpy(attrs[at].value, value, sizeof(*value));
        rc = set_attrs(node, &r, attrs, at == n ? n + 1 : n);
    }
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&r);
    return rc;
}

CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src)
{
    ds_node_info_res from, to;
    const ds_kernel_node *k = &from.ds_node_info_res_u.info.params.ds_node_params_u.kernel;
    CUresult rc;

    DS_NEED_INIT();
    if ((rc = kernel_info(src, &from)) != CUDA_SUCCESS)
        return rc;
    if ((rc = kernel_info(dst, &to)) == CUDA_SUCCESS) {
        rc = set_attrs(dst, &to, k->attrs.attrs_val, k->attrs.attrs_len);
        xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&to);
    }
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&from);
    return rc;
}
