#define _GNU_SOURCE
#include "ds_tls.h"

#include "ds_error.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What is used of libssl and of libcrypto (found through libssl's dependencies), typed
 * by OpenSSL's own declarations. */
#define DS_SSL_FUNCS(X)                                                                     \
    X(TLS_client_method) X(TLS_server_method) X(SSL_CTX_new) X(SSL_CTX_free)                 \
    X(SSL_CTX_ctrl) X(SSL_CTX_set_default_verify_paths) X(SSL_CTX_load_verify_locations)     \
    X(SSL_CTX_set_verify) X(SSL_CTX_use_certificate_chain_file)                             \
    X(SSL_CTX_use_PrivateKey_file) X(SSL_CTX_check_private_key) X(SSL_CTX_set_num_tickets)  \
    X(SSL_new) X(SSL_free) X(SSL_set_fd) X(SSL_set_bio) X(SSL_set_accept_state)              \
    X(SSL_connect) X(SSL_do_handshake) X(SSL_read) X(SSL_write) X(SSL_get_error) X(SSL_ctrl) \
    X(SSL_get_rbio) X(SSL_get_wbio)                                                          \
    X(SSL_set1_host) X(SSL_get0_param) X(SSL_get_verify_result) X(SSL_export_keying_material) \
    X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_verify_cert_error_string) X(BIO_new) X(BIO_free)  \
    X(BIO_s_mem) X(BIO_read) X(BIO_write) X(ERR_get_error) X(ERR_error_string_n)            \
    X(ERR_clear_error) X(EVP_CIPHER_CTX_new) X(EVP_CIPHER_CTX_free) X(EVP_aes_128_gcm)       \
    X(EVP_EncryptInit_ex) X(EVP_EncryptUpdate) X(EVP_EncryptFinal_ex) X(EVP_DecryptInit_ex)  \
    X(EVP_DecryptUpdate) X(EVP_DecryptFinal_ex) X(EVP_CIPHER_CTX_ctrl)

#define DS_SSL_PTR(name) __typeof__(&name) name;
static struct {
    DS_SSL_FUNCS(DS_SSL_PTR)
} f;
#undef DS_SSL_PTR

/* The exporter label both ends derive the stream's keys with (RFC 8446, 7.5). */
static const char LABEL[] = "EXPORTER-detshare-records-v1";

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];

static void load(void)
{
    void *h = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);

    if (h == NULL) {
        snprintf(load_error, sizeof(load_error), "cannot open libssl.so.3 (OpenSSL 3): %s",
                 dlerror());
        return;
    }
