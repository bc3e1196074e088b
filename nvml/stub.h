/* The fate of every NVML function this library does not serve (stubs.c, gen-stubs.sh). */
#ifndef DS_NVML_STUB_H
#define DS_NVML_STUB_H

#include <stdatomic.h>

/* Log "NAME is not served" the first time (per *once, at debug level: nvidia-smi asks
 * for dozens) and return NVML_ERROR_NOT_SUPPORTED. */
int ds__nvml_unsupported(const char *name, atomic_int *once);

/* Log "NAME: a tenant may not change the device" the first time (per *once) and return
 * NVML_ERROR_NO_PERMISSION. */
int ds__nvml_denied(const char *name, atomic_int *once);

#endif
