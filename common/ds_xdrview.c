#include "ds_xdrview.h"

#include <stdatomic.h>

static _Atomic(const struct ds_xdr_view *) view;

void ds_xdr_set_view(const struct ds_xdr_view *v)
{
    atomic_store_explicit(&view, v, memory_order_release);
}

bool_t xdr_ds_handle(XDR *xdrs, ds_handle *h)
{
    const struct ds_xdr_view *v = atomic_load_explicit(&view, memory_order_acquire);

    return v != NULL ? v->handle(xdrs, h) : ds_xdr_handle_plain(xdrs, h);
}

bool_t xdr_ds_dptr(XDR *xdrs, ds_dptr *p)
{
    const struct ds_xdr_view *v = atomic_load_explicit(&view, memory_order_acquire);

    return v != NULL ? v->dptr(xdrs, p) : ds_xdr_dptr_plain(xdrs, p);
}
