/* Host functions on captured streams: around kernels in each capture mode, in a clone,
 * on a stream forked from the capture, and what is refused; run through detshare by
 * test_capture_hostfn and natively by native_capture_hostfn, so that the two can be
 * compared on a GPU. */
#ifndef DS_CAPTURE_HOSTFN_CASES_H
#define DS_CAPTURE_HOSTFN_CASES_H

#include <stddef.h>

/* Run every case with the kernels of tests/kernels/launch.cu (the fatbin at `fatbin`) in
 * the current context, writing one line per observation into out (len bytes, NUL
 * terminated): each call's CUresult, the captured graph's host node, and after each
 * launch what the function saw and what the kernels left.  Returns 0, or -1 when setting
 * up failed (out then says what). */
int ds_capture_hostfn_cases(const char *fatbin, char *out, size_t len);

#endif
