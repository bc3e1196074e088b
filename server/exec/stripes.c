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

/*
 * One copy's chunks between the main thread and a thread per data connection: the
 * socket's copying is what costs on TCP, and one thread copying every connection's
 * bytes was as slow as one connection.  The threads only move bytes between their
 * connection and a buffer; the main thread alone touches the device and the tenant's
 * state, in chunk order.  Chunk k lives in entry k % window, for up to `window` chunks in
 * flight: to the device, the main thread lends entry a buffer (an in-band slot, bulk.h),
 * connection k mod conns fills it, the main thread queues its copy while the next ones
 * arrive; to the host, the main thread fills a buffer from the device while the threads
 * send the ones before.  Read ahead (bytes) or dropped (no put), chunks need no buffer
 * from the main thread and only the threads run.
 */
#define WINDOW_MAX DS_BULK_SLOTS
/* How often a main thread waiting on the connections looks at *st.stop, and at the
 * device's progress when it waits for a slot to come free. */
#define LOOK_NS (10u * 1000 * 1000)
#define SLOT_LOOK_NS (20u * 1000)

enum { E_EMPTY, E_LENT, E_DONE }; /* E_LENT: a buffer to fill or to send */

struct entry {
    uint64_t k;
    char *buf;
    int own; /* buf was allocated for this chunk: no slot was free */
    int state;
};

struct flight {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    struct ds_tenant *t;
    uint32_t copy;
    uint64_t size, chunks;
    unsigned conns, window;
    int to_host;
    char *bytes; /* read ahead into here */
    int drop;    /* to the device, refused: read and dropped */
    int err;     /* the first failure: the copy ends */
    unsigned running; /* connection threads not yet ended */
    struct entry e[WINDOW_MAX];
};

/* One data connection's share: chunks i, i + conns, ... */
struct share {
    struct flight *f;
    unsigned i;
    pthread_t thread;
};

/* Record the first failure and stop everyone: the connections are shut, so that a
 * thread in a read or write returns and the client's end sees the session end. */
static void fail(struct flight *f, int rc)
{
    pthread_mutex_lock(&f->lock);
    if (f->err == 0) {
        f->err = rc;
        for (unsigned i = 0; i < f->conns; i++)
            shutdown(fd_of(i), SHUT_RDWR);
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->lock);
}

/* Wait for chunk k's entry to be in state `want`; its buffer, or NULL once the copy
 * failed.  Called by a connection's thread. */
static char *await_entry(struct flight *f, uint64_t k, int want)
{
    struct entry *e = &f->e[k % f->window];
    char *buf;

    pthread_mutex_lock(&f->lock);
    while (f->err == 0 && (e->k != k || e->state != want))
        pthread_cond_wait(&f->cv, &f->lock);
    buf = f->err == 0 ? e->buf : NULL;
    pthread_mutex_unlock(&f->lock);
    return buf;
}

static void entry_done(struct flight *f, uint64_t k)
{
    pthread_mutex_lock(&f->lock);
    f->e[k % f->window].state = E_DONE;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->lock);
}

/* Where chunk k's bytes are read to: ahead, a scratch buffer of the thread's own
 * (*scratch, allocated once), or the buffer the main thread lent.  NULL once the copy
 * failed. */
static char *read_place(struct flight *f, uint64_t k, char **scratch)
{
    if (f->bytes != NULL)
        return f->bytes + k * DS_CHUNK_MAX;
    if (!f->drop)
        return await_entry(f, k, E_LENT);
    if (*scratch == NULL && (*scratch = malloc(DS_CHUNK_MAX)) == NULL)
        fail(f, DS_ENOMEM);
    return *scratch;
}

