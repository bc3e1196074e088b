#include "token.h"

#include "ds_error.h"
#include "ds_log.h"
#include "ds_preface.h"
#include "ds_token.h"
#include "ds_tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first token of the file at path into buf.  Returns 0, or -1 after saying why. */
static int token_from_file(const char *path, char *buf, size_t len)
{
    char line[1024], *token, *prefix;
    FILE *f = fopen(path, "r");
    int rc = 0;

    if (f == NULL) {
        ds_error("DETSHARE_TOKEN_FILE=%s cannot be read: %s", path, strerror(errno));
        return -1;
    }
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL)
        rc = ds_token_line(line, &token, &prefix);
    fclose(f);
    if (rc == 1)
        snprintf(buf, len, "%s", token);
    explicit_bzero(line, sizeof(line));
    if (rc == 1)
        return 0;
    if (rc == 0)
        ds_error("DETSHARE_TOKEN_FILE=%s holds no token", path);
    else
        ds_error("DETSHARE_TOKEN_FILE=%s: its first token is longer than %d bytes, or more "
                 "than a name prefix follows it", path, DS_TOKEN_MAX);
    return -1;
}

/* The token to show into buf ("" for none).  Returns 0, or -1 after saying why. */
static int find_token(char *buf, size_t len)
{
    const char *env = getenv("DETSHARE_TOKEN"), *file = getenv("DETSHARE_TOKEN_FILE");

    buf[0] = '\0';
    if (env != NULL && env[0] != '\0') {
        if (strlen(env) > DS_TOKEN_MAX) {
            ds_error("DETSHARE_TOKEN is longer than %d bytes", DS_TOKEN_MAX);
            return -1;
        }
        snprintf(buf, len, "%s", env);
        return 0;
    }
    if (file != NULL && file[0] != '\0')
        return token_from_file(file, buf, len);
    return 0;
}

/* The answer's bytes through a TLS session. */
static int tls_read_all(void *h, void *buf, size_t len)
{
    unsigned char *p = buf;

    while (len > 0) {
        int n = ds_tls_read(h, p, len);

        if (n <= 0)
            return DS_EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Send the preface on sock, or through tls when not NULL, and await the answer. */
static int present(int sock, struct ds_tls *tls, const char *token, const char *name, char *why,
                   size_t len)
{
    unsigned char buf[DS_PREFACE_MAX];
    size_t n;
    int rc;

    if (tls == NULL) {
        rc = ds_preface_send(sock, token, strlen(token), name);
        return rc == 0 ? ds_preface_await(sock, why, len) : rc;
    }
    n = ds_preface_encode(buf, token, strlen(token), name);
    rc = n == 0 ? DS_EINVAL : ds_tls_write(tls, buf, n);
    explicit_bzero(buf, sizeof(buf));
    return rc == 0 ? ds_preface_await_with(tls_read_all, tls, why, len) : rc;
}

CUresult ds__token_present(int sock, struct ds_tls *tls, const char *where, const char *name)
{
    char token[DS_TOKEN_MAX + 1] = "", why[DS_PREFACE_REASON_MAX + 1];
    int rc;

    if (find_token(token, sizeof(token)) != 0)
        return CUDA_ERROR_NO_DEVICE;
    rc = present(sock, tls, token, name, why, sizeof(why));
    explicit_bzero(token, sizeof(token));
    if (rc == 1)
        ds_error("detshare-server at %s refused this tenant: %s", where, why);
    else if (rc != 0)
        ds_error("detshare-server at %s did not answer the tenant's preface: %s", where,
                 rc == DS_EIO ? strerror(errno ? errno : EPIPE) : ds_strerror(rc));
    return rc == 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}
