/* The calling thread's current context, as CUDA keeps it: a per-thread stack. */
#ifndef DS_CTX_H
#define DS_CTX_H

#include <cuda.h>
#include <stdint.h>

/* The current context's handle in *h; CUDA_ERROR_INVALID_CONTEXT when there is none. */
CUresult ds__ctx_current(uint64_t *h);

/* Send the calling thread's calls to device dev's server (route.h) until
 * ds__route_unpin: for a call naming the device by ordinal, which its server knows as
 * device 0.  Returns CUDA_SUCCESS, or CUDA_ERROR_INVALID_DEVICE (nothing pinned) when
 * the tenant has no such device. */
CUresult ds__ctx_pin(CUdevice dev);

/* A memory location's id as device dev's server numbers its devices: device dev is its
 * device 0, another device of the tenant is -1 (which it refuses: no server reaches
 * another's memory); a host location, or an ordinal of no device of the tenant, goes as
 * it is. */
int ds__ctx_loc_id(int type, int id, int dev);

/* For a call whose device a memory location names: pins the calling thread to a device
 * location's device (ds__ctx_pin) and gives the id its server knows it by in *wire_id;
 * any other location pins nothing and keeps its id.  Returns CUDA_SUCCESS or
 * CUDA_ERROR_INVALID_DEVICE; the caller unpins (ds__route_unpin) either way. */
CUresult ds__ctx_pin_location(int type, int id, int *wire_id);

/* fn is called with a context's handle when the context ends (destroyed, reset, or
 * released for the last time), from now on; setting the same fn again changes nothing.
 * Hooks, not calls from here: what keeps values that must go with contexts (context-local
 * storage, peer access, waits across devices) lies above contexts and sets its hook on
 * first use.  At most DS_CTX_END_HOOKS are kept. */
#define DS_CTX_END_HOOKS 4
typedef void (*ds_ctx_end_fn)(uint64_t ctx);
void ds__ctx_on_end(ds_ctx_end_fn fn);

#endif
