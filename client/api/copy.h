/* The 1-D copies (copy.c), for the calls that break larger shapes into them and for
 * graph copy nodes whose host side is this process's memory. */
#ifndef DS_COPY_H
#define DS_COPY_H

#include "detshare.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* n bytes in stream s's order, by whichever path suits the host memory (the shared
 * arena, the staging ring, in-band chunks).  With wait, return once the copy is
 * complete; without, device-to-host has still completed unless dst is on the arena, and
 * host-to-device has read its source. */
CUresult ds__copy_htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, int wait);
CUresult ds__copy_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s, int wait);
CUresult ds__dtod_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int wait);

/* 1 when the n bytes at host are host memory the device reaches (page-locked, registered
 * or managed memory of the shared arena), their device address in *out; 0 otherwise. */
int ds__copy_device_view(const void *host, size_t n, uint64_t *out);

/* Do a copy node's copy whose host side is this process's memory (c->host), in stream
 * order on s, complete when this returns. */
CUresult ds__copy_node_here(const ds_memcpy_node *c, CUstream s);

#endif
