#define _GNU_SOURCE
#include "metrics.h"

#include "ds_log.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    uv_timer_t timer;
    uv_write_t wr;
    uv_shutdown_t sd;
    struct ds_metrics *m;
    struct conn *prev, *next;
    char *head, *body; /* the answer, while it is being written */
    int handles;       /* open handles of the two; freed at 0 */
    int closing, answered, writing, eof;
    size_t have;
    char req[DS_METRICS_MAX_REQUEST];
};

struct ds_metrics {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } listener;
    struct ds_addr addr;
    ds_metrics_render render;
    void *ctx;
    struct conn conns; /* list head of the connections not closing, newest first */
    int live;          /* on that list */
    int nconns;        /* allocated, closing or not */
    int closed;        /* freed once closed with no connection left */
};

static void free_conn(uv_handle_t *h)
{
    struct conn *c = h->data;
    struct ds_metrics *m = c->m;

    if (--c->handles > 0)
        return;
    free(c->head);
    free(c->body);
    free(c);
    /* libuv runs close callbacks in no promised order: the last one frees m. */
    if (--m->nconns == 0 && m->closed)
        free(m);
}

static void close_conn(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    c->prev->next = c->next;
    c->next->prev = c->prev;
    c->m->live--;
    uv_close(&c->h.handle, free_conn);
    uv_close((uv_handle_t *)&c->timer, free_conn);
}

static void on_timeout(uv_timer_t *t)
{
    close_conn(t->data);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct conn *c = req->data;

    if (status != 0 || c->eof)
        close_conn(c);
}

/* Sent: say so with a FIN and read on until the client closes (closing on bytes it sent
 * and we did not read would reset the connection and could lose the answer). */
static void on_written(uv_write_t *req, int status)
{
    struct conn *c = req->data;

    free(c->head);
    free(c->body);
    c->head = c->body = NULL;
    c->writing = 0;
    c->sd.data = c;
    if (status != 0 || uv_shutdown(&c->sd, &c->h.stream, on_shutdown) != 0)
        close_conn(c);
}

/* Send the answer; `body` (malloc'd, or NULL) becomes the connection's. */
static void answer(struct conn *c, const char *status, char *body, size_t len, int head_only)
{
    uv_buf_t b[2];
    int n;

    c->answered = 1;
    c->body = body;
    n = asprintf(&c->head,
                 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n",
                 status, strcmp(status, "200 OK") == 0 ? CONTENT_TYPE : "text/plain", len);
    if (n < 0) {
        c->head = NULL;
        close_conn(c);
        return;
    }
    b[0] = uv_buf_init(c->head, (unsigned)n);
    b[1] = uv_buf_init(body, head_only ? 0 : (unsigned)len);
    c->wr.data = c;
    c->writing = 1;
    if (uv_write(&c->wr, &c->h.stream, b, head_only || len == 0 ? 1 : 2, on_written) != 0)
        close_conn(c);
}

static void answer_text(struct conn *c, const char *status, const char *text, int head_only)
{
    char *body = strdup(text);

    if (body == NULL) {
        close_conn(c);
        return;
    }
    answer(c, status, body, strlen(text), head_only);
}

/* The request line "METHOD TARGET HTTP/1.x", cut into its words in place.  Returns 0, or
 * -1 when it is not one. */
