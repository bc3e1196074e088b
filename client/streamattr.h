/* Stream attributes (cuStreamSetAttribute): kept by the client, and given to every
 * kernel launched on the stream as launch attributes, which is what they mean to the
 * driver, so that the executor's real streams, which a virtual stream moves between,
 * need to know nothing of them. */
#ifndef DS_STREAMATTR_H
#define DS_STREAMATTR_H

#include "detshare.h"

/* Append to attrs (n given, room for max) the attributes set on stream h that the
 * launch does not give itself.  Returns the new count. */
unsigned ds__streamattr_merge(ds_handle h, ds_launch_attr *attrs, unsigned n, unsigned max);

/* Stream h is gone: its attributes with it. */
void ds__streamattr_forget(ds_handle h);

#endif
