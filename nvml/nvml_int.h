/*
 * detshare's libnvidia-ml.so.1, inside: the NVML API answered from the tenant's own
 * view of its device (docs/nvml.md).  The library reaches the server only through
 * detshare's libcuda.so.1, already in the process or beside this library: its public
 * driver API for what the device is, and its private export table DETSHARE_SHARE
 * (client/compat/share.h) for the tenant's share of it and for what the server's NVML
 * says of the device.  lib.c binds and counts nvmlInit, device.c answers what the device
 * is from the driver API, facts.c and topo.c from the server's NVML, share.c what the
 * tenant has of it, events.c event sets; every name nvml.h declares and these do not
 * define is a stub (gen-stubs.sh).
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

/* NVIDIA's undocumented table that nvidia-smi asks for (internal.c); not in nvml.h.
 * Sets *table and returns NVML_SUCCESS for the one id served, else sets *table to NULL
 * and returns NVML_ERROR_NOT_SUPPORTED; NVML_ERROR_INVALID_ARGUMENT for a NULL
 * argument.  The table lives as long as the process. */
__attribute__((visibility("default"))) nvmlReturn_t nvmlInternalGetExportTable(
    const void **table, const void *id);

/* What a process may see: one device per server the tenant names, as many as detshare's
 * libcuda connects to (DS_ROUTE_MAX in client/transport/route.h, which this library does
 * not include: it binds only the client's public names and its export table). */
#define DS_NVML_MAX_DEVICES 16

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
    ds_facts_get_fn facts;
};

/* A device handle points at one of these, which live as long as the process; index is
 * also the device's place in the per-device state of facts.c and share.c. */
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

/* Whether the calling process runs on the device behind h (it has a context there or
 * holds memory there: a process NVML lists) into *is, and the memory it holds into
 * *used (share.c).  Returns NVML_SUCCESS or the error of the handle or of the server. */
nvmlReturn_t ds__nvml_running(nvmlDevice_t h, unsigned long long *used, int *is);

/* The list protocol every process list shares, for a list of n entries into infos,
 * *count of them room: NVML_ERROR_INVALID_ARGUMENT for a NULL count, or for NULL infos
 * with n > 0; with room for fewer than n, *count = n and NVML_ERROR_INSUFFICIENT_SIZE;
 * else *count = n and NVML_SUCCESS, the caller then writing the n entries. */
nvmlReturn_t ds__nvml_room(unsigned *count, const void *infos, unsigned n);

/* An empty process list of device h (graphics, MPS): *count = 0 and NVML_SUCCESS, or
 * the error of the handle or of count. */
nvmlReturn_t ds__nvml_no_processes(nvmlDevice_t h, unsigned *count);

/* What the server's NVML says of the device behind h (facts.c), at most a second old.
 * Returns NVML_SUCCESS or the error of the handle or of the server. */
nvmlReturn_t ds__nvml_facts(nvmlDevice_t h, struct ds_devfacts *out);

/* The video clock's highest, from the server's NVML (facts.c): as a public query would
 * answer it. */
nvmlReturn_t ds__nvml_max_video_clock(nvmlDevice_t h, unsigned *mhz);

/* Take a first utilisation reading of the device behind h (share.c), at nvmlInit. */
void ds__nvml_share_start(const struct ds_nvml_cuda *cu, nvmlDevice_t h);

#endif