#define DS_SSL_SYM(name)                                                                   \
    if (load_error[0] == '\0' && (f.name = (__typeof__(f.name))dlsym(h, #name)) == NULL)    \
        snprintf(load_error, sizeof(load_error), "libssl.so.3 has no %s", #name);
    DS_SSL_FUNCS(DS_SSL_SYM)
#undef DS_SSL_SYM
}

int ds_tls_load(char *why, size_t len)
{
    pthread_once(&load_once, load);
    if (load_error[0] == '\0')
        return 0;
    snprintf(why, len, "%s", load_error);
    return DS_ENOTSUP;
}

/* OpenSSL's last error, or `what` when it has none, into why. */
static void ssl_error(const char *what, char *why, size_t len)
{
    unsigned long e = f.ERR_get_error();
    char text[200];

    if (e == 0) {
        snprintf(why, len, "%s", what);
        return;
    }
    f.ERR_error_string_n(e, text, sizeof(text));
    snprintf(why, len, "%s: %s", what, text);
    f.ERR_clear_error();
}

static SSL_CTX *new_ctx(const SSL_METHOD *m, char *why, size_t len)
{
    SSL_CTX *ctx = f.SSL_CTX_new(m);

    if (ctx == NULL) {
        ssl_error("cannot make a TLS context", why, len);
        return NULL;
    }
    f.SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_3_VERSION, NULL);
    return ctx;
}

struct ds_tls_ctx *ds_tls_client_ctx(const char *ca_file, char *why, size_t len)
{
    SSL_CTX *ctx;
    int ok;

    if (ds_tls_load(why, len) != 0 || (ctx = new_ctx(f.TLS_client_method(), why, len)) == NULL)
        return NULL;
    ok = ca_file != NULL ? f.SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                         : f.SSL_CTX_set_default_verify_paths(ctx);
    if (!ok) {
        ssl_error(ca_file != NULL ? "cannot read the CA file" : "cannot find the system's CAs",
                  why, len);
        f.SSL_CTX_free(ctx);
        return NULL;
    }
    f.SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    return (struct ds_tls_ctx *)ctx;
}

struct ds_tls_ctx *ds_tls_server_ctx(const char *cert, const char *key, char *why, size_t len)
{
    SSL_CTX *ctx;

    if (ds_tls_load(why, len) != 0 || (ctx = new_ctx(f.TLS_server_method(), why, len)) == NULL)
        return NULL;
    if (f.SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        ssl_error("cannot read the certificate", why, len);
    } else if (f.SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        ssl_error("cannot read the key", why, len);
    } else if (f.SSL_CTX_check_private_key(ctx) != 1) {
        ssl_error("the key is not the certificate's", why, len);
    } else {
        /* A session ticket would be a record after the handshake that the tenant's
         * record layer does not expect; nothing resumes sessions anyway. */
        f.SSL_CTX_set_num_tickets(ctx, 0);
        return (struct ds_tls_ctx *)ctx;
    }
    f.SSL_CTX_free(ctx);
    return NULL;
}

void ds_tls_ctx_free(struct ds_tls_ctx *c)
{
    if (c != NULL)
        f.SSL_CTX_free((SSL_CTX *)c);
}

/* Check that the certificate names host: an address as an address, else as a name. */
static int expect_host(SSL *s, const char *host)
{
    unsigned char addr[16];

    if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1)
        return f.X509_VERIFY_PARAM_set1_ip_asc(f.SSL_get0_param(s), host);
    f.SSL_ctrl(s, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, (void *)host);
    return f.SSL_set1_host(s, host);
}

struct ds_tls *ds_tls_connect(struct ds_tls_ctx *c, int fd, const char *host, char *why,
                              size_t len)
{
    SSL *s = f.SSL_new((SSL_CTX *)c);
    long v;

    if (s == NULL || !f.SSL_set_fd(s, fd) || !expect_host(s, host)) {
        ssl_error("cannot set up a TLS session", why, len);
    } else if (f.SSL_connect(s) == 1) {
        return (struct ds_tls *)s;
    } else if ((v = f.SSL_get_verify_result(s)) != X509_V_OK) {
        snprintf(why, len, "the server's certificate is not trusted: %s",
                 f.X509_verify_cert_error_string(v));
        f.ERR_clear_error();
    } else {
        ssl_error("the TLS handshake failed", why, len);
    }
    if (s != NULL)
        f.SSL_free(s);
    return NULL;
}

struct ds_tls *ds_tls_accept(struct ds_tls_ctx *c)
{
    SSL *s = f.SSL_new((SSL_CTX *)c);
    BIO *in = f.BIO_new(f.BIO_s_mem()), *out = f.BIO_new(f.BIO_s_mem());

    if (s == NULL || in == NULL || out == NULL) {
        if (in != NULL)
            f.BIO_free(in);
        if (out != NULL)
            f.BIO_free(out);
        if (s != NULL)
            f.SSL_free(s);
        return NULL;
    }
    f.SSL_set_bio(s, in, out);
    f.SSL_set_accept_state(s);
    return (struct ds_tls *)s;
}

static SSL *ssl(struct ds_tls *t)
{
    return (SSL *)t;
}

int ds_tls_feed(struct ds_tls *t, const void *in, size_t n)
{
    return f.BIO_write(f.SSL_get_rbio(ssl(t)), in, (int)n) == (int)n ? 0 : DS_ENOMEM;
}

size_t ds_tls_outgoing(struct ds_tls *t, void *buf, size_t len)
{
    int n = f.BIO_read(f.SSL_get_wbio(ssl(t)), buf, (int)len);

    return n > 0 ? (size_t)n : 0;
}

int ds_tls_handshake(struct ds_tls *t, char *why, size_t len)
{
    int rc = f.SSL_do_handshake(ssl(t)), e;

    if (rc == 1)
        return 1;
    e = f.SSL_get_error(ssl(t), rc);
    if (e == SSL_ERROR_WANT_READ)
        return 0;
    ssl_error("the TLS handshake failed", why, len);
    return DS_EPROTO;
}

int ds_tls_read(struct ds_tls *t, void *buf, size_t len)
{
    int n = f.SSL_read(ssl(t), buf, (int)len);

    if (n > 0)
        return n;
    if (f.SSL_get_error(ssl(t), n) == SSL_ERROR_WANT_READ)
        return 0;
    f.ERR_clear_error();
    return DS_EIO;
}

int ds_tls_write(struct ds_tls *t, const void *buf, size_t len)
{
    int n = f.SSL_write(ssl(t), buf, (int)len);

    if (n == (int)len)
        return 0;
    f.ERR_clear_error();
    return DS_EIO;
}

int ds_tls_keys(struct ds_tls *t, struct ds_tls_keys *k)
{
    unsigned char out[sizeof(*k)];
    int ok = f.SSL_export_keying_material(ssl(t), out, sizeof(out), LABEL, sizeof(LABEL) - 1,
                                          NULL, 0, 0);

    if (ok != 1)
        return DS_EIO;
    memcpy(k->key, out, sizeof(k->key));
    memcpy(k->iv, out + sizeof(k->key), sizeof(k->iv));
    explicit_bzero(out, sizeof(out));
    return 0;
}

void ds_tls_free(struct ds_tls *t)
{
    if (t != NULL)
        f.SSL_free(ssl(t));
}

struct ds_tls_aead *ds_tls_aead_new(const unsigned char key[DS_TLS_KEY])
{
    EVP_CIPHER_CTX *c;

    /* The executor, which did not shake hands, opens libssl here. */
    pthread_once(&load_once, load);
    if (load_error[0] != '\0')
        return NULL;
    c = f.EVP_CIPHER_CTX_new();

    /* The key is set once; each record sets only its nonce. */
    if (c != NULL &&
        (f.EVP_EncryptInit_ex(c, f.EVP_aes_128_gcm(), NULL, NULL, NULL) != 1 ||
         f.EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, DS_TLS_IV, NULL) != 1 ||
         f.EVP_EncryptInit_ex(c, NULL, NULL, key, NULL) != 1)) {
        f.EVP_CIPHER_CTX_free(c);
        c = NULL;
    }
    return (struct ds_tls_aead *)c;
}

