#include "ds_rec.h"

#include "ds_error.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LAST_FRAG 0x80000000u
#define FRAG_MAX 0x7fffffffu /* a fragment's length has 31 bits */
#define MARK 4u              /* bytes of a fragment's mark */
#define GRANT_STEP (1u << 20) /* the least a budget's grant is asked for */

struct rec {
    void *h;
    ds_rec_read_fn rd;
    ds_rec_writev_fn wr;
    /* Sending: out[0, pos) is whole fragments and, from frag on, the current one, whose
     * mark is written when it ends. */
    unsigned char *out;
    size_t osz, frag, pos;
    /* Receiving: in[ipos, iend) was read and not yet used; fleft bytes of the current
     * fragment are still to be used, buffered or not; last: it ends its record. */
    unsigned char *in;
    size_t isz, ipos, iend;
    uint32_t fleft;
    int last;
    struct ds_rec_stats st;
    /* The budget (ds_rec_budget), of the record being decoded: taken of it, allowed
     * (free_bytes and what grant gave), granted. */
    ds_rec_grant_fn grant;
    void *gh;
    size_t free_bytes, taken, allowed, granted;
    int refused;
};

static void put_mark(struct rec *r, size_t at, size_t len, int last)
{
    uint32_t m = htonl((uint32_t)len | (last ? LAST_FRAG : 0));

    memcpy(r->out + at, &m, MARK);
}

/* End the current fragment, unfinished, and write everything buffered followed by
 * more[0, nmore); an empty fragment is left out (xdrrec refuses one that is not last). */
static bool_t flush_frag(struct rec *r, const struct iovec *more, int nmore)
{
    struct iovec iov[3];
    size_t end = r->frag;
    int n = 0;

    if (r->pos > r->frag + MARK) {
        put_mark(r, r->frag, r->pos - r->frag - MARK, 0);
        end = r->pos;
    }
    if (end > 0)
        iov[n++] = (struct iovec){ .iov_base = r->out, .iov_len = end };
    for (int i = 0; i < nmore; i++)
        iov[n++] = more[i];
    r->st.out_buffered += end;
    r->frag = 0;
    r->pos = MARK;
    return n == 0 || r->wr(r->h, iov, n) == 0;
}

/* A fragment of its own for bytes the encoder found at p, written from there. */
static bool_t put_direct(struct rec *r, const char *p, size_t len)
{
    while (len > 0) {
        uint32_t k = len < FRAG_MAX ? (uint32_t)len : FRAG_MAX, m = htonl(k);
        struct iovec more[2] = { { .iov_base = &m, .iov_len = MARK },
                                 { .iov_base = (void *)(uintptr_t)p, .iov_len = k } };

        if (!flush_frag(r, more, 2))
            return FALSE;
        r->st.out_direct += k;
        p += k;
        len -= k;
    }
    return TRUE;
}

static bool_t put_bytes(XDR *x, const char *p, u_int len)
{
    struct rec *r = x->x_private;

    if (len >= DS_REC_DIRECT)
        return put_direct(r, p, len);
    while (len > 0) {
        size_t k = r->osz - r->pos;

        if (k == 0) {
            if (!flush_frag(r, NULL, 0))
                return FALSE;
            continue;
        }
        if (k > len)
            k = len;
        memcpy(r->out + r->pos, p, k);
        r->pos += k;
        p += k;
        len -= (u_int)k;
    }
    return TRUE;
}

static bool_t put_long(XDR *x, const long *lp)
{
    uint32_t v = htonl((uint32_t)*lp);

    return put_bytes(x, (const char *)&v, sizeof(v));
}

bool_t ds_rec_endofrecord(XDR *x, bool_t now)
{
    struct rec *r = x->x_private;
    struct iovec iov;

    put_mark(r, r->frag, r->pos - r->frag - MARK, 1);
    if (!now && r->pos + MARK <= r->osz) {
        r->frag = r->pos;
        r->pos += MARK;
        return TRUE;
    }
    iov = (struct iovec){ .iov_base = r->out, .iov_len = r->pos };
    r->st.out_buffered += r->pos;
    r->frag = 0;
    r->pos = MARK;
    return r->wr(r->h, &iov, 1) == 0;
}

