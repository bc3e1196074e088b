/*
 * Managed memory of a local tenant: pages of the host arena, at the same address in the
 * tenant and its executor, registered with the device there, so one pointer serves the
 * program and its kernels.  Coherent at synchronisation as CUDA promises; the device
 * reaches the pages over the bus, never migrating them.  A remote tenant has none.
 */
#ifndef DS_MANAGED_H
#define DS_MANAGED_H

#include "cuda_api.h"

#include <stdint.h>

/* 1 when p lies in a managed allocation, with *base and *size the allocation's (either
 * may be NULL); 0 otherwise. */
int ds__managed_range(uint64_t p, uint64_t *base, uint64_t *size);

/* cuMemFree of managed memory: p must be where an allocation starts. */
CUresult ds__managed_free(uint64_t p);

#endif
