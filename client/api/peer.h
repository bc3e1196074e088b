/*
 * Between the devices of a tenant with several servers on one host (route.h): peer
 * access as the tenant enabled it, and copies from one device's memory to another's,
 * which run on the destination's device from a mapping of the source's allocation (the
 * executors' CUDA IPC exports, server/exec/ops/ops_ipc.c), never through the tenant.
 */
#ifndef DS_PEER_H
#define DS_PEER_H

#include "cuda_api.h"

#include <stdint.h>

/* Note that context ctx has (on != 0) or has not peer access to context peer's memory.
 * Returns whether it had before. */
int ds__peer_access_set(uint64_t ctx, uint64_t peer, int on);

/* 1 with *sdev and *ddev when src and dst are device memory of two devices of the
 * tenant; 0 otherwise, at the cost of one comparison with one server. */
int ds__peer_across(CUdeviceptr dst, CUdeviceptr src, int *ddev, int *sdev);

/* Copy n bytes from src (device sdev's memory) to dst (device ddev's) on stream s of
 * ddev (NULL: dst_ctx's legacy stream).  wait: once sdev's work so far is done
 * (src_ctx's), and return once the copy is done; else in s's order only. */
CUresult ds__peer_copy(CUdeviceptr dst, int ddev, CUcontext dst_ctx, CUdeviceptr src, int sdev,
                       CUcontext src_ctx, size_t n, CUstream s, int wait);

/* Allocation base of device dev is freed: close its mappings on other devices. */
void ds__peer_forget(uint64_t base, int dev);

#endif
