/*
 * The TLS stream's record layer (common/ds_tlsrec.h) over a socket pair, with the keys
 * made up here: what one end sends in pieces of any size the other reads in pieces of
 * any size, byte for byte, whether reads wait or not; a damaged record is refused.
 * DETSHARE_KTLS=0 keeps the records in user space (a socket pair has no kernel TLS).
 */
#include "ds_tlsrec.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOTAL (3u << 20)

static struct ds_tls_keys keys;
static struct ds_tlsrec tx, rx;
static int sv[2];
static unsigned char *data;

static void setup(void)
{
    setenv("DETSHARE_KTLS", "0", 1);
    for (size_t i = 0; i < sizeof(keys); i++)
        ((unsigned char *)&keys)[i] = (unsigned char)(i * 7 + 1);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    cr_assert_eq(ds_tlsrec_init(&tx, sv[0], &keys, 0), 0, "no libssl.so.3?");
    cr_assert_eq(ds_tlsrec_init(&rx, sv[1], &keys, 1), 0);
    data = malloc(TOTAL);
    for (size_t i = 0; i < TOTAL; i++)
        data[i] = (unsigned char)(i * 131 + (i >> 9));
}

static void teardown(void)
{
    ds_tlsrec_free(&tx);
    ds_tlsrec_free(&rx);
    close(sv[0]);
    close(sv[1]);
    free(data);
}

/* Sends data in pieces of 1 byte to 300 KiB, several to a call. */
static void *sender(void *arg)
{
    size_t off = 0, k = 0;
    static const size_t sizes[] = { 1, 5, 16384, 16385, 70000, 300 * 1024, 13, 4096 };

    (void)arg;
    while (off < TOTAL) {
        struct iovec iov[3];
        int n = 0;

        for (; n < 3 && off < TOTAL; n++, k++) {
            size_t len = sizes[k % 8] < TOTAL - off ? sizes[k % 8] : TOTAL - off;

            iov[n] = (struct iovec){ data + off, len };
            off += len;
        }
        if (ds_tlsrec_sendv(&tx, iov, n) != 0)
            return (void *)1;
    }
    return NULL;
}

Test(tlsrec, what_is_sent_in_any_pieces_is_read_in_any_pieces, .init = setup, .fini = teardown)
{
    static const size_t wants[] = { 3, 16383, 1 << 20, 7, 65536, 16400 };
    unsigned char *got = malloc(TOTAL);
    size_t have = 0, k = 0;
    pthread_t t;
    void *rc;

    cr_assert_eq(ds_tlsrec_kernel(&tx), 0);
    pthread_create(&t, NULL, sender, NULL);
    while (have < TOTAL) {
        size_t want = wants[k++ % 6];
        ssize_t n = ds_tlsrec_recv(&rx, got + have, want < TOTAL - have ? want : TOTAL - have,
                                   k % 3 == 0 ? MSG_DONTWAIT : 0);

        if (n < 0 && errno == EAGAIN)
            continue;
        cr_assert_gt(n, 0, "read failed: %s", strerror(errno));
        have += (size_t)n;
    }
    pthread_join(t, &rc);
    cr_assert_null(rc);
    cr_assert_eq(memcmp(got, data, TOTAL), 0);
    cr_assert_eq(ds_tlsrec_pending(&rx), 0);
    free(got);
}

Test(tlsrec, a_damaged_record_is_refused, .init = setup, .fini = teardown)
{
    unsigned char rec[64];
    struct iovec iov = { data, 20 };
    char buf[32];
    ssize_t n;

    cr_assert_eq(ds_tlsrec_sendv(&tx, &iov, 1), 0);
    n = recv(sv[1], rec, sizeof(rec), 0);
    cr_assert_eq(n, 5 + 20 + 1 + 16);
    rec[10] ^= 1;
    cr_assert_eq(send(sv[0], rec, (size_t)n, 0), n);
    cr_assert_eq(ds_tlsrec_recv(&rx, buf, sizeof(buf), 0), -1);
    cr_assert_eq(errno, EBADMSG);
}

Test(tlsrec, a_whole_record_not_yet_opened_is_pending, .init = setup, .fini = teardown)
{
    struct iovec iov = { data, 100 };
    char buf[10];

    cr_assert_eq(ds_tlsrec_sendv(&tx, &iov, 1), 0);
    cr_assert_eq(ds_tlsrec_sendv(&tx, &iov, 1), 0);
    cr_assert_eq(ds_tlsrec_recv(&rx, buf, sizeof(buf), 0), 10);
    cr_assert_eq(ds_tlsrec_pending(&rx), 90);
}
