/*
 * The compile cache NVRTC asks its driver for (export table da9151d3, docs/export-tables.md
 * 4.11).  The real driver keeps NVRTC's PTX and cubin in its on-disk ComputeCache; without
 * it every runtime compile starts cold (cuDNN's runtime-compiled attention: 420 ms per new
 * shape instead of 45, measured).  The tenant compiles, so the cache lives beside it, in
 * the tenant's own files: no server, no GPU.
 */
#ifndef DS_NVRTC_CACHE_H
#define DS_NVRTC_CACHE_H

/* The table, for cuGetExportTable. */
extern void *const ds__nvrtc_cache[7];

#endif
