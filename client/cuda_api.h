/*
 * Include this before anything else in client sources.
 *
 * __CUDA_API_VERSION_INTERNAL is how cuda.h lets a driver implementation see every
 * entry point under its literal exported name (cuMemAlloc_v2 and the legacy cuMemAlloc
 * alike) instead of the application-facing macros.  The library is built with hidden
 * visibility; wrapping cuda.h (and cudaProfiler.h, the rest of the driver's API) in a
 * default-visibility region exports exactly the driver API's functions, and libcuda.map
 * keeps everything else local.
 */
#ifndef DS_CUDA_API_H
#define DS_CUDA_API_H

#define __CUDA_API_VERSION_INTERNAL 1
#pragma GCC visibility push(default)
#include <cuda.h>
#include <cudaProfiler.h>
#pragma GCC visibility pop

#endif
