/* Kernel nodes read back, and what CUDA hands out as its own memory for graph nodes
 * (gkernel.c): what it keeps for a node goes with the node. */
#ifndef DS_GKERNEL_H
#define DS_GKERNEL_H

#include <cuda.h>
#include <stdint.h>

/* A conditional node's array of n body graphs (executor handles), kept for the node
 * (`node` of graph `graph`); NULL when out of memory. */
CUgraph *ds__gkernel_keep_bodies(uint64_t node, uint64_t graph, const uint64_t *bodies,
                                 unsigned n);

/* Node `node`, or every node of graph `graph`, is destroyed. */
void ds__gkernel_node_gone(uint64_t node);
void ds__gkernel_graph_gone(uint64_t graph);

#endif
