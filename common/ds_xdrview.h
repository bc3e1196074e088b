/*
 * How one side of the wire sees handles and device addresses as they are encoded and
 * decoded.  rpcgen's routines for ds_handle and ds_dptr are renamed (CMake edits its
 * output) to ds_xdr_handle_plain and ds_xdr_dptr_plain, and xdr_ds_handle and
 * xdr_ds_dptr, which every generated routine calls for such a field, go through the
 * process's view when it has set one.  The server sets none.  The client's view tags
 * each handle with the server it came from, so that handles of several servers never
 * collide in the tenant, and finds which server a call's objects belong to
 * (client/transport/route.c).
 */
#ifndef DS_XDRVIEW_H
#define DS_XDRVIEW_H

#include "detshare.h"

struct ds_xdr_view {
    bool_t (*handle)(XDR *xdrs, ds_handle *h);
    bool_t (*dptr)(XDR *xdrs, ds_dptr *p);
};

/* Route every later ds_handle and ds_dptr through v (static storage; NULL: plain). */
void ds_xdr_set_view(const struct ds_xdr_view *v);

/* rpcgen's own routines, for a view to call. */
bool_t ds_xdr_handle_plain(XDR *xdrs, ds_handle *h);
bool_t ds_xdr_dptr_plain(XDR *xdrs, ds_dptr *p);

#endif
