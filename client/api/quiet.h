/*
 * Streams known to have nothing in flight, from the last call that waited for them until
 * the next call of any kind.  PyTorch's .item() is a copy to the host (which waits for
 * its stream) and then a stream synchronize: the second needs no round trip.  Kept apart
 * from streams because a context's synchronize both reads and sets it.  Known of one
 * device at a time: the one the waiting call went to (with several servers, a stream
 * number such as the legacy stream's names a stream of each).
 */
#ifndef DS_QUIET_H
#define DS_QUIET_H

#include "detshare.h"

/* Record that the call this thread just made waited for all work of stream h (or, with
 * all != 0, of every stream of context h's device): until the next call of any kind,
 * synchronising or querying it needs no round trip. */
void ds__quiet_mark(ds_handle h, int all);

/* 1 when stream h (with all != 0: every stream of context h's device) is known to be
 * idle. */
int ds__quiet_is(ds_handle h, int all);

#endif
