/*
 * What TCP on this host's loopback costs without detshare, for bench/overhead/run.sh, so
 * that its tcp column can be read against the floor: a 64-byte ping-pong's round trip
 * (both ends polling without sleeping, as detshare's client and executor do while they
 * wait), and what one, two and four connections carry in 4 MiB sends at once.  Prints
 * one JSON line: {"info": "loopback", "tcp_rtt_us": ..., "tcp_gbps_1": ..., ...}.
 * Usage: loopback_bench [MIB]   (bytes per throughput figure, default 1024)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (4u << 20)
#define PINGS 5000
#define MAX_STREAMS 4

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "loopback_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* A connected pair over 127.0.0.1, with TCP_NODELAY as detshare sets it. */
static void tcp_pair(int fds[2])
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&a, sizeof(a)) != 0)
        die("connect");
    if ((fds[1] = accept(l, NULL, NULL)) < 0)
        die("accept");
    setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    close(l);
}

/* Read exactly n bytes, polling without sleeping. */
static void take(int fd, char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = recv(fd, buf, n, MSG_DONTWAIT);

        if (k > 0) {
            buf += k;
            n -= (size_t)k;
        } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
            die("recv");
        }
    }
}

static void *echo(void *arg)
{
    int fd = *(int *)arg;
    char b[64];

    for (int i = 0; i < PINGS; i++) {
        take(fd, b, sizeof(b));
        if (send(fd, b, sizeof(b), MSG_NOSIGNAL) != (ssize_t)sizeof(b))
            die("send");
    }
    return NULL;
}

static double rtt_us(void)
{
    char b[64] = { 0 };
    int fds[2];
    pthread_t t;
    double t0;

    tcp_pair(fds);
    pthread_create(&t, NULL, echo, &fds[1]);
    t0 = now_s();
    for (int i = 0; i < PINGS; i++) {
        if (send(fds[0], b, sizeof(b), MSG_NOSIGNAL) != (ssize_t)sizeof(b))
            die("send");
        take(fds[0], b, sizeof(b));
    }
    t0 = (now_s() - t0) / PINGS * 1e6;
    pthread_join(t, NULL);
    close(fds[0]);
    close(fds[1]);
    return t0;
}

struct stream {
    int fds[2];
    size_t bytes;
    pthread_t sender, sink;
};

static void *sink(void *arg)
{
    struct stream *s = arg;
    char *buf = malloc(CHUNK);
    size_t got = 0;

    while (buf != NULL && got < s->bytes) {
        ssize_t k = recv(s->fds[1], buf, CHUNK, 0);

        if (k <= 0)
            die("recv");
        got += (size_t)k;
    }
    free(buf);
    return NULL;
}

static void *sender(void *arg)
{
    struct stream *s = arg;
    char *buf = calloc(1, CHUNK);

    for (size_t off = 0; buf != NULL && off < s->bytes;) {
        ssize_t k = send(s->fds[0], buf, CHUNK, MSG_NOSIGNAL);

        if (k <= 0)
            die("send");
        off += (size_t)k;
    }
    free(buf);
    return NULL;
}

/* GB/s that n connections carry together, total bytes shared among them. */
static double gbps(int n, size_t total)
{
    struct stream s[MAX_STREAMS];
    double t0;

    for (int i = 0; i < n; i++) {
        tcp_pair(s[i].fds);
        s[i].bytes = total / (size_t)n / CHUNK * CHUNK;
    }
    t0 = now_s();
    for (int i = 0; i < n; i++) {
        pthread_create(&s[i].sink, NULL, sink, &s[i]);
        pthread_create(&s[i].sender, NULL, sender, &s[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(s[i].sender, NULL);
        pthread_join(s[i].sink, NULL);
    }
    t0 = now_s() - t0;
    for (int i = 0; i < n; i++) {
        close(s[i].fds[0]);
        close(s[i].fds[1]);
    }
    return (double)(total / (size_t)n / CHUNK * CHUNK) * n / t0 / 1e9;
}

int main(int argc, char **argv)
{
    size_t total = (size_t)(argc > 1 ? atoi(argv[1]) : 1024) << 20;

    if (total < (size_t)MAX_STREAMS * CHUNK) {
        fprintf(stderr, "usage: loopback_bench [MIB]   (at least 16)\n");
        return 2;
    }
    printf("{\"info\": \"loopback\", \"tcp_rtt_us\": %.2f, \"tcp_gbps_1\": %.2f, "
           "\"tcp_gbps_2\": %.2f, \"tcp_gbps_4\": %.2f}\n",
           rtt_us(), gbps(1, total), gbps(2, total), gbps(4, total));
    return 0;
}
