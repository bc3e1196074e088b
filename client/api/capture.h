/* What the rest of the client needs to know about stream capture. */
#ifndef DS_CAPTURE_H
#define DS_CAPTURE_H

#include <cuda.h>

/* Work on the host side of the connection cannot be part of a graph the executor
 * replays: host data crosses the connection and lives in the executor for one call, and
 * a host function runs in this process.  Such work on a capturing stream is refused, and
 * invalidates the capture as CUDA does.  Returns CUDA_SUCCESS when s is not capturing,
 * else CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
CUresult ds__capture_refuse_host_work(CUstream s);

/* Whether some stream of this process is being captured (cheap: one atomic load). */
int ds__capture_capturing_any(void);

/* The calling thread's stream capture mode (cuThreadExchangeStreamCaptureMode). */
CUstreamCaptureMode ds__capture_thread_mode(void);

#endif
