/*
 * What the rest of the client needs of IPC (ipc.c): which events are interprocess ones.
 * A record of such an event must have been carried out by the executor when
 * cuEventRecord returns, as the driver's is: another process, told by other means than
 * CUDA, may wait for it next, and would otherwise find the record before it.
 */
#ifndef DS_CLIENT_IPC_H
#define DS_CLIENT_IPC_H

#include <cuda.h>

/* Note event e as interprocess (made with CU_EVENT_INTERPROCESS or opened from a handle)
 * or, ipc 0, as gone. */
void ds__ipc_event_note(CUevent e, int ipc);

/* After cuEventRecord sent a record of e: for an interprocess event, wait until the
 * executor has carried it out.  Returns CUDA_SUCCESS or the error of a call before. */
CUresult ds__ipc_event_recorded(CUevent e);

#endif
