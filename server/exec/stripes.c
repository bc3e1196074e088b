#define _GNU_SOURCE
#include "stripes.h"

#include "bulk.h"
#include "detshare.h"
#include "ds_error.h"
#include "ds_log.h"
#include "ds_preface.h"
#include "ds_sock.h"
#include "exec_spawn.h"
#include "tenant.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes of an encoded ds_chunk_hdr. */
#define HDR_BYTES 16

/* A held copy's chunks, read ahead of its turn (ds__stripes_read_ahead). */
struct ahead {
    uint32_t copy;
    uint64_t size;
    char *bytes;
    struct ahead *next;
};

static struct {
    struct ahead *ahead, **ahead_tail; /* the main thread's */
    pthread_mutex_t lock;
    int fd[DS_DATA_CONNS_MAX]; /* under lock */
    int n;                     /* under lock */
    unsigned long long refused;
    int on;
    const volatile sig_atomic_t *stop; /* the executor's: a wait for chunks ends on it */
    unsigned char secret[DS_ATTACH_SECRET];
    pthread_t taker;
} st = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Whether a and b (DS_ATTACH_SECRET bytes) are equal, in time that does not depend on
 * where they differ. */
static int same_secret(const unsigned char *a, const unsigned char *b)
{
    volatile unsigned char diff = 0;

    for (size_t i = 0; i < DS_ATTACH_SECRET; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
}

/* Keep data connection fd if it showed the secret and there is room: it is told so
 * (one DS_PREFACE_ACCEPTED byte) once listed, so that its chunks never come before. */
static void take_one(int fd, const unsigned char *shown)
{
    char yes = DS_PREFACE_ACCEPTED;
    int kept = 0;

    pthread_mutex_lock(&st.lock);
    if (same_secret(shown, st.secret) && st.n < DS_DATA_CONNS_MAX) {
        st.fd[st.n++] = fd;
        kept = 1;
    } else {
        st.refused++;
    }
    pthread_mutex_unlock(&st.lock);
    if (!kept) {
        ds_warn("refused a data connection: wrong secret, or %d taken already",
                DS_DATA_CONNS_MAX);
        close(fd);
        return;
    }
    if (send(fd, &yes, 1, MSG_NOSIGNAL) != 1)
        ds_debug("a data connection left as it was taken");
    ds_debug("took data connection %d", ds__stripes_count());
}

static void *take(void *arg)
{
    unsigned char shown[DS_ATTACH_SECRET];
    int fd;

    (void)arg;
    while (ds_spawn_take_attach(&fd, shown) == 0) {
        /* Handed over from libuv's accept: non-blocking. */
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
            close(fd);
            continue;
        }
        take_one(fd, shown);
    }
    explicit_bzero(shown, sizeof(shown));
    return NULL;
}

int ds__stripes_start(int fd, int tls, const volatile sig_atomic_t *stop)
{
    int domain = 0;
    socklen_t len = sizeof(domain);
    sigset_t all, old;
    int rc;

    if (tls || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
        (domain != AF_INET && domain != AF_INET6))
        return 0;
    if (getrandom(st.secret, sizeof(st.secret), 0) != (ssize_t)sizeof(st.secret))
        return DS_EIO;
    st.stop = stop;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&st.taker, NULL, take, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        explicit_bzero(st.secret, sizeof(st.secret));
        return DS_ENOMEM;
    }
    st.on = 1;
    return 0;
}

void ds__stripes_secret(unsigned char *out)
{
    if (st.on)
        memcpy(out, st.secret, DS_ATTACH_SECRET);
    else
        memset(out, 0, DS_ATTACH_SECRET);
}

int ds__stripes_count(void)
{
    int n;

    pthread_mutex_lock(&st.lock);
    n = st.n;
    pthread_mutex_unlock(&st.lock);
    return n;
}

static int fd_of(unsigned k)
{
    int fd;

    pthread_mutex_lock(&st.lock);
    fd = st.fd[k];
    pthread_mutex_unlock(&st.lock);
    return fd;
}

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_WAITALL);

        if (n < 0 && errno == EINTR && !*st.stop)
            continue;
        if (n <= 0)
            return DS_EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Bytes of the chunk at offset off of a copy of size. */
static size_t chunk_len(uint64_t size, uint64_t off)
{
    return size - off < DS_CHUNK_MAX ? (size_t)(size - off) : DS_CHUNK_MAX;
}

/* Read and check the header of the chunk at off of copy `copy` from fd. */
static int read_header(int fd, uint32_t copy, uint64_t off, size_t len)
{
    char raw[HDR_BYTES];
    ds_chunk_hdr h;
    XDR x;
    int rc = read_all(fd, raw, sizeof(raw));

    if (rc != 0)
        return rc;
    xdrmem_create(&x, raw, sizeof(raw), XDR_DECODE);
    if (!xdr_ds_chunk_hdr(&x, &h))
        return DS_EPROTO;
    if (h.copy != copy || h.offset != off || h.length != len) {
        ds_error("a data connection sent chunk (copy %u, offset %llu, %u bytes) where chunk "
                 "(copy %u, offset %llu, %zu bytes) was due: ending the session",
                 h.copy, (unsigned long long)h.offset, h.length, copy,
                 (unsigned long long)off, len);
        return DS_EPROTO;
    }
    return 0;
}

/* Whether conns data connections may carry a copy. */
static int conns_ok(unsigned conns)
{
    int n = ds__stripes_count();

    if (conns == 0 || (int)conns > n) {
        ds_error("a striped copy over %u data connections, of %d taken: ending the session",
                 conns, n);
        return 0;
    }
    return 1;
}

