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

/* Every node of graph `graph` is destroyed (a node destroyed alone is learnt through
 * ds__gnode_on_destroy). */
void ds__gkernel_graph_gone(uint64_t graph);

#endif
