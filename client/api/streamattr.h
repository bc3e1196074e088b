/* Stream attributes (cuStreamSetAttribute): kept by the client, and given to every
 * kernel launched on the stream as launch attributes, which is what they mean to the
 * driver, so that the executor's real streams, which a virtual stream moves between,
 * need to know nothing of them. */
#ifndef DS_STREAMATTR_H
#define DS_STREAMATTR_H

#include "detshare.h"

/* The launch's attributes with those set on stream h that it does not give itself: the
 * launch's own `given` (*n of them) when the stream adds none, else `room` (room for max)
 * holding both, *n their count. */
ds_launch_attr *ds__streamattr_merge(ds_handle h, ds_launch_attr *given,
                                     unsigned *n, ds_launch_attr *room, unsigned max);

#endif
