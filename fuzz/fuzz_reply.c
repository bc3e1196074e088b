/*
 * libFuzzer target: the client's reading of replies from a hostile server
 * (client/transport/wire.c's ds__wire_read_reply, the generated XDR decoders of every result).
 *
 * The input is what the server sends on the socket, record marking and all, fed by a
 * peer thread.  Replies are read as client/transport/rpc.c's reader does, until the transport
 * fails or a reply is refused; each reply's xid says whose call it answers, as a table
 * of pending calls would: here the xid is the procedure's number, so that the seeds'
 * replies (real sessions, fuzz/record.c) are decoded as the results they are.
 * Each decoded result is freed as the client frees it.
 */
#include "ds_procs.h"
#include "fuzz_io.h"
#include "wire.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

union any_res {
#define RES_S(n, P, A, R) R n;
#define RES_B(n, P, A)
    DS_PROCS(RES_S, RES_B)
#undef RES_S
#undef RES_B
};

/* The result decoder of each synchronous procedure, by number. */
static const xdrproc_t results[DS_PROC_MAX + 1] = {
#define XRES_S(n, P, A, R) [P] = (xdrproc_t)xdr_##R,
#define XRES_B(n, P, A)
    DS_PROCS(XRES_S, XRES_B)
#undef XRES_S
#undef XRES_B
};

struct pending {
    union any_res res;
    xdrproc_t xres;
};

static bool_t no_result(XDR *xdrs, void *p)
{
    (void)xdrs;
    (void)p;
    return TRUE;
}

/* The xid is the number of the procedure called (ds-fuzz-record writes the seeds so):
 * 0 is DS_NULL, and a procedure that gets no reply is a call nobody awaits. */
static void *find(void *arg, uint32_t xid, xdrproc_t *xres, void **res)
{
    struct pending *p = arg;

    if (xid != 0 && (xid > DS_PROC_MAX || results[xid] == NULL))
        return NULL;
    p->xres = xid == 0 ? (xdrproc_t)no_result : results[xid];
    memset(&p->res, 0, sizeof(p->res));
    *xres = p->xres;
    *res = &p->res;
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ds_fuzz_peer peer;
    struct ds_wire *w;
    struct pending p;
    void *owner;
    int sv[2], fds = ds_fuzz_open_fds();

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    w = ds__wire_open(sv[0], 0);
    if (w == NULL || ds_fuzz_peer_start(&peer, sv[1], data, size, NULL) != 0)
        abort();
    while (ds__wire_read_reply(w, find, &p, &owner) == 0)
        xdr_free(p.xres, (char *)&p.res);
    ds__wire_close(w);
    ds_fuzz_peer_join(&peer);
    if (ds_fuzz_open_fds() != fds)
        abort();
    return 0;
}