static int request_line(char *line, char **method, char **target)
{
    char *version, *rest;

    *method = strtok_r(line, " ", &rest);
    *target = strtok_r(NULL, " ", &rest);
    version = strtok_r(NULL, " ", &rest);
    if (*method == NULL || *target == NULL || version == NULL || strtok_r(NULL, " ", &rest))
        return -1;
    if (strspn(*method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(*method) || (*target)[0] != '/')
        return -1;
    return strcmp(version, "HTTP/1.0") == 0 || strcmp(version, "HTTP/1.1") == 0 ? 0 : -1;
}

/* Every header line is "Name: value"; the head ends at the empty line. */
static int headers_ok(char *lines)
{
    char *line, *rest;

    for (line = strtok_r(lines, "\n", &rest); line != NULL; line = strtok_r(NULL, "\n", &rest))
        if (strcmp(line, "\r") != 0 && (strchr(line, ':') == NULL || line[0] == ':'))
            return 0;
    return 1;
}

static void serve(struct conn *c, size_t head_len)
{
    char *eol, *method, *target, *query;
    size_t len;
    char *text;
    int head_only;

    c->req[head_len] = '\0';
    eol = strchr(c->req, '\n');
    *eol = '\0';
    if (eol > c->req && eol[-1] == '\r')
        eol[-1] = '\0';
    if (request_line(c->req, &method, &target) != 0 || !headers_ok(eol + 1)) {
        answer_text(c, "400 Bad Request", "bad request\n", 0);
        return;
    }
    if ((query = strchr(target, '?')) != NULL)
        *query = '\0';
    head_only = strcmp(method, "HEAD") == 0;
    if (strcmp(target, "/metrics") != 0)
        answer_text(c, "404 Not Found", "not found: the metrics are at /metrics\n", head_only);
    else if (!head_only && strcmp(method, "GET") != 0)
        answer_text(c, "405 Method Not Allowed", "only GET and HEAD\n", 0);
    else if ((text = c->m->render(c->m->ctx, &len)) == NULL)
        answer_text(c, "500 Internal Server Error", "out of memory\n", head_only);
    else
        answer(c, "200 OK", text, len, head_only);
}

/* Where the request's head ends (past its empty line), or 0 while it has not. */
static size_t head_end(const char *buf, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (buf[i] == '\n' && (buf[i - 1] == '\n' || (i >= 2 && buf[i - 1] == '\r' &&
                                                     buf[i - 2] == '\n')))
            return i + 1;
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = h->data;

    (void)suggested;
    /* Once answered, whatever comes is read into the same room and dropped. */
    if (c->answered)
        c->have = 0;
    *buf = uv_buf_init(c->req + c->have, (unsigned)(sizeof(c->req) - 1 - c->have));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    size_t end;

    (void)buf;
    /* A client may close its side once its request is sent: the answer still goes. */
    if (n == UV_EOF && c->writing) {
        c->eof = 1;
        uv_read_stop(s);
        return;
    }
    if (n < 0) {
        close_conn(c);
        return;
    }
    if (n == 0 || c->answered)
        return;
    c->have += (size_t)n;
    if (memchr(c->req, '\0', c->have) != NULL) {
        answer_text(c, "400 Bad Request", "bad request\n", 0);
        return;
    }
    end = head_end(c->req, c->have);
    if (end > 0)
        serve(c, end);
    else if (c->have == sizeof(c->req) - 1)
        answer_text(c, "400 Bad Request", "request too large\n", 0);
}

static int init_stream(struct ds_metrics *m, struct conn *c)
{
    uv_loop_t *loop = m->listener.handle.loop;

    if (m->addr.kind == DS_ADDR_UNIX)
        return uv_pipe_init(loop, &c->h.pipe, 0);
    return uv_tcp_init(loop, &c->h.tcp);
}

/* The connection to close for a new one: the oldest that has sent nothing, else the
 * oldest still reading its request.  A scraper sends its request as it connects, so a
 * flood of silent connections takes its own oldest first; one being answered is never
 * cut (its answer is on its way out). */
static struct conn *victim(struct ds_metrics *m)
{
    struct conn *reading = NULL;

    for (struct conn *c = m->conns.prev; c != &m->conns; c = c->prev) {
        if (c->answered)
            continue;
        if (c->have == 0)
            return c;
        if (reading == NULL)
            reading = c;
    }
    return reading != NULL ? reading : m->conns.prev;
}

static void on_connection(uv_stream_t *server, int status)
{
    struct ds_metrics *m = server->data;
    struct conn *c;

    if (status < 0)
        return;
    /* A flood of idle connections must not lock a scraper out. */
    if (m->live >= DS_METRICS_MAX_CONNS)
        close_conn(victim(m));
    if ((c = calloc(1, sizeof(*c))) == NULL || init_stream(m, c) != 0) {
        free(c);
        return;
    }
    c->m = m;
    c->h.handle.data = c->timer.data = c;
    c->handles = 2;
    c->next = m->conns.next;
    c->prev = &m->conns;
    m->conns.next->prev = c;
    m->conns.next = c;
    m->live++;
    m->nconns++;
    uv_timer_init(server->loop, &c->timer);
    uv_timer_start(&c->timer, on_timeout, DS_METRICS_TIMEOUT_MS, 0);
    if (uv_accept(server, &c->h.stream) != 0 ||
        uv_read_start(&c->h.stream, on_alloc, on_read) != 0)
        close_conn(c);
}

static int bind_addr(uv_loop_t *loop, struct ds_metrics *m)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
    int rc;

    if (m->addr.kind == DS_ADDR_UNIX) {
        if ((rc = uv_pipe_init(loop, &m->listener.pipe, 0)) != 0)
            return rc;
        unlink(m->addr.path);
        return uv_pipe_bind(&m->listener.pipe, m->addr.path);
    }
    if (getaddrinfo(m->addr.host, m->addr.port, &hints, &res) != 0)
        return UV_EADDRNOTAVAIL;
    rc = uv_tcp_init(loop, &m->listener.tcp);
    if (rc == 0)
        rc = uv_tcp_bind(&m->listener.tcp, res->ai_addr, 0);
    freeaddrinfo(res);
    return rc;
}

static void free_metrics(uv_handle_t *h)
{
    struct ds_metrics *m = h->data;

    m->closed = 1;
    if (m->nconns == 0)
        free(m);
}

int ds_metrics_open(uv_loop_t *loop, const struct ds_addr *addr, ds_metrics_render render,
                    void *ctx, struct ds_metrics **out)
{
    struct ds_metrics *m = calloc(1, sizeof(*m));
    char where[300];
    int rc;

    if (m == NULL)
        return UV_ENOMEM;
    m->addr = *addr;
    m->render = render;
    m->ctx = ctx;
    m->conns.next = m->conns.prev = &m->conns;
    ds_addr_format(addr, where, sizeof(where));
    rc = bind_addr(loop, m);
    m->listener.handle.data = m;
    if (rc == 0)
        rc = uv_listen(&m->listener.stream, 64, on_connection);
    if (rc != 0) {
        ds_error("cannot serve metrics on %s: %s", where, uv_strerror(rc));
        if (m->listener.handle.loop != NULL)
            uv_close(&m->listener.handle, free_metrics);
        else
            free(m);
        return rc;
    }
    ds_info("metrics: http on %s, path /metrics", where);
    *out = m;
    return 0;
}

void ds_metrics_close(struct ds_metrics *m)
{
    while (m->conns.next != &m->conns)
        close_conn(m->conns.next);
    if (m->addr.kind == DS_ADDR_UNIX)
        unlink(m->addr.path);
    uv_close(&m->listener.handle, free_metrics);
}
