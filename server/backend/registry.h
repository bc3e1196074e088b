/*
 * The device backends this server has, and the one place where one is chosen: at
 * start, for `detshare-server --device` (main.c), and in each executor, by the device
 * the control block names (executor.c).  The control process reads only an entry's name
 * and device; the operations are for executors.
 */
#ifndef DS_REGISTRY_H
#define DS_REGISTRY_H

#include "ds_groups.h"

#include <stddef.h>
#include <stdint.h>

struct ds_backend_ops;

/* What the choice is asked about (--gpu, --sim-sms, --sim-memory). */
struct ds_backend_want {
    int gpu;             /* device ordinal on the host */
    int sim_sms;         /* sim: SM count */
    uint64_t sim_memory; /* sim: bytes of device memory */
};

struct ds_backend_entry {
    const char *name;
    unsigned device;                  /* enum ds_shm_device */
    const struct ds_backend_ops *ops; /* what executors run */
    int mps;                          /* tenants share the device through an MPS daemon */
    /* Whether the device w names can be served here: 0 with its SM groups and memory
     * (0: not known), or DS_E* with the reason in why.  Never initialises CUDA in the
     * calling process. */
    int (*probe)(const struct ds_backend_want *w, struct ds_sm_groups *groups,
                 uint64_t *memory, char *why, size_t len);
};

/* The backend for `--device want`: a backend's name, or "auto" for the first, in the
 * registry's order, whose probe passes (the sim, last, always does).  Returns 0 with
 * *out and its groups and memory, and in why, for "auto", what passed over the backends
 * before it ("" when none was); DS_EINVAL for a name no backend has, with the choices
 * in why; or the error of the named backend's probe (*out set), its reason in why. */
int ds_registry_choose(const char *want, const struct ds_backend_want *w,
                       const struct ds_backend_entry **out, struct ds_sm_groups *groups,
                       uint64_t *memory, char *why, size_t len);

/* The backend of control-block device `device` (enum ds_shm_device), or NULL. */
const struct ds_backend_entry *ds_registry_device(unsigned device);

#endif
