#include "tokens.h"

#include "ds_error.h"
#include "ds_log.h"
#include "ds_token.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A line of a token file: room for the longest token, prefix and a comment. */
#define DS_TOKEN_LINE_MAX 1022

struct token {
    unsigned char bytes[DS_TOKEN_MAX]; /* zero-padded, so every comparison is as long */
    size_t len;
    char prefix[DS_NAME_MAX + 1]; /* empty: any tenant name */
    char as[DS_NAME_MAX + 1];     /* the name its tenants get; empty: their own */
};

struct ds_tokens {
    struct token *v;
    size_t n;
};

static int add(struct ds_tokens *t, const char *token, const char *prefix)
{
    struct token *v = realloc(t->v, (t->n + 1) * sizeof(*v));

    if (v == NULL)
        return DS_ENOMEM;
    t->v = v;
    v = &t->v[t->n++];
    memset(v, 0, sizeof(*v));
    v->len = strlen(token);
    memcpy(v->bytes, token, v->len);
    snprintf(v->prefix, sizeof(v->prefix), "%s", prefix ? prefix : "");
    return 0;
}

static void warn_if_shared(FILE *f, const char *path)
{
    struct stat st;

    if (fstat(fileno(f), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)))
        ds_warn("token file %s is readable by %s: tokens are secrets (chmod 600 it)", path,
                (st.st_mode & S_IROTH) ? "others" : "its group");
}

/* The next line of f into buf, without its newline.  Returns 1, 0 at the end of the
 * file, DS_ERANGE when it is longer than len - 1 bytes, DS_EINVAL at a NUL byte (which
 * would end the line early, silently, for every string function after). */
static int next_line(FILE *f, char *buf, size_t len)
{
    size_t n = 0;
    int ch;

    while ((ch = getc(f)) != EOF && ch != '\n') {
        if (ch == '\0')
            return DS_EINVAL;
        if (n + 1 == len)
            return DS_ERANGE;
        buf[n++] = (char)ch;
    }
    buf[n] = '\0';
    return ch != EOF || n > 0;
}

/* Line `no` of the file at path, as next_line answered (rc), into t.  Returns 0, or -1
 * after logging why as PATH:LINE. */
static int take_line(struct ds_tokens *t, char *line, int rc, const char *path, int no)
{
    char *token, *prefix;

    if (rc == DS_EINVAL) {
        ds_error("%s:%d: holds a NUL byte: a token file is text, one token per line", path, no);
        return -1;
    }
    if (rc == DS_ERANGE) {
        ds_error("%s:%d: longer than %d bytes", path, no, DS_TOKEN_LINE_MAX);
        return -1;
    }
    rc = ds_token_line(line, &token, &prefix);
    if (rc < 0) {
        ds_error("%s:%d: expected a token of at most %d bytes, then optionally a tenant-name "
                 "prefix of at most %d, then nothing but a comment", path, no, DS_TOKEN_MAX,
                 DS_NAME_MAX);
        return -1;
    }
    if (rc == 1 && add(t, token, prefix) != 0) {
        ds_error("%s: out of memory", path);
        return -1;
    }
    return 0;
}

/* Every line of f into t.  Returns 0, or -1 after logging why. */
static int read_lines(struct ds_tokens *t, FILE *f, const char *path)
{
    char line[DS_TOKEN_LINE_MAX + 1];
    int no = 0, rc, bad = 0;

    while (!bad && (rc = next_line(f, line, sizeof(line))) != 0)
        bad = take_line(t, line, rc, path, ++no) != 0;
    explicit_bzero(line, sizeof(line));
    return bad ? -1 : 0;
}

struct ds_tokens *ds_tokens_load(const char *path)
{
    struct ds_tokens *t = calloc(1, sizeof(*t));
    FILE *f = fopen(path, "r");
    int ok;

    if (f == NULL || t == NULL) {
        ds_error("cannot read token file %s: %s", path, strerror(f ? ENOMEM : errno));
        if (f != NULL)
            fclose(f);
        free(t);
        return NULL;
    }
    warn_if_shared(f, path);
    ok = read_lines(t, f, path) == 0;
    if (ok && ferror(f)) {
        ds_error("cannot read token file %s: %s", path, strerror(EIO));
        ok = 0;
    }
    if (ok && t->n == 0) {
        ds_error("token file %s holds no token (one per line, then optionally a tenant-name "
                 "prefix; '#' at the start of a line or after a blank starts a comment)",
                 path);
        ok = 0;
    }
    fclose(f);
    if (!ok) {
        ds_tokens_free(t);
        return NULL;
    }
    ds_info("%zu token(s) from %s", t->n, path);
    return t;
}

void ds_tokens_free(struct ds_tokens *t)
{
    if (t == NULL)
        return;
    /* Secrets do not linger in freed memory. */
    if (t->v != NULL)
        explicit_bzero(t->v, t->n * sizeof(*t->v));
    free(t->v);
    free(t);
}

/* 1 when x is 0, else 0, without a branch. */
static size_t is_zero(unsigned x)
{
    return (size_t)(((uint64_t)x - 1) >> 63);
}

