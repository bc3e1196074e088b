/* User objects (cuUserObject*) and the references graphs and instantiated graphs hold on
 * them: all in this process, where their destructors run. */
#ifndef DS_USEROBJ_H
#define DS_USEROBJ_H

#include <cuda.h>
#include <stdint.h>

/* Owner `to` (a graph or an instantiated graph) takes references to every user object
 * `from` holds, as many as it holds.  CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult ds__userobj_share(uint64_t from, uint64_t to);

/* Owner `owner` is gone: its references are released.  With `sync`, the context's work
 * is waited for first when it held any, so that no destructor runs while work it may
 * have been guarding still runs. */
void ds__userobj_drop(uint64_t owner, int sync);

#endif
