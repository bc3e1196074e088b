/* What other parts of the client share with launches: packing a kernel's parameters. */
#ifndef DS_LAUNCH_H
#define DS_LAUNCH_H

#include "module.h"

#include <cuda.h>

/* f's parameter bytes as a launch gives them (kernelParams, or the buffer of `extra`),
 * packed as a launch packs them, in *out (f->param_bytes bytes, at least one allocated),
 * which the caller frees.  Returns CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE or
 * CUDA_ERROR_OUT_OF_MEMORY. */
CUresult ds__launch_pack(const struct ds_cfunc *f, void **params, void **extra,
                         unsigned char **out);

#endif
