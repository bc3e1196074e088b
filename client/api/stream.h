/* Stream values as the executor knows them. */
#ifndef DS_STREAM_H
#define DS_STREAM_H

#include <cuda.h>

#include "detshare.h"

/* The executor's handle for stream value s.  CU_STREAM_PER_THREAD becomes the calling
 * thread's own default stream, created on first use in the current context and
 * destroyed when the thread exits; like CUDA's, it is a blocking stream, ordered with
 * the legacy default stream.  Without a current context it stays CU_STREAM_PER_THREAD,
 * which the executor serves as the legacy stream. */
ds_handle ds__stream_of(CUstream s);

/* Record that the call this thread just made waited for all work of stream h (or, with
 * all != 0, of every stream): until the next call of any kind, synchronising or querying
 * it needs no round trip. */
void ds__stream_quiet(ds_handle h, int all);

/* 1 when every stream is known to be idle (see ds__stream_quiet). */
int ds__stream_all_quiet(void);

#endif
