/* The 1-D copies (copy.c), for the calls that break larger shapes into them. */
#ifndef DS_COPY_H
#define DS_COPY_H

#include <cuda.h>
#include <stddef.h>

/* n bytes in stream s's order, by whichever path suits the host memory (the shared
 * arena, the staging ring, in-band chunks).  With wait, return once the copy is
 * complete; without, device-to-host has still completed unless dst is on the arena, and
 * host-to-device has read its source. */
CUresult ds__copy_htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, int wait);
CUresult ds__copy_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s, int wait);
CUresult ds__copy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int wait);

#endif