static void *move_share(void *arg)
{
    struct share *s = arg;
    struct flight *f = s->f;
    int fd = fd_of(s->i);
    char *scratch = NULL;

    for (uint64_t k = s->i; k < f->chunks; k += f->conns) {
        uint64_t off = k * DS_CHUNK_MAX;
        size_t len = chunk_len(f->size, off);
        char *buf = f->to_host ? await_entry(f, k, E_LENT) : read_place(f, k, &scratch);
        int rc;

        if (buf == NULL)
            break;
        if (f->to_host)
            rc = send_chunk(fd, f->copy, off, buf, len);
        else if ((rc = read_header(fd, f->copy, off, len)) == 0)
            rc = read_all(fd, buf, len);
        if (rc != 0) {
            fail(f, rc);
            break;
        }
        if (f->to_host || (f->bytes == NULL && !f->drop))
            entry_done(f, k);
    }
    free(scratch);
    pthread_mutex_lock(&f->lock);
    f->running--;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

/* Wait a while for chunk k's entry to be done (k == UINT64_MAX: for every connection
 * thread to have ended); `slots` asks for a short wait, after which a slot may have come
 * free.  Returns 1 when it is, 0 when not yet, -1 once the copy failed, which it does
 * when *st.stop is set. */
static int await_done(struct flight *f, uint64_t k, int slots)
{
    struct entry *e = k == UINT64_MAX ? NULL : &f->e[k % f->window];
    struct timespec until;
    int done;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += slots ? SLOT_LOOK_NS : LOOK_NS;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->lock);
    for (;;) {
        done = e == NULL ? f->running == 0 : e->k == k && e->state == E_DONE;
        if (done || (f->err != 0 && e != NULL) ||
            pthread_cond_timedwait(&f->cv, &f->lock, &until) != 0)
            break;
    }
    done = e == NULL ? f->running == 0 : e->k == k && e->state == E_DONE;
    if (!done && f->err != 0 && e != NULL)
        done = -1;
    pthread_mutex_unlock(&f->lock);
    if (done == 0 && *st.stop)
        fail(f, DS_EIO);
    return done;
}

/* A buffer for chunk k: a free slot; when none is and no chunk is in flight to free one
 * (first), a buffer of its own, so that nothing waits for the device; else NULL. */
static char *lend(struct flight *f, uint64_t k, uint64_t first, int *own)
{
    char *buf = ds__bulk_htod_slot(f->t);

    *own = buf == NULL && k == first;
    if (*own && (buf = malloc(DS_CHUNK_MAX)) == NULL)
        fail(f, DS_ENOMEM);
    return buf;
}

static void give_back(struct flight *f, struct entry *e)
{
    if (e->own)
        free(e->buf);
    else
        ds__bulk_forget(f->t, &e->buf);
    pthread_mutex_lock(&f->lock);
    e->buf = NULL;
    e->state = E_EMPTY;
    pthread_mutex_unlock(&f->lock);
}

static void set_entry(struct flight *f, uint64_t k, char *buf, int own)
{
    pthread_mutex_lock(&f->lock);
    f->e[k % f->window] = (struct entry){ .k = k, .buf = buf, .own = own, .state = E_LENT };
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->lock);
}

static int failed(struct flight *f)
{
    int err;

    pthread_mutex_lock(&f->lock);
    err = f->err;
    pthread_mutex_unlock(&f->lock);
    return err;
}

/* To the device: lend buffers up to the window ahead, hand each filled chunk to put in
 * order.  A chunk read into a slot is queued from it (put's ds__bulk_htod_queued).  After
 * put failed, the rest is read and dropped, so that the connections stay in step; its
 * error is returned. */
static int main_htod(struct flight *f, ds_stripes_put put, void *h)
{
    uint64_t lent = 0, k = 0;
    int put_err = 0;

    while (k < f->chunks && failed(f) == 0) {
        struct entry *e = &f->e[k % f->window];
        int own, rc;
        char *buf;

        while (lent < f->chunks && lent < k + f->window &&
               (buf = lend(f, lent, k, &own)) != NULL) {
            set_entry(f, lent, buf, own);
            lent++;
        }
        if (await_done(f, k, lent < f->chunks && lent < k + f->window) != 1)
            continue;
        rc = put_err != 0 ? put_err
                          : put(h, k * DS_CHUNK_MAX, e->buf, chunk_len(f->size, k * DS_CHUNK_MAX));
        /* A slot queued from is the device's until its event completes. */
        if (!e->own && rc == 0)
            e->buf = NULL;
        give_back(f, e);
        put_err = rc;
        k++;
    }
    return put_err;
}

/* To the host: fill chunk k from the device once its entry's last chunk was sent, while
 * the threads send the chunks before it. */
