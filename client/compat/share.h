/*
 * detshare's own export table, DETSHARE_SHARE: how detshare's libnvidia-ml.so.1 (nvml/)
 * learns the tenant's share of its device from this library without an exported name
 * other than cu* (docs/nvml.md).  Both libraries include this header; a change of layout
 * takes a new UUID, so a pair from different builds refuses instead of misreading.
 *
 *   cuGetExportTable(&t, &DS_SHARE_TABLE_ID)   t[0]: size in bytes, t[1]: ds_share_get_fn,
 *                                              t[2]: ds_facts_get_fn
 */
#ifndef DS_CLIENT_SHARE_H
#define DS_CLIENT_SHARE_H

#include "ds_devfacts.h"

#include <cuda.h>
#include <stdint.h>

/* "detshare-nvml", then the layout's version: 2 added slot 2, 3 a text to struct
 * ds_devfacts (HOST_BOOT). */
#define DS_SHARE_TABLE_ID_BYTES                                                     \
    { 0x64, 0x65, 0x74, 0x73, 0x68, 0x61, 0x72, 0x65, 0x2d, 0x6e, 0x76, 0x6d, 0x6c, 0x00, \
      0x00, 0x03 }

/* What the tenant sees of its device now (rpcgen/detshare.x, ds_share). */
struct ds_share_info {
    uint64_t mem_total; /* its quota, or the device's memory without one */
    uint64_t mem_free;  /* as cuMemGetInfo says */
    uint64_t mem_used;  /* what it holds itself, as its quota counts it */
    uint64_t kernel_ns; /* time it had work on the device since it connected */
    uint64_t now_ns;    /* the server's monotonic clock when kernel_ns was read */
};

/* Fill *out for device dev.  Returns CUDA_SUCCESS, CUDA_ERROR_NOT_INITIALIZED before
 * cuInit, CUDA_ERROR_INVALID_DEVICE, or the transport's error. */
typedef CUresult (*ds_share_get_fn)(CUdevice dev, struct ds_share_info *out);

/* Fill *out with what NVML says of device dev (common/ds_devfacts.h), checked: a value
 * out of its fact's bounds, or a malformed text, is left unserved.  Returns as
 * ds_share_get_fn does. */
typedef CUresult (*ds_facts_get_fn)(CUdevice dev, struct ds_devfacts *out);

#endif
