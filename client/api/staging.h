/*
 * Pageable copies of a local tenant, pipelined through a ring of page-locked slots on
 * the arena it shares with its executor: the tenant's memcpy into (or out of) one slot
 * overlaps the DMA of the others, no bytes cross the socket, and neither side needs
 * memory in proportion to the copy.  The ring (DS_STAGING_SLOTS of DS_STAGING_SLOT bytes)
 * is made at the first such copy; a remote tenant has no arena and no ring.
 */
#ifndef DS_STAGING_H
#define DS_STAGING_H

#include <cuda.h>
#include <stddef.h>

#define DS_STAGING_SLOTS 4
#define DS_STAGING_SLOT (4u << 20)
/* Below this, one in-band round trip costs less than staging. */
#define DS_STAGING_MIN (64u << 10)

/* 1 when copies of n bytes go through the ring (making it on first use). */
int ds__staging_usable(size_t n);

/* Host to device on stream s.  Returns once the source has been read, as CUDA does for
 * pageable memory; with wait, also once the copy is complete. */
CUresult ds__staging_htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, int wait);

/* Device to host on stream s; returns once the bytes are in dst. */
CUresult ds__staging_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s);

#endif
