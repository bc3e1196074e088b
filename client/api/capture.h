/* What the rest of the client needs to know about stream capture. */
#ifndef DS_CAPTURE_H
#define DS_CAPTURE_H

#include <cuda.h>

/* Work on the host side of the connection that a capture cannot hold (a stream callback,
 * which CUDA refuses in a capture too; host data that crosses the connection and lives
 * in the executor for one call) is refused on a capturing stream, and invalidates the
 * capture as CUDA does.  Returns CUDA_SUCCESS when s is not capturing,
 * else CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
CUresult ds__capture_refuse_host_work(CUstream s);

/* cuLaunchHostFunc's part in a capture: the executor makes fn(data) a host node of the
 * capture s is in (its own, or one it joined), *taken then 1; *taken is 0 when s is not
 * being captured.  A capture that cannot take it is invalidated. */
CUresult ds__capture_host_fn(CUstream s, CUhostFn fn, void *data, int *taken);

/* Whether some stream of this process is being captured (cheap: one atomic load). */
int ds__capture_capturing_any(void);

/* The calling thread's stream capture mode (cuThreadExchangeStreamCaptureMode). */
CUstreamCaptureMode ds__capture_thread_mode(void);

#endif
