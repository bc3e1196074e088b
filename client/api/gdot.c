/*
 * cuGraphDebugDotPrint: a DOT description of a built graph, written by this process, so
 * the path is the tenant's own, relative to its working directory, and the file is its
 * user's, as with the driver.  Nodes are named by their type and handle, with their
 * parameters where the flags ask for them; a child graph node's graph is drawn as a
 * cluster inside it.
 */
#include "cuda_api.h"
#include "gnode.h"

#include "rpc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Child graphs are copies made when their node was added, so nesting is bounded by what
 * the tenant built; this bound keeps the recursion's stack small whatever it built. */
#define MAX_DEPTH 16

static const char *type_name(CUgraphNodeType t)
{
    switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    case CU_GRAPH_NODE_TYPE_HOST: return "host";
    case CU_GRAPH_NODE_TYPE_GRAPH: return "graph";
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return "conditional";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return "event_record";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return "event_wait";
    default: return "empty";
    }
}

/* The node's parameters as a label line, where the flags ask for its kind's. */
static void print_params(FILE *f, CUgraphNode n, CUgraphNodeType t, unsigned flags)
{
    int verbose = (flags & CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE) != 0;
    ds_node_info_res r;
    const ds_node_params *p = &r.ds_node_info_res_u.info.params;

    if (!verbose && !((t == CU_GRAPH_NODE_TYPE_MEMCPY &&
                       (flags & CU_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS)) ||
                      (t == CU_GRAPH_NODE_TYPE_MEMSET &&
                       (flags & CU_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS)) ||
                      (t == CU_GRAPH_NODE_TYPE_KERNEL &&
                       (flags & CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS))))
        return;
    if (ds__gnode_info(n, &r) != CUDA_SUCCESS)
        return;
    if (p->kind == DS_NODE_MEMCPY)
        fprintf(f, "\\ndst 0x%" PRIx64 " src 0x%" PRIx64 " bytes %" PRIu64,
                p->ds_node_params_u.copy.dst, p->ds_node_params_u.copy.src,
                p->ds_node_params_u.copy.size);
    else if (p->kind == DS_NODE_MEMSET)
        fprintf(f, "\\ndst 0x%" PRIx64 " value 0x%x x%u %" PRIu64 "x%" PRIu64,
                p->ds_node_params_u.fill.dst, p->ds_node_params_u.fill.value,
                p->ds_node_params_u.fill.elem_size, p->ds_node_params_u.fill.width,
                p->ds_node_params_u.fill.height);
    else if (p->kind == DS_NODE_KERNEL)
        fprintf(f, "\\ngrid %ux%ux%u block %ux%ux%u shared %u",
                p->ds_node_params_u.kernel.grid[0], p->ds_node_params_u.kernel.grid[1],
                p->ds_node_params_u.kernel.grid[2], p->ds_node_params_u.kernel.block[0],
                p->ds_node_params_u.kernel.block[1], p->ds_node_params_u.kernel.block[2],
                p->ds_node_params_u.kernel.shared_mem);
    xdr_free((xdrproc_t)xdr_ds_node_info_res, (char *)&r);
}

/* A list CUDA's way, in a malloc'd array of *n (NULL when empty). */
static CUresult nodes_of(CUgraph g, CUgraphNode **out, size_t *n)
{
    CUresult rc = cuGraphGetNodes(g, NULL, n);

    *out = NULL;
    if (rc != CUDA_SUCCESS || *n == 0)
        return rc;
    if ((*out = calloc(*n, sizeof(**out))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return cuGraphGetNodes(g, *out, n);
}

static CUresult print_graph(FILE *f, CUgraph g, unsigned flags, int depth);

static CUresult print_node(FILE *f, CUgraphNode n, unsigned flags, int depth)
{
    CUgraphNodeType t;
    CUgraph child;
    CUresult rc;

    if ((rc = cuGraphNodeGetType(n, &t)) != CUDA_SUCCESS)
        return rc;
    fprintf(f, "\"n%" PRIxPTR "\" [label=\"%s\\n%" PRIxPTR, (uintptr_t)n, type_name(t),
            (uintptr_t)n);
    print_params(f, n, t, flags);
    fprintf(f, "\"];\n");
    if (t != CU_GRAPH_NODE_TYPE_GRAPH)
        return CUDA_SUCCESS;
    if ((rc = cuGraphChildGraphNodeGetGraph(n, &child)) != CUDA_SUCCESS)
        return rc;
    fprintf(f, "subgraph \"cluster_n%" PRIxPTR "\" {\nlabel=\"graph of %" PRIxPTR "\";\n",
            (uintptr_t)n, (uintptr_t)n);
    rc = print_graph(f, child, flags, depth + 1);
    fprintf(f, "}\n");
    return rc;
}

static CUresult print_graph(FILE *f, CUgraph g, unsigned flags, int depth)
{
    CUgraphNode *nodes, *from = NULL, *to = NULL;
    size_t n, ne = 0;
    CUresult rc;

    if (depth > MAX_DEPTH)
        return CUDA_ERROR_NOT_SUPPORTED;
    if ((rc = nodes_of(g, &nodes, &n)) != CUDA_SUCCESS)
        return rc;
    for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++)
        rc = print_node(f, nodes[i], flags, depth);
    if (rc == CUDA_SUCCESS)
        rc = cuGraphGetEdges(g, NULL, NULL, &ne);
    if (rc == CUDA_SUCCESS && ne > 0) {
        from = calloc(ne, sizeof(*from));
        to = calloc(ne, sizeof(*to));
        rc = from == NULL || to == NULL ? CUDA_ERROR_OUT_OF_MEMORY
                                        : cuGraphGetEdges(g, from, to, &ne);
    }
    for (size_t i = 0; i < ne && rc == CUDA_SUCCESS; i++)
        fprintf(f, "\"n%" PRIxPTR "\" -> \"n%" PRIxPTR "\";\n", (uintptr_t)from[i],
                (uintptr_t)to[i]);
    free(nodes);
    free(from);
    free(to);
    return rc;
}

CUresult cuGraphDebugDotPrint(CUgraph graph, const char *path, unsigned int flags)
{
    CUresult rc;
    FILE *f;

    DS_NEED_INIT();
    if (graph == NULL || path == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((f = fopen(path, "w")) == NULL)
        return CUDA_ERROR_OPERATING_SYSTEM;
    fprintf(f, "digraph dot {\n");
    rc = print_graph(f, graph, flags, 0);
    fprintf(f, "}\n");
    if (fclose(f) != 0 && rc == CUDA_SUCCESS)
        rc = CUDA_ERROR_OPERATING_SYSTEM;
    return rc;
}
