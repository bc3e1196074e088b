/*
 * A TCP session's data connections (docs/protocol.md, "Data"): up to
 * DETSHARE_TCP_STREAMS - 1 extra connections to the server (default 1: none), attached
 * with the secret the hello gave at the session's first large copy, over which large
 * in-band copies travel chunk by chunk, round-robin, one thread per connection, while the call
 * that announces each copy keeps its place on the first connection.  A session whose
 * attaches fail (an older server, TLS, a refusal) has none and copies over its first
 * connection as before.
 */
#ifndef DS_CLIENT_STRIPE_H
#define DS_CLIENT_STRIPE_H

#include "detshare.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Copies of fewer bytes go over the first connection: a thread per connection is not
 * worth it for them. */
#define DS_STRIPE_MIN (2u * DS_CHUNK_MAX)

/* Copy n bytes between pageable host memory and device memory dev (to the device when
 * to_device) on stream, striped, when the session that serves dev has data
 * connections and n is at least DS_STRIPE_MIN: *done says whether it was.  A striped
 * copy to the device has been queued when this returns, one to the host has completed.
 * Returns the copy's CUresult; CUDA_ERROR_DEVICE_UNAVAILABLE when a data connection
 * failed (the server ends the session then). */
CUresult ds__stripe_copy(int to_device, CUdeviceptr dev, char *host, size_t n, uint64_t stream,
                         int *done);

#endif
