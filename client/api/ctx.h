/* The calling thread's current context, as CUDA keeps it: a per-thread stack. */
#ifndef DS_CTX_H
#define DS_CTX_H

#include <cuda.h>
#include <stdint.h>

/* The current context's handle in *h; CUDA_ERROR_INVALID_CONTEXT when there is none. */
CUresult ds__ctx_current(uint64_t *h);

#endif