/* The index of the token equal to `given`, or t->n (also for a NULL t).  Every byte of
 * every token is compared whatever matches, so the time taken says nothing about the
 * tokens. */
static size_t find(const struct ds_tokens *t, const unsigned char *given, size_t len)
{
    unsigned char padded[DS_TOKEN_MAX] = { 0 };
    size_t hit, found = 0;

    if (t == NULL)
        return 0;
    hit = t->n;
    memcpy(padded, given, len);
    for (size_t i = 0; i < t->n; i++) {
        unsigned d = (unsigned)(t->v[i].len ^ len);
        size_t first;

        for (size_t k = 0; k < DS_TOKEN_MAX; k++)
            d |= (unsigned)(t->v[i].bytes[k] ^ padded[k]);
        first = is_zero(d) & (found ^ 1);
        hit = (hit & (first - 1)) | (i & (0 - first));
        found |= first;
    }
    explicit_bzero(padded, sizeof(padded));
    return hit;
}

/* A name the hello could give unchanged: the executor keeps only printable characters
 * without spaces in names (a hostile name must not forge log lines). */
static int name_ok(const struct ds_preface *p)
{
    if (p->name_len == 0)
        return 0;
    for (size_t i = 0; i < p->name_len; i++)
        if (p->name[i] <= 32 || p->name[i] >= 127)
            return 0;
    return 1;
}

/* The name a tenant accepted with token k gets when k names its tenants: k's name, then
 * what the preface's name has after k's prefix, cut at DS_NAME_MAX; else "". */
static void rename_to(const struct token *k, const struct ds_preface *p, char *as)
{
    size_t plen = strlen(k->prefix), alen = strlen(k->as);
    size_t rest = p->name_len - plen;

    as[0] = '\0';
    if (alen == 0)
        return;
    if (rest > DS_NAME_MAX - alen)
        rest = DS_NAME_MAX - alen;
    memcpy(as, k->as, alen);
    memcpy(as + alen, p->name + plen, rest);
    as[alen + rest] = '\0';
}

const char *ds_tokens_check(const struct ds_tokens *t, const struct ds_tokens *minted,
                            const struct ds_preface *p, char *as)
{
    const struct token *hit = NULL;
    size_t i, k, plen;

    as[0] = '\0';
    if (p->token_len == 0)
        return "no token given (the tenant sets DETSHARE_TOKEN or DETSHARE_TOKEN_FILE)";
    /* Both sets are searched whatever the first answers: the time says nothing. */
    i = find(t, p->token, p->token_len);
    k = find(minted, p->token, p->token_len);
    if (t != NULL && i < t->n)
        hit = &t->v[i];
    else if (minted != NULL && k < minted->n)
        hit = &minted->v[k];
    if (hit == NULL)
        return "unknown token";
    if (!name_ok(p))
        return "the tenant name (DETSHARE_TENANT) must be printable, without spaces";
    plen = strlen(hit->prefix);
    if (plen > p->name_len || memcmp(p->name, hit->prefix, plen) != 0)
        return "this token is not for this tenant name (DETSHARE_TENANT)";
    rename_to(hit, p, as);
    return NULL;
}

struct ds_tokens *ds_tokens_new(void)
{
    return calloc(1, sizeof(struct ds_tokens));
}

size_t ds_tokens_count(const struct ds_tokens *t)
{
    return t != NULL ? t->n : 0;
}

/* The index of `token` in t, or t->n.  Only the admin API asks, so time may vary. */
static size_t index_of(const struct ds_tokens *t, const char *token)
{
    size_t len = strlen(token), i;

    for (i = 0; i < t->n; i++)
        if (t->v[i].len == len && memcmp(t->v[i].bytes, token, len) == 0)
            break;
    return i;
}

/* A prefix a tenant name could begin with: what name_ok keeps, at most DS_NAME_MAX. */
static int prefix_ok(const char *prefix)
{
    size_t n = strlen(prefix);

    if (n > DS_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (prefix[i] <= 32 || prefix[i] >= 127)
            return 0;
    return 1;
}

int ds_tokens_add(struct ds_tokens *t, const char *token, const char *prefix, const char *as)
{
    size_t len = strlen(token), i;
    int rc;

    if (len == 0 || len > DS_TOKEN_MAX || !prefix_ok(prefix) || !prefix_ok(as))
        return DS_EINVAL;
    i = index_of(t, token);
    if (i == t->n) {
        if (t->n >= DS_TOKENS_MINTED_MAX)
            return DS_EBUSY;
        if ((rc = add(t, token, prefix)) != 0)
            return rc;
    }
    snprintf(t->v[i].prefix, sizeof(t->v[i].prefix), "%s", prefix);
    snprintf(t->v[i].as, sizeof(t->v[i].as), "%s", as);
    return 0;
}

int ds_tokens_revoke(struct ds_tokens *t, const char *token)
{
    size_t i = index_of(t, token);

    if (i == t->n)
        return DS_EHANDLE;
    t->v[i] = t->v[t->n - 1];
    explicit_bzero(&t->v[t->n - 1], sizeof(t->v[0]));
    t->n--;
    return 0;
}
