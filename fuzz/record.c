/*
 * ds-fuzz-record: record real sessions as seeds for the fuzz targets.
 *
 *   ds-fuzz-record LISTEN_SOCKET SERVER_SOCKET OUTDIR
 *
 * Listens on LISTEN_SOCKET (point a tenant's DETSHARE_SERVER at unix:LISTEN_SOCKET, with
 * DETSHARE_RING=0 so that every call crosses the socket) and relays each connection to
 * the detshare-server at SERVER_SOCKET, handing the tenant's host arena on.  When a
 * session ends it writes, in OUTDIR, seeds of at most SEED_MAX bytes (a longer session
 * is cut short, which the targets read as a tenant that left):
 *   exec-N      for fuzz_exec: flags (arena handed over or not), then the tenant's bytes
 *   exec-ring-N for fuzz_exec: the same calls as call-ring records
 *   reply-N     for fuzz_reply: the server's bytes, each reply's xid replaced by the
 *               number of the procedure it answers (fuzz/fuzz_reply.c)
 * Runs until killed.
 */
#define _GNU_SOURCE
#include "ds_arena.h"
#include "ds_devout.h"
#include "ds_fdpass.h"
#include "ds_preface.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEED_MAX (16u * 1024)
#define FLAG_ARENA 1u
#define FLAG_RING 2u

struct capture {
    unsigned char bytes[SEED_MAX];
    size_t len;
};

static void keep(struct capture *c, const void *p, size_t n)
{
    size_t room = SEED_MAX - c->len;

    memcpy(c->bytes + c->len, p, n < room ? n : room);
    c->len += n < room ? n : room;
}

static int unix_socket(const char *path, int listening)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    if (fd < 0)
        return -1;
    if (listening) {
        unlink(path);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 64) == 0)
            return fd;
    } else if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
        return fd;
    }
    close(fd);
    return -1;
}

static int write_seed(const char *dir, const char *kind, int n, unsigned char flags,
                      const unsigned char *p, size_t len)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s-%d", dir, kind, n);
    f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    if (flags != 0xff)
        fputc(flags, f);
    fwrite(p, 1, len, f);
    return fclose(f);
}

/* The tenant's record-marked stream as ring chunks: [1][length, 2 bytes][record], one
 * per record, up to the first one that is incomplete or too long for a chunk. */
static size_t as_ring(const struct capture *c, unsigned char *out)
{
    size_t in = 0, n = 0;

    while (in + 4 <= c->len) {
        size_t start = n + 3, rec = 0;
        int last = 0;

        while (!last && in + 4 <= c->len) {
            uint32_t mark = ((uint32_t)c->bytes[in] << 24) | ((uint32_t)c->bytes[in + 1] << 16) |
                            ((uint32_t)c->bytes[in + 2] << 8) | c->bytes[in + 3];
            size_t frag = mark & 0x7fffffffu;

            last = (mark >> 31) != 0;
            in += 4;
            if (frag > c->len - in || rec + frag > 0xffff)
                return n;
            memcpy(out + start + rec, c->bytes + in, frag);
            rec += frag;
            in += frag;
        }
        if (!last)
            return n;
        out[n] = 1;
        out[n + 1] = (unsigned char)(rec >> 8);
        out[n + 2] = (unsigned char)rec;
        n = start + rec;
    }
    return n;
}

static uint32_t get32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Call f on each record's first fragment in c (offset of its bytes, their length). */
static void each_record(struct capture *c, void (*f)(struct capture *, size_t, size_t, void *),
                        void *arg)
{
    size_t in = 0;
    int first = 1;

    while (in + 4 <= c->len) {
        uint32_t mark = get32(c->bytes + in);
        size_t frag = mark & 0x7fffffffu;

        in += 4;
        if (frag > c->len - in)
            frag = c->len - in;
        if (first)
            f(c, in, frag, arg);
        first = (mark >> 31) != 0;
        in += frag;
    }
}

/* Calls' xids and procedures, in the order the calls came. */
struct calls {
    uint32_t xid[4096], proc[4096];
    size_t n;
};

static void note_call(struct capture *c, size_t at, size_t len, void *arg)
{
    struct calls *k = arg;

    if (len >= 24 && k->n < 4096) {
        k->xid[k->n] = get32(c->bytes + at);
        k->proc[k->n++] = get32(c->bytes + at + 20);
    }
}

