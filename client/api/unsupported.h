/* The fate of every driver entry point this library does not implement yet. */
#ifndef DS_UNSUPPORTED_H
#define DS_UNSUPPORTED_H

#include <stdatomic.h>

/* Log "NAME is not supported" the first time (per *once) and return
 * CUDA_ERROR_NOT_SUPPORTED. */
int ds__unsupported(const char *name, atomic_int *once);

#endif
