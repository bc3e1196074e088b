/*
 * A stream of one server's device waiting for an event of another's (cuStreamWaitEvent
 * across two servers of one tenant, route.h), with CUDA's meaning: the stream's later
 * work runs once the work before the event's last record is done, and the calling
 * thread is not held up for it.
 *
 * On the device: the event's executor keeps a shadow of the event (an interprocess event
 * completing with it, server/exec/ops/ops_ipc.c) and the stream's executor opens it once
 * per event and device, then waits for it on the stream.  Where it cannot be opened
 * (servers of two hosts, or a driver refusing interprocess events between two MPS
 * daemons), or DETSHARE_XDEV_WAIT=host says so, on the host: the calling thread waits
 * for the event, and the stream's later work is given after.  Each way is said once.
 */
#ifndef DS_CLIENT_XWAIT_H
#define DS_CLIENT_XWAIT_H

#include "detshare.h"

#include <cuda.h>

/* 1 with *sdev, the stream's device, when stream (a handle as sent) and event belong
 * to two devices of the tenant; 0 otherwise, at the cost of one comparison with one
 * server. */
int ds__xwait_across(ds_handle stream, ds_handle event, int *sdev);

/* cuStreamWaitEvent(stream, event, flags) for a stream of device sdev and an event of
 * another device.  Returns CUDA_SUCCESS or the error of the call that failed. */
CUresult ds__xwait(ds_handle stream, int sdev, ds_handle event, unsigned flags);

/* The tenant destroys event: its shadows opened on other devices go. */
void ds__xwait_event_gone(ds_handle event);

#endif
