/* A copy between two addresses of one server's device: the call every device-to-device
 * path ends in (copy.c, pitch.c, and peer.c once the far side is mapped).  A module of its
 * own so that peer.c, which copy.c calls for copies between devices, need not call back
 * into copy.c. */
#ifndef DS_DTOD_H
#define DS_DTOD_H

#include <cuda.h>
#include <stddef.h>

/* n bytes from src to dst in stream s's order (NULL: the legacy stream); with wait,
 * return once done. */
CUresult ds__dtod_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int wait);

#endif
