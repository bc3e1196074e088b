/* Copies with a CUDA array on at least one side (array.c), for pitch.c. */
#ifndef DS_ARRAY_H
#define DS_ARRAY_H

#include <cuda.h>

/* The copy c describes, in stream s's order; with wait, return once it is complete.
 * Without, a copy into host memory has completed all the same, and one from host memory
 * has read its source. */
CUresult ds__array_copy_3d(const CUDA_MEMCPY3D *c, CUstream s, int wait);

#endif
