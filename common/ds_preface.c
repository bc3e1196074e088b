#include "ds_preface.h"

#include "ds_error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

size_t ds_preface_encode(unsigned char *buf, const void *token, size_t token_len,
                         const char *name)
{
    size_t name_len = strnlen(name, DS_NAME_MAX), n = 0;

    if (token_len > DS_TOKEN_MAX)
        return 0;
    buf[n++] = DS_PREFACE_MARKER;
    buf[n++] = (unsigned char)token_len;
    memcpy(buf + n, token, token_len);
    n += token_len;
    buf[n++] = (unsigned char)name_len;
    memcpy(buf + n, name, name_len);
    return n + name_len;
}

void ds_preface_encode_attach(unsigned char *buf, unsigned long long id,
                              const unsigned char *secret)
{
    buf[0] = DS_PREFACE_ATTACH;
    for (int i = 0; i < 8; i++)
        buf[1 + i] = (unsigned char)(id >> (56 - 8 * i));
    memcpy(buf + 9, secret, DS_ATTACH_SECRET);
}

int ds_preface_send(int sock, const void *token, size_t token_len, const char *name)
{
    unsigned char buf[DS_PREFACE_MAX];
    size_t n = ds_preface_encode(buf, token, token_len, name);
    ssize_t sent;

    if (n == 0)
        return DS_EINVAL;
    do
        sent = send(sock, buf, n, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    explicit_bzero(buf, sizeof(buf));
    return sent == (ssize_t)n ? 0 : DS_EIO;
}

static int recv_all(void *h, void *buf, size_t len)
{
    int sock = *(int *)h;
    unsigned char *p = buf;

    while (len > 0) {
        ssize_t n = recv(sock, p, len, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ECONNRESET;
            return DS_EIO;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int ds_preface_await_with(ds_preface_read_fn rd, void *h, char *why, size_t len)
{
    unsigned char head[2], text[DS_PREFACE_REASON_MAX];
    size_t n;

    if (rd(h, head, 1) != 0)
        return DS_EIO;
    if (head[0] == DS_PREFACE_ACCEPTED)
        return 0;
    if (head[0] != DS_PREFACE_REFUSED)
        return DS_EPROTO;
    if (rd(h, head + 1, 1) != 0 || rd(h, text, head[1]) != 0)
        return DS_EIO;
    for (n = 0; n < head[1] && n + 1 < len; n++)
        why[n] = text[n] >= 32 && text[n] < 127 ? (char)text[n] : '?';
    if (len > 0)
        why[n] = '\0';
    return 1;
}

int ds_preface_await(int sock, char *why, size_t len)
{
    return ds_preface_await_with(recv_all, &sock, why, len);
}

int ds_preface_missing(const unsigned char *buf, size_t have)
{
    size_t want = 2;

    if (have >= 1 && buf[0] == DS_PREFACE_ATTACH)
        return have <= DS_PREFACE_ATTACH_LEN ? (int)(DS_PREFACE_ATTACH_LEN - have) : DS_EPROTO;
    if (have >= 1 && buf[0] != DS_PREFACE_MARKER)
        return DS_EPROTO;
    if (have >= 2)
        want = 3 + (size_t)buf[1];
    if (have >= want) {
        size_t name_len = buf[want - 1];

        if (name_len > DS_NAME_MAX)
            return DS_EPROTO;
        want += name_len;
    }
    return have <= want ? (int)(want - have) : DS_EPROTO;
}

void ds_preface_decode(const unsigned char *buf, struct ds_preface *p)
{
    memset(p, 0, sizeof(*p));
    if (buf[0] == DS_PREFACE_ATTACH) {
        p->attach = 1;
        for (int i = 0; i < 8; i++)
            p->tenant_id = p->tenant_id << 8 | buf[1 + i];
        p->secret = buf + 9;
        return;
    }
    p->token_len = buf[1];
    p->token = buf + 2;
    p->name_len = buf[2 + p->token_len];
    p->name = (const char *)buf + 3 + p->token_len;
}

size_t ds_preface_answer(const char *why, unsigned char *out)
{
    size_t n;

    if (why == NULL) {
        out[0] = DS_PREFACE_ACCEPTED;
        return 1;
    }
    n = strnlen(why, DS_PREFACE_REASON_MAX);
    out[0] = DS_PREFACE_REFUSED;
    out[1] = (unsigned char)n;
    memcpy(out + 2, why, n);
    return 2 + n;
}

void ds_name_clean(char *dst, const char *src, size_t len)
{
    size_t i;

    for (i = 0; i < len && i < DS_NAME_MAX && src[i] != '\0'; i++) {
        unsigned char ch = (unsigned char)src[i];

        dst[i] = (ch > 32 && ch < 127) ? (char)ch : '_';
    }
    dst[i] = '\0';
    if (i == 0)
        snprintf(dst, DS_NAME_MAX + 1, "anonymous");
}