void ds_tls_aead_free(struct ds_tls_aead *a)
{
    if (a != NULL)
        f.EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)a);
}

int ds_tls_seal(struct ds_tls_aead *a, const unsigned char nonce[DS_TLS_IV],
                const unsigned char *aad, size_t aad_len, const struct ds_tls_part *parts,
                int nparts, unsigned char *out)
{
    EVP_CIPHER_CTX *c = (EVP_CIPHER_CTX *)a;
    int n, ok = f.EVP_EncryptInit_ex(c, NULL, NULL, NULL, nonce) == 1 &&
                f.EVP_EncryptUpdate(c, NULL, &n, aad, (int)aad_len) == 1;

    for (int i = 0; ok && i < nparts; i++) {
        ok = f.EVP_EncryptUpdate(c, out, &n, parts[i].p, (int)parts[i].n) == 1;
        out += n;
    }
    ok = ok && f.EVP_EncryptFinal_ex(c, out, &n) == 1;
    out += n;
    ok = ok && f.EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, out) == 1;
    return ok ? 0 : DS_EIO;
}

int ds_tls_open(struct ds_tls_aead *a, const unsigned char nonce[DS_TLS_IV],
                const unsigned char *aad, size_t aad_len, const unsigned char *in, size_t n,
                unsigned char *out)
{
    EVP_CIPHER_CTX *c = (EVP_CIPHER_CTX *)a;
    int m;

    if (n < 16)
        return DS_EIO;
    n -= 16;
    /* EVP_DecryptInit_ex on a context set up for encryption switches it; the key
     * stays. */
    if (f.EVP_DecryptInit_ex(c, NULL, NULL, NULL, nonce) != 1 ||
        f.EVP_DecryptUpdate(c, NULL, &m, aad, (int)aad_len) != 1 ||
        f.EVP_DecryptUpdate(c, out, &m, in, (int)n) != 1 ||
        f.EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, (void *)(in + n)) != 1 ||
        f.EVP_DecryptFinal_ex(c, out + m, &m) != 1)
        return DS_EIO;
    return 0;
}