static void main_dtoh(struct flight *f, ds_stripes_get get, void *h)
{
    for (uint64_t k = 0; k < f->chunks && failed(f) == 0; k++) {
        struct entry *e = &f->e[k % f->window];
        int own = 0, rc;
        char *buf;

        if (k >= f->window) {
            int done;

            while ((done = await_done(f, k - f->window, 0)) == 0)
                ;
            if (done < 0)
                break;
            give_back(f, e);
        }
        buf = ds__bulk_htod_slot(f->t);
        if (buf == NULL && (own = 1, buf = malloc(DS_CHUNK_MAX)) == NULL) {
            fail(f, DS_ENOMEM);
            break;
        }
        rc = get(h, k * DS_CHUNK_MAX, buf, chunk_len(f->size, k * DS_CHUNK_MAX));
        if (rc != 0) {
            if (own)
                free(buf);
            else
                ds__bulk_forget(f->t, &buf);
            fail(f, rc);
            break;
        }
        set_entry(f, k, buf, own);
    }
}

/* Move copy `copy`'s chunks over its conns data connections, a thread each, with the
 * main thread doing put's or get's part.  Returns 0 or the first failure. */
static int fly(struct flight *f, ds_stripes_put put, ds_stripes_get get, void *h)
{
    struct share s[DS_DATA_CONNS_MAX];
    sigset_t all, old;
    unsigned started = 0;
    int rc = 0;

    f->chunks = (f->size + DS_CHUNK_MAX - 1) / DS_CHUNK_MAX;
    /* Two chunks a connection: one moving on the socket, one at the device. */
    f->window = 2 * f->conns < DS_BULK_SLOTS ? 2 * f->conns : DS_BULK_SLOTS;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cv, NULL);
    /* The executor's signals (SIGTERM) stay with its main thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (; started < f->conns; started++) {
        s[started] = (struct share){ .f = f, .i = started };
        pthread_mutex_lock(&f->lock);
        f->running++;
        pthread_mutex_unlock(&f->lock);
        if (pthread_create(&s[started].thread, NULL, move_share, &s[started]) != 0) {
            pthread_mutex_lock(&f->lock);
            f->running--;
            pthread_mutex_unlock(&f->lock);
            break;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started < f->conns) {
        ds_error("no thread for data connection %u", started);
        fail(f, DS_EIO);
    } else if (get != NULL) {
        main_dtoh(f, get, h);
    } else if (put != NULL && !f->drop && f->bytes == NULL) {
        rc = main_htod(f, put, h);
    }
    /* The threads end once their chunks have moved, or the copy failed. */
    while (await_done(f, UINT64_MAX, 0) == 0)
        ;
    for (unsigned i = 0; i < started; i++)
        pthread_join(s[i].thread, NULL);
    for (unsigned i = 0; i < f->window; i++)
        if (f->e[i].buf != NULL)
            give_back(f, &f->e[i]);
    if (f->err != 0)
        rc = f->err;
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->lock);
    return rc;
}

/* Read copy `copy`'s chunks: into bytes (size of them) when not NULL, else each handed
 * to put when not NULL, else dropped. */
static int read_chunks(struct ds_tenant *t, uint32_t copy, uint64_t size, unsigned conns,
                       char *bytes, ds_stripes_put put, void *h)
{
    struct flight f = { .t = t, .copy = copy, .size = size, .conns = conns, .bytes = bytes,
                        .drop = bytes == NULL && put == NULL };

    /* Without slots to lend, chunks in flight are read into buffers of their own one at
     * a time: slow, but correct. */
    if (bytes == NULL && put != NULL && !ds__bulk_ready(t, size))
        ds_debug("striped copy %u goes without page-locked buffers", copy);
    return fly(&f, put, NULL, h);
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

int ds__stripes_send(struct ds_tenant *t, uint32_t copy, uint64_t size, unsigned conns,
                     ds_stripes_get get, void *h)
{
    struct flight f = { .t = t, .copy = copy, .size = size, .conns = conns, .to_host = 1 };

    if (!conns_ok(conns))
        return DS_EPROTO;
    ds__bulk_ready(t, size);
    return fly(&f, NULL, get, h);
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
