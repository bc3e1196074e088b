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

/* fn is called with a stream's handle when the stream is destroyed.  One hook: stream
 * attributes set it once some stream has any, since they lie above streams (launches
 * read them) and must go with the stream. */
typedef void (*ds_stream_end_fn)(ds_handle h);
void ds__stream_on_destroy(ds_stream_end_fn fn);

#endif
