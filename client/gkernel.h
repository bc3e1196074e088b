/* Kernel nodes read back (gkernel.c): what it keeps for a node goes with the node. */
#ifndef DS_GKERNEL_H
#define DS_GKERNEL_H

#include <stdint.h>

/* Node `node`, or every node of graph `graph`, is destroyed. */
void ds__gkernel_node_gone(uint64_t node);
void ds__gkernel_graph_gone(uint64_t graph);

#endif
