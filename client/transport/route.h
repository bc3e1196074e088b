/*
 * Several servers, one tenant: which server each call goes to.  DETSHARE_SERVER may
 * list several servers; the tenant sees one device per server, in the list's order
 * (CUDA_VISIBLE_DEVICES choosing among them), and device ordinal k is session k.
 *
 * Handles of two servers could be equal, so the client tags every handle it receives
 * with its device, in the top four bits, which a server's handles never use
 * (server/exec/handles.h keeps the type below them), and strips the tag as it sends the
 * handle back to that server; a handle sent to a server it did not come from goes with
 * all four bits set, which that server refuses as a handle it never issued.  Device 0's
 * tag is 0, so a tenant with one server sees the very handles the server issued.
 *
 * A call goes to the device of the objects it names (streams, events, modules,
 * functions, graphs, pools, device addresses), else to the device of the context it
 * names, else to the calling thread's current context's: the rule CUDA follows, where a
 * stream's work runs in its stream's context.  With one server, nothing is looked at.
 */
#ifndef DS_CLIENT_ROUTE_H
#define DS_CLIENT_ROUTE_H

#include "ds_addr.h"
#include "detshare.h"

#include <stdint.h>

#define DS_ROUTE_MAX 16 /* servers of one tenant: what the tag's four bits can name */
#define DS_ROUTE_SHIFT 60

/* Which device a device address belongs to (the client's record of its allocations),
 * or -1 when it knows none. */
typedef int (*ds_route_owner_fn)(uint64_t p);

/* The servers the tenant uses, as its devices in order, into out[0 .. *n): the entries
 * of DETSHARE_SERVER, or when it is unset the default socket if there is one, else
 * every /run/detshare/gpuN/detshare.sock in N order, else the default socket; then
 * CUDA_VISIBLE_DEVICES, when set, chooses and orders them by index as CUDA chooses
 * GPUs.  Returns 0, or -1 after one line saying which entry is wrong. */
int ds__route_servers(struct ds_addr out[DS_ROUTE_MAX], int *n);

/* From now on the tenant has n devices; owner answers for device addresses.  With
 * several, installs the client's view of handles (common/ds_xdrview.h). */
void ds__route_start(int n, ds_route_owner_fn owner);

/* The device a tagged handle came from. */
static inline int ds__route_dev_of(uint64_t h)
{
    return (int)(h >> DS_ROUTE_SHIFT);
}

/* The device of the call whose arguments arg are (xarg encodes them): the calling
 * thread's pinned device if any, else as the header says.  Returns the device, or -1
 * when the objects named belong to several devices. */
int ds__route_pick(xdrproc_t xarg, void *arg);

/* The calling thread encodes for, or decodes from, device dev's server from now on. */
void ds__route_encoding(int dev);
void ds__route_decoding(int dev);

/* The calling thread's current context (0: none): the device of calls that name
 * nothing of their own. */
void ds__route_set_current(uint64_t ctx);

/* The calling thread's current context's device (0 without one). */
int ds__route_current(void);

/* Send the calling thread's calls to device dev until ds__route_unpin, whatever they
 * name: for calls that name a device by ordinal, which its server knows as 0. */
void ds__route_pin(int dev);
void ds__route_unpin(void);

/* The device the calling thread's last call went to (ds__route_pick's last answer). */
int ds__route_last(void);

#endif
