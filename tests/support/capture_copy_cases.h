/* Copies of pageable host memory on captured streams, between kernels and on a stream
 * that joined the capture: run through detshare by test_graph_hostcopy and natively by
 * native_capture_copies, so that the two can be compared on a GPU. */
#ifndef DS_CAPTURE_COPY_CASES_H
#define DS_CAPTURE_COPY_CASES_H

#include <stddef.h>

/* Run every case with the kernels of tests/kernels/launch.cu (the fatbin at `fatbin`) in
 * the current context, writing one line per observation into out (len bytes, NUL
 * terminated): each call's CUresult, and after each launch what the host buffers and
 * the kernels' counter hold.  Returns 0, or -1 when setting up failed (out then says
 * what). */
int ds_capture_copy_cases(const char *fatbin, char *out, size_t len);

#endif
