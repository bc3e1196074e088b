/* Launches the driver refuses before they return, one of each kind, and their
 * neighbours it accepts: run through detshare by test_launch_checks and natively by
 * native_launch_checks, so that the two can be compared on a GPU. */
#ifndef DS_LAUNCH_CASES_H
#define DS_LAUNCH_CASES_H

#include <stddef.h>

/* Run every case on the kernels of tests/kernels/limits.cu (the fatbin at `fatbin`) in
 * the current context, writing "name result\n" for each into out (len bytes, NUL
 * terminated): the CUresult of the launch, or for the *_max_threads lines the kernel's
 * CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK.  The last line, "sync", is what
 * cuCtxSynchronize returns after them all.  Returns 0, or -1 when setting up failed
 * (out then says what). */
int ds_launch_cases(const char *fatbin, char *out, size_t len);

#endif