/* Read into the empty buffer; FALSE at end of stream. */
static bool_t fill(struct rec *r)
{
    ssize_t n = r->rd(r->h, r->in, r->isz);

    if (n <= 0)
        return FALSE;
    r->ipos = 0;
    r->iend = (size_t)n;
    r->st.in_buffered += (size_t)n;
    return TRUE;
}

/* The stream's next len bytes, marks and all, into p (NULL: dropped).  Once the buffer
 * is empty, a long enough rest is read in place. */
static bool_t get_raw(struct rec *r, unsigned char *p, size_t len)
{
    while (len > 0) {
        size_t k = r->iend - r->ipos;

        if (k == 0 && p != NULL && len >= DS_REC_DIRECT) {
            ssize_t n = r->rd(r->h, p, len);

            if (n <= 0)
                return FALSE;
            r->st.in_direct += (size_t)n;
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (k == 0) {
            if (!fill(r))
                return FALSE;
            continue;
        }
        if (k > len)
            k = len;
        if (p != NULL) {
            memcpy(p, r->in + r->ipos, k);
            p += k;
        }
        r->ipos += k;
        len -= k;
    }
    return TRUE;
}

static bool_t next_fragment(struct rec *r)
{
    uint32_t m;

    if (!get_raw(r, (unsigned char *)&m, MARK))
        return FALSE;
    m = ntohl(m);
    r->fleft = m & FRAG_MAX;
    r->last = (m & LAST_FRAG) != 0;
    return TRUE;
}

/* Take k more bytes of the record, asking the budget's grant when they pass it. */
static bool_t admit(struct rec *r, size_t k)
{
    size_t need;

    if (r->grant == NULL)
        return TRUE;
    if (k > r->allowed - r->taken) {
        need = k - (r->allowed - r->taken);
        if (need < GRANT_STEP)
            need = GRANT_STEP;
        if (r->refused || r->grant(r->gh, need) != 0) {
            r->refused = 1;
            return FALSE;
        }
        r->allowed += need;
        r->granted += need;
    }
    r->taken += k;
    return TRUE;
}

/* The record's next len bytes into p (NULL: dropped); FALSE past its end. */
static bool_t get_record(struct rec *r, unsigned char *p, size_t len)
{
    while (len > 0) {
        size_t k;

        if (r->fleft == 0) {
            if (r->last || !next_fragment(r))
                return FALSE;
            continue;
        }
        k = len < r->fleft ? len : r->fleft;
        if (!admit(r, k) || !get_raw(r, p, k))
            return FALSE;
        r->fleft -= (uint32_t)k;
        len -= k;
        if (p != NULL)
            p += k;
    }
    return TRUE;
}

static bool_t get_bytes(XDR *x, char *p, u_int len)
{
    return get_record(x->x_private, (unsigned char *)p, len);
}

static bool_t get_long(XDR *x, long *lp)
{
    uint32_t v;

    if (!get_record(x->x_private, (unsigned char *)&v, sizeof(v)))
        return FALSE;
    *lp = (long)(int32_t)ntohl(v);
    return TRUE;
}

/* Drop the rest of the current record; FALSE when a read failed. */
static bool_t drop_record(struct rec *r)
{
    while (r->fleft > 0 || !r->last) {
        if (!get_raw(r, NULL, r->fleft))
            return FALSE;
        r->fleft = 0;
        if (!r->last && !next_fragment(r))
            return FALSE;
    }
    return TRUE;
}

bool_t ds_rec_skiprecord(XDR *x)
{
    struct rec *r = x->x_private;

    if (!drop_record(r))
        return FALSE;
    r->last = 0;
    r->taken = r->granted = 0;
    r->allowed = r->free_bytes;
    r->refused = 0;
    return TRUE;
}

bool_t ds_rec_eof(XDR *x)
{
    struct rec *r = x->x_private;

    return !drop_record(r) || r->ipos == r->iend;
}

int ds_rec_fill(XDR *x)
{
    struct rec *r = x->x_private;

    return r->ipos < r->iend || fill(r);
}

void ds_rec_stats(XDR *x, struct ds_rec_stats *out)
{
    *out = ((struct rec *)x->x_private)->st;
}

void ds_rec_budget(XDR *x, size_t free_bytes, ds_rec_grant_fn grant, void *h)
{
    struct rec *r = x->x_private;

    r->grant = grant;
    r->gh = h;
    r->free_bytes = r->allowed = free_bytes;
}

size_t ds_rec_taken(XDR *x)
{
    return ((struct rec *)x->x_private)->taken;
}

size_t ds_rec_granted(XDR *x)
{
    return ((struct rec *)x->x_private)->granted;
}

int ds_rec_refused(XDR *x)
{
    return ((struct rec *)x->x_private)->refused;
}

/* Positions are not kept: nothing that runs over a record stream asks for them. */
static u_int get_pos(XDR *x)
{
    (void)x;
    return (u_int)-1;
}

static bool_t set_pos(XDR *x, u_int pos)
{
    (void)x;
    (void)pos;
    return FALSE;
}

/* Room for len bytes, aligned, in the buffer of the direction x runs in, which the
 * caller fills or reads in place; NULL when there is none (the XDR routines then take
 * the field-by-field path).  Small calls are mostly such runs of fields. */
static int32_t *in_place(XDR *x, u_int len)
{
    struct rec *r = x->x_private;
    unsigned char *p;

    if (x->x_op == XDR_ENCODE) {
        p = r->out + r->pos;
        if (len > r->osz - r->pos || ((uintptr_t)p & 3) != 0)
            return NULL;
        r->pos += len;
        return (int32_t *)(void *)p;
    }
    if (x->x_op != XDR_DECODE)
        return NULL;
    p = r->in + r->ipos;
    if (len > r->fleft || len > r->iend - r->ipos || ((uintptr_t)p & 3) != 0)
        return NULL;
    r->ipos += len;
    r->fleft -= len;
    return (int32_t *)(void *)p;
}

static bool_t no_control(XDR *x, int req, void *info)
{
    (void)x;
    (void)req;
    (void)info;
    return FALSE;
}

static void destroy(XDR *x)
{
    struct rec *r = x->x_private;

    free(r->out);
    free(r->in);
    free(r);
    x->x_private = NULL;
}

static const struct xdr_ops rec_ops = {
    .x_getlong = get_long,
    .x_putlong = put_long,
    .x_getbytes = get_bytes,
    .x_putbytes = put_bytes,
    .x_getpostn = get_pos,
    .x_setpostn = set_pos,
    .x_inline = in_place,
    .x_destroy = destroy,
    .x_control = no_control,
};

int ds_rec_create(XDR *x, size_t sendsz, size_t recvsz, void *h, ds_rec_read_fn rd,
                  ds_rec_writev_fn wr)
{
    struct rec *r = calloc(1, sizeof(*r));

    if (r != NULL) {
        r->out = malloc(sendsz < 64 ? 64 : sendsz);
        r->in = malloc(recvsz < 64 ? 64 : recvsz);
    }
    if (r == NULL || r->out == NULL || r->in == NULL) {
        if (r != NULL) {
            free(r->out);
            free(r->in);
        }
        free(r);
        return DS_ENOMEM;
    }
    r->osz = sendsz < 64 ? 64 : sendsz;
    r->isz = recvsz < 64 ? 64 : recvsz;
    r->h = h;
    r->rd = rd;
    r->wr = wr;
    r->pos = MARK;
    r->last = 1; /* as after a whole record: the first read starts one */
    memset(x, 0, sizeof(*x));
    x->x_ops = (struct xdr_ops *)(uintptr_t)&rec_ops;
    x->x_private = r;
    return 0;
}
