/* The client's reading of replies (client/transport/wire.c) against a hostile server, as found by
 * fuzz/fuzz_reply.  A reply's verifier, which AUTH_NONE replies leave empty but a server
 * may fill, costs the client no memory, and one longer than RPC allows is refused.  A
 * reply cut into fragments inside an XDR unit is read right: the record stream
 * (common/ds_rec.c) hands the decoders words in place only where they are aligned. */
#define _GNU_SOURCE
#include "detshare.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { REPLIES = 20000 };

/* One successful ds_void_res reply to call xid, with a verifier of verf_len bytes, in
 * out; returns its length. */
static size_t reply(unsigned char *out, uint32_t xid, uint32_t verf_len)
{
    uint32_t head[] = { 0, xid, REPLY, MSG_ACCEPTED, AUTH_NONE, verf_len };
    uint32_t tail[] = { SUCCESS, 0 };
    size_t n = sizeof(head) + verf_len + sizeof(tail);

    head[0] = 0x80000000u | (uint32_t)(n - 4);
    for (size_t i = 0; i < sizeof(head) / 4; i++)
        head[i] = htonl(head[i]);
    memcpy(out, head, sizeof(head));
    memset(out + sizeof(head), 0x5a, verf_len);
    memcpy(out + sizeof(head) + verf_len, tail, sizeof(tail));
    return n;
}

struct feed {
    int fd;
    uint32_t verf_len;
    unsigned count;
    uint32_t split; /* when not 0: send each reply as two fragments, this long and the rest */
};

/* Send reply r of n bytes (one fragment) as two fragments, the first of `split` bytes. */
static int send_split(int fd, unsigned char *r, size_t n, uint32_t split)
{
    unsigned char out[1100];
    uint32_t a = htonl(split), b = htonl(0x80000000u | (uint32_t)(n - 4 - split));

    memcpy(out, &a, 4);
    memcpy(out + 4, r + 4, split);
    memcpy(out + 4 + split, &b, 4);
    memcpy(out + 8 + split, r + 4 + split, n - 4 - split);
    return send(fd, out, n + 4, MSG_NOSIGNAL) == (ssize_t)(n + 4) ? 0 : -1;
}

static void *serve(void *arg)
{
    struct feed *f = arg;
    unsigned char buf[1024];

    for (unsigned i = 1; i <= f->count; i++) {
        size_t n = reply(buf, i, f->verf_len);

        if (f->split != 0 ? send_split(f->fd, buf, n, f->split) != 0
                          : send(f->fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n)
            break;
    }
    shutdown(f->fd, SHUT_WR);
    return NULL;
}

static ds_void_res res;

static void *find(void *arg, uint32_t xid, xdrproc_t *xres, void **r)
{
    (void)xid;
    *xres = (xdrproc_t)xdr_ds_void_res;
    *r = &res;
    return arg;
}

/* Read the replies that f's thread sends; returns how many were read. */
static unsigned read_all(struct feed *f, int *last_err)
{
    pthread_t th;
    int sv[2];
    struct ds_wire *w;
    void *owner;
    unsigned n = 0;

    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    f->fd = sv[1];
    w = ds__wire_open(sv[0], 0);
    cr_assert_not_null(w);
    cr_assert_eq(pthread_create(&th, NULL, serve, f), 0);
    while ((*last_err = ds__wire_read_reply(w, find, &res, &owner)) == 0)
        n++;
    ds__wire_close(w);
    pthread_join(th, NULL);
    close(sv[1]);
    return n;
}

Test(wire, verifier_costs_no_memory)
{
    struct feed f = { .verf_len = MAX_AUTH_BYTES, .count = REPLIES };
    size_t before = mallinfo2().uordblks, after;
    int err;

    cr_assert_eq(read_all(&f, &err), REPLIES);
    after = mallinfo2().uordblks;
    /* Leaking each verifier would be 8 MB. */
    cr_assert_lt(after, before + REPLIES * MAX_AUTH_BYTES / 8, "grew from %zu to %zu", before,
                 after);
}

Test(wire, overlong_verifier_refused)
{
    struct feed f = { .verf_len = MAX_AUTH_BYTES + 4, .count = 1 };
    int err;

    cr_assert_eq(read_all(&f, &err), 0);
    cr_assert_neq(err, 0);
}

Test(wire, fragments_cut_inside_a_unit_are_read_right)
{
    struct feed whole = { .verf_len = 8, .count = 10, .split = 12 };
    struct feed odd = { .verf_len = 8, .count = 10, .split = 13 };
    int err;

    cr_assert_eq(read_all(&whole, &err), 10);
    cr_assert_eq(read_all(&odd, &err), 10);
}
