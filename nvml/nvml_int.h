/*
 * detshare's libnvidia-ml.so.1, inside: the NVML API answered from the tenant's own
 * view of its device (docs/nvml.md).  The library reaches the server only through
 * detshare's libcuda.so.1, already in the process or beside this library: its public
 * driver API for what the device is, and its private export table DETSHARE_SHARE
 * (client/compat/share.h) for the tenant's share of it.  lib.c binds and counts nvmlInit,
 * device.c answers what the device is, share.c what the tenant has of it; every name
 * nvml.h declares and these do not define is a stub (gen-stubs.sh).
 *
 * Compiled with NVML_NO_UNVERSIONED_FUNC_DEFS, so that the old unversioned names are
 * declared as themselves and can be defined beside the _v2/_v3 ones; and with hidden
 * visibility, nvml.h's declarations alone being exported.
 */
#ifndef DS_NVML_INT_H
#define DS_NVML_INT_H

#include "share.h"

#include <cuda.h>
#pragma GCC visibility push(default)
#include <nvml.h>
#pragma GCC visibility pop

/* The driver entry points used, from detshare's libcuda. */
struct ds_nvml_cuda {
    CUresult (*init)(unsigned flags);
    CUresult (*driver_version)(int *v);
    CUresult (*device_count)(int *n);
    CUresult (*device_get)(CUdevice *d, int ordinal);
    CUresult (*name)(char *name, int len, CUdevice d);
    CUresult (*attr)(int *v, CUdevice_attribute a, CUdevice d);
    CUresult (*uuid)(CUuuid *u, CUdevice d);
    CUresult (*primary_state)(CUdevice d, unsigned *flags, int *active);
    CUresult (*ctx_current)(CUcontext *c);
    ds_share_get_fn share;
};

/* A device handle points at one of these, which live as long as the process. */
struct nvmlDevice_st {
    CUdevice dev;
    unsigned index;
};

/* The bound driver entry points, or NULL before a successful nvmlInit. */
const struct ds_nvml_cuda *ds__nvml_cuda(void);

/* Check that NVML is initialised and that h is a handle it gave, and return the bound
 * driver in *cu and the device in *dev.  Returns NVML_SUCCESS,
 * NVML_ERROR_UNINITIALIZED or NVML_ERROR_INVALID_ARGUMENT. */
nvmlReturn_t ds__nvml_device(nvmlDevice_t h, const struct ds_nvml_cuda **cu, CUdevice *dev);

/* Handle of device index i (0 <= i < the count nvmlInit found), or NULL. */
nvmlDevice_t ds__nvml_handle(unsigned i);

/* The NVML code that stands for driver result rc. */
nvmlReturn_t ds__nvml_from_cu(CUresult rc);

/* Copy NUL-terminated s into buf of len bytes: NVML_ERROR_INVALID_ARGUMENT for a NULL
 * buf, NVML_ERROR_INSUFFICIENT_SIZE (buf untouched) when it does not fit. */
nvmlReturn_t ds__nvml_string(char *buf, unsigned len, const char *s);

/* Take a first utilisation reading for device dev (share.c), at nvmlInit. */
void ds__nvml_share_start(const struct ds_nvml_cuda *cu, CUdevice dev);

#endif
