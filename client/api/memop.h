/* Stream memory operations: what the batch memory operation graph nodes (gmemop.c) share
 * with the stream calls (streammem.c). */
#ifndef DS_MEMOP_H
#define DS_MEMOP_H

#include <cuda.h>

#include "detshare.h"

/* Operation p in wire form; the union member read is the operation's own. */
void ds__memop_to_wire(const CUstreamBatchMemOpParams *p, ds_memop *m);

#endif