static void name_reply(struct capture *c, size_t at, size_t len, void *arg)
{
    struct calls *k = arg;

    if (len < 4)
        return;
    for (size_t i = 0; i < k->n; i++)
        if (k->xid[i] == get32(c->bytes + at)) {
            put32(c->bytes + at, k->proc[i]);
            return;
        }
}

/* Relay fd's bytes to `to`, keeping them; 0 at the end of either side. */
static int relay(int from, int to, struct capture *c)
{
    char buf[64 * 1024];
    ssize_t n = recv(from, buf, sizeof(buf), 0);

    if (n <= 0)
        return 0;
    keep(c, buf, (size_t)n);
    return send(to, buf, (size_t)n, MSG_NOSIGNAL) == n;
}

/* Exactly n bytes from `from` to `to`.  Returns 1, or 0 when either side failed. */
static int pass(int from, int to, unsigned char *buf, size_t n)
{
    size_t have = 0;

    while (have < n) {
        ssize_t got = recv(from, buf + have, n - have, 0);

        if (got <= 0)
            return 0;
        have += (size_t)got;
    }
    return send(to, buf, n, MSG_NOSIGNAL) == (ssize_t)n;
}

/* The tenant's preface and the server's answer go on as they came and are not part of
 * the seed: the control process reads them, never the executor (ds_preface.h). */
static int pass_preface(int tenant, int server)
{
    unsigned char buf[DS_PREFACE_MAX + 2 + DS_PREFACE_REASON_MAX];
    size_t have = 0;
    int missing;

    while ((missing = ds_preface_missing(buf, have)) > 0) {
        if (!pass(tenant, server, buf + have, (size_t)missing))
            return 0;
        have += (size_t)missing;
    }
    if (missing < 0 || !pass(server, tenant, buf, 1))
        return 0;
    if (buf[0] == DS_PREFACE_ACCEPTED)
        return 1;
    if (pass(server, tenant, buf + 1, 1))
        pass(server, tenant, buf + 2, buf[1]);
    return 0;
}

static void session(int tenant, const char *server_path, const char *dir, int n)
{
    static struct capture in, out;
    static unsigned char ring[SEED_MAX + 8];
    static struct calls calls;
    int server = unix_socket(server_path, 0), up = 1;
    unsigned char flags = 0;
    char tag;
    int fd;

    if (server < 0) {
        perror("connect to the server");
        return;
    }
    if (!pass_preface(tenant, server)) {
        fprintf(stderr, "session %d: no preface, or the server refused it\n", n);
        return;
    }
    /* Descriptors come first, each a marker byte with the descriptor attached: the
     * host arena, then stdout and stderr (common/ds_devout.h).  They go on as they came
     * and are not part of the seed (fuzz_exec makes its own arena). */
    while (ds_fd_peek(tenant, &tag) == 0 &&
           (tag == DS_ARENA_MARKER || tag == DS_STDOUT_MARKER || tag == DS_STDERR_MARKER) &&
           ds_fd_recv(tenant, &tag, &fd) == 0) {
        ds_fd_send(server, tag, fd);
        close(fd);
        if (tag == DS_ARENA_MARKER)
            flags |= FLAG_ARENA;
    }
    while (up) {
        struct pollfd p[2] = { { .fd = tenant, .events = POLLIN },
                               { .fd = server, .events = POLLIN } };

        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            up = relay(tenant, server, &in);
        if (up && p[1].revents)
            up = relay(server, tenant, &out);
    }
    write_seed(dir, "exec", n, flags, in.bytes, in.len);
    write_seed(dir, "exec-ring", n, flags | FLAG_RING, ring, as_ring(&in, ring));
    each_record(&in, note_call, &calls);
    each_record(&out, name_reply, &calls);
    write_seed(dir, "reply", n, 0xff, out.bytes, out.len);
}

int main(int argc, char **argv)
{
    int lfd, n = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: %s LISTEN_SOCKET SERVER_SOCKET OUTDIR\n", argv[0]);
        return 2;
    }
    signal(SIGCHLD, SIG_IGN);
    lfd = unix_socket(argv[1], 1);
    if (lfd < 0) {
        perror(argv[1]);
        return 1;
    }
    for (;;) {
        int t = accept(lfd, NULL, NULL);

        n++;
        if (t < 0)
            continue;
        if (fork() == 0) {
            close(lfd);
            session(t, argv[2], argv[3], n);
            _exit(0);
        }
        close(t);
    }
}
