/* Graph nodes: what gparams.c shares with gnode.c. */
#ifndef DS_GNODE_H
#define DS_GNODE_H

#include <cuda.h>

#include "detshare.h"

/* Add node p after deps (ndeps nodes) to graph; the node's handle in *node. */
CUresult ds__gnode_add(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t ndeps,
                       const ds_node_params *p);

/* New parameters p, of the node's kind, for node in its graph (exec NULL) or in exec. */
CUresult ds__gnode_set(CUgraphExec exec, CUgraphNode node, const ds_node_params *p);

/* What the executor knows of node: its graph and parameters, in *r (free it with
 * xdr_free(xdr_ds_node_info_res) after a success). */
CUresult ds__gnode_info(CUgraphNode node, ds_node_info_res *r);

/* A memset node's description from CUDA's. */
CUresult ds__gnode_fill(const CUDA_MEMSET_NODE_PARAMS *mp, ds_node_params *p);

/* The copy cp describes as one contiguous range on each side, or the CUresult that
 * refuses it.  A host side the device cannot reach is this process's address, marked in
 * c->host: the copy is done here at the node's turn (graph.c). */
CUresult ds__gnode_copy(const CUDA_MEMCPY3D *cp, ds_memcpy_node *c);

/* fn is called with a node's handle when cuGraphDestroyNode destroys it.  One hook: kernel
 * nodes' keepings (gkernel.c) set it once they keep something, since they lie above
 * nodes and must go with the node. */
typedef void (*ds_gnode_end_fn)(uint64_t node);
void ds__gnode_on_destroy(ds_gnode_end_fn fn);

#endif
