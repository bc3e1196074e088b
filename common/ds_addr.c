#define _GNU_SOURCE
#include "ds_addr.h"

#include "ds_error.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int parse_tcp(const char *hostport, struct ds_addr *out)
{
    const char *colon = strrchr(hostport, ':');
    size_t hlen;
    char *end;
    long port;

    if (colon == NULL)
        return DS_EINVAL;
    hlen = (size_t)(colon - hostport);
    /* Accept "[::1]:port" as well as "host:port". */
    if (hlen >= 2 && hostport[0] == '[' && hostport[hlen - 1] == ']') {
        hostport++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(out->host))
        return DS_EINVAL;
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535)
        return DS_EINVAL;
    out->kind = DS_ADDR_TCP;
    memcpy(out->host, hostport, hlen);
    out->host[hlen] = '\0';
    snprintf(out->port, sizeof(out->port), "%ld", port);
    return 0;
}

int ds_addr_parse(const char *text, struct ds_addr *out)
{
    memset(out, 0, sizeof(*out));
    if (strncmp(text, "unix:", 5) == 0) {
        size_t len = strlen(text + 5);

        if (len == 0 || len >= sizeof(out->path))
            return DS_EINVAL;
        out->kind = DS_ADDR_UNIX;
        memcpy(out->path, text + 5, len + 1);
        return 0;
    }
    if (strncmp(text, "tcp:", 4) == 0)
        return parse_tcp(text + 4, out);
    return DS_EINVAL;
}

void ds_addr_default(struct ds_addr *out)
{
    const char *dir = getenv("XDG_RUNTIME_DIR");

    memset(out, 0, sizeof(*out));
    out->kind = DS_ADDR_UNIX;
    if (dir != NULL && dir[0] == '/' &&
        strlen(dir) + sizeof("/detshare.sock") <= sizeof(out->path))
        snprintf(out->path, sizeof(out->path), "%s/detshare.sock", dir);
    else
        snprintf(out->path, sizeof(out->path), "/tmp/detshare-%u/detshare.sock",
                 (unsigned)getuid());
}

int ds_addr_private_dir(const struct ds_addr *a, char *why, size_t len)
{
    char dir[sizeof(a->path)];
    char *slash;
    struct stat st;

    snprintf(dir, sizeof(dir), "%s", a->path);
    slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir) {
        snprintf(why, len, "%s is not in a directory of its own", a->path);
        return DS_EPERM;
    }
    *slash = '\0';
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, len, "cannot make %s: %s", dir, strerror(errno));
        return DS_EPERM;
    }
    /* lstat: a link planted under the name would lead wherever its maker chose. */
    if (lstat(dir, &st) != 0) {
        snprintf(why, len, "cannot look at %s: %s", dir, strerror(errno));
        return DS_EPERM;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, len, "%s is not a directory (a symbolic link?)", dir);
        return DS_EPERM;
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        snprintf(why, len, "%s belongs to uid %u, not to this server's user (uid %u)", dir,
                 (unsigned)st.st_uid, (unsigned)geteuid());
        return DS_EPERM;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        snprintf(why, len, "%s has mode %04o: others could put a socket there (chmod 700)",
                 dir, (unsigned)(st.st_mode & 07777));
        return DS_EPERM;
    }
    return 0;
}

int ds_addr_peer_uid(int fd, uid_t *uid)
{
    struct ucred cred;
    socklen_t clen = sizeof(cred);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || clen != sizeof(cred))
        return DS_EIO;
    *uid = cred.uid;
    return 0;
}

void ds_addr_format(const struct ds_addr *a, char *buf, size_t len)
{
    if (a->kind == DS_ADDR_UNIX)
        snprintf(buf, len, "unix:%s", a->path);
    else if (strchr(a->host, ':') != NULL)
        snprintf(buf, len, "tcp:[%s]:%s", a->host, a->port);
    else
        snprintf(buf, len, "tcp:%s:%s", a->host, a->port);
}

static int connect_unix(const struct ds_addr *a)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return DS_EIO;
    memcpy(sun.sun_path, a->path, strlen(a->path) + 1);
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
        int saved = errno;

        close(fd);
        errno = saved;
        return DS_EIO;
    }
    return fd;
}

static int connect_tcp(const struct ds_addr *a)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
    int fd = -1, one = 1;

    if (getaddrinfo(a->host, a->port, &hints, &res) != 0) {
        errno = EHOSTUNREACH;
        return DS_EIO;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return DS_EIO;
    /* Synchronous calls are small request/reply pairs: Nagle would add latency. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

int ds_addr_connect(const struct ds_addr *a)
{
    return a->kind == DS_ADDR_UNIX ? connect_unix(a) : connect_tcp(a);
}