/* Read copy `copy`'s chunks: into bytes (size of them) when not NULL, else each into a
 * slot or a scratch buffer, handed to put when not NULL. */
static int read_chunks(struct ds_tenant *t, uint32_t copy, uint64_t size, unsigned conns,
                       char *bytes, ds_stripes_put put, void *h)
{
    char *scratch = NULL;
    uint64_t off = 0;
    int rc = 0;

    for (uint64_t k = 0; off < size && rc == 0; k++) {
        size_t len = chunk_len(size, off);
        int fd = fd_of((unsigned)(k % conns));
        char *buf = bytes != NULL ? bytes + off : put != NULL ? ds__bulk_htod_slot(t) : NULL;

        if (buf == NULL && scratch == NULL && (scratch = malloc(DS_CHUNK_MAX)) == NULL)
            rc = DS_ENOMEM;
        if (buf == NULL)
            buf = scratch;
        if (rc == 0)
            rc = read_header(fd, copy, off, len);
        if (rc == 0)
            rc = read_all(fd, buf, len);
        if (rc == 0 && put != NULL)
            rc = put(h, off, buf, len);
        off += len;
    }
    free(scratch);
    return rc;
}

int ds__stripes_read_ahead(struct ds_tenant *t, uint32_t copy, uint64_t size, unsigned conns)
{
    struct ahead *a;
    int rc;

    if (!conns_ok(conns))
        return DS_EPROTO;
    if (ds__account_host_take(&t->acct, size, "a held striped copy") != 0)
        return DS_ENOMEM;
    a = calloc(1, sizeof(*a));
    if (a == NULL || (a->bytes = malloc(size)) == NULL) {
        free(a);
        ds__account_host_give(&t->acct, size);
        return DS_ENOMEM;
    }
    a->copy = copy;
    a->size = size;
    rc = read_chunks(t, copy, size, conns, a->bytes, NULL, NULL);
    if (st.ahead == NULL)
        st.ahead_tail = &st.ahead;
    *st.ahead_tail = a;
    st.ahead_tail = &a->next;
    return rc;
}

/* Hand the chunks read ahead for the first held copy, which must be `copy`, to put. */
static int from_ahead(struct ds_tenant *t, uint32_t copy, uint64_t size, ds_stripes_put put,
                      void *h)
{
    struct ahead *a = st.ahead;
    int rc = 0;

    if (a->copy != copy || a->size != size)
        rc = DS_EPROTO;
    for (uint64_t off = 0; off < size && rc == 0 && put != NULL; off += DS_CHUNK_MAX)
        rc = put(h, off, a->bytes + off, chunk_len(size, off));
    st.ahead = a->next;
    ds__account_host_give(&t->acct, a->size);
    free(a->bytes);
    free(a);
    return rc;
}

int ds__stripes_recv(struct ds_tenant *t, uint32_t copy, uint64_t size, unsigned conns,
                     ds_stripes_put put, void *h)
{
    if (st.ahead != NULL)
        return from_ahead(t, copy, size, put, h);
    if (!conns_ok(conns))
        return DS_EPROTO;
    return read_chunks(t, copy, size, conns, NULL, put, h);
}

/* Send the header and bytes of the chunk at off of copy `copy` on fd. */
static int send_chunk(int fd, uint32_t copy, uint64_t off, const char *buf, size_t len)
{
    char raw[HDR_BYTES];
    ds_chunk_hdr h = { .copy = copy, .length = (u_int)len, .offset = off };
    struct iovec iov[2] = { { raw, sizeof(raw) }, { (void *)buf, len } };
    XDR x;

    xdrmem_create(&x, raw, sizeof(raw), XDR_ENCODE);
    if (!xdr_ds_chunk_hdr(&x, &h))
        return DS_EPROTO;
    return ds_sendv_all(fd, iov, 2) == 0 ? 0 : DS_EIO;
}

int ds__stripes_send(struct ds_tenant *t, uint32_t copy, uint64_t size, unsigned conns,
                     ds_stripes_get get, void *h)
{
    char *own = NULL, *buf;
    uint64_t off = 0;
    int rc = 0;

    if (!conns_ok(conns))
        return DS_EPROTO;
    buf = ds__bulk_dtoh_buf(t, DS_CHUNK_MAX);
    if (buf == NULL && (buf = own = malloc(DS_CHUNK_MAX)) == NULL)
        return DS_ENOMEM;
    for (uint64_t k = 0; off < size && rc == 0; k++) {
        size_t len = chunk_len(size, off);

        rc = get(h, off, buf, len);
        if (rc == 0)
            rc = send_chunk(fd_of((unsigned)(k % conns)), copy, off, buf, len);
        off += len;
    }
    free(own);
    return rc;
}

void ds__stripes_fini(void)
{
    int n;

    if (!st.on)
        return;
    while (st.ahead != NULL) {
        struct ahead *a = st.ahead;

        st.ahead = a->next;
        free(a->bytes);
        free(a);
    }
    ds_spawn_stop_attaching();
    pthread_join(st.taker, NULL);
    st.on = 0;
    explicit_bzero(st.secret, sizeof(st.secret));
    pthread_mutex_lock(&st.lock);
    n = st.n;
    for (int i = 0; i < st.n; i++)
        close(st.fd[i]);
    st.n = 0;
    pthread_mutex_unlock(&st.lock);
    ds_debug("data connections: %d closed, %llu refused", n, st.refused);
}
