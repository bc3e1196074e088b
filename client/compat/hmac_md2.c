#include "hmac_md2.h"

#include <stdlib.h>
#include <string.h>

/* RFC 1319's byte permutation, built from the digits of pi. */
static const unsigned char S[256] = {
    41,  46,  67,  201, 162, 216, 124, 1,   61,  54,  84,  161, 236, 240, 6,   19,
    98,  167, 5,   243, 192, 199, 115, 140, 152, 147, 43,  217, 188, 76,  130, 202,
    30,  155, 87,  60,  253, 212, 224, 22,  103, 66,  111, 24,  138, 23,  229, 18,
    190, 78,  196, 214, 218, 158, 222, 73,  160, 251, 245, 142, 187, 47,  238, 122,
    169, 104, 121, 145, 21,  178, 7,   63,  148, 194, 16,  137, 11,  34,  95,  33,
    128, 127, 93,  154, 90,  144, 50,  39,  53,  62,  204, 231, 191, 247, 151, 3,
    255, 25,  48,  179, 72,  165, 181, 209, 215, 94,  146, 42,  172, 86,  170, 198,
    79,  184, 56,  210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4,   241,
    69,  157, 112, 89,  100, 113, 135, 32,  134, 91,  207, 101, 230, 45,  168, 2,
    27,  96,  37,  173, 174, 176, 185, 246, 28,  70,  97,  105, 52,  64,  126, 15,
    85,  71,  163, 35,  221, 81,  175, 58,  195, 92,  249, 206, 186, 197, 234, 38,
    44,  83,  13,  110, 133, 40,  132, 9,   211, 223, 205, 244, 65,  129, 77,  82,
    106, 220, 55,  200, 108, 193, 171, 250, 36,  225, 123, 8,   12,  189, 177, 74,
    120, 136, 149, 139, 227, 99,  232, 109, 233, 203, 213, 254, 59,  0,   29,  57,
    242, 239, 183, 14,  102, 88,  208, 228, 166, 119, 114, 248, 235, 117, 75,  10,
    49,  68,  80,  180, 143, 237, 31,  26,  219, 153, 141, 51,  159, 17,  131, 20,
};

struct md2 {
    unsigned char x[48], c[16], buf[16];
    size_t n; /* bytes waiting in buf */
};

static void block(struct md2 *m, const unsigned char *b)
{
    unsigned t = m->c[15];

    for (int j = 0; j < 16; j++) {
        m->x[16 + j] = b[j];
        m->x[32 + j] = (unsigned char)(b[j] ^ m->x[j]);
        t = m->c[j] ^= S[b[j] ^ t];
    }
    t = 0;
    for (int round = 0; round < 18; round++) {
        for (int k = 0; k < 48; k++)
            t = m->x[k] ^= S[t];
        t = (t + (unsigned)round) & 0xff;
    }
}

static void update(struct md2 *m, const unsigned char *p, size_t len)
{
    while (len > 0) {
        size_t take = 16 - m->n < len ? 16 - m->n : len;

        memcpy(m->buf + m->n, p, take);
        m->n += take;
        p += take;
        len -= take;
        if (m->n == 16) {
            block(m, m->buf);
            m->n = 0;
        }
    }
}

static void final(struct md2 *m, unsigned char out[16])
{
    unsigned char pad[16], sum[16];
    size_t k = 16 - m->n; /* 1..16 bytes, each of value k */

    memset(pad, (int)k, k);
    update(m, pad, k);
    memcpy(sum, m->c, 16);
    update(m, sum, 16);
    memcpy(out, m->x, 16);
}

void ds_md2(const void *msg, size_t len, unsigned char out[16])
{
    struct md2 m;

    memset(&m, 0, sizeof(m));
    update(&m, msg, len);
    final(&m, out);
}

void ds_hmac_md2(const void *key, size_t key_len, const void *msg, size_t len,
                 unsigned char out[16])
{
    unsigned char k[16] = { 0 }, pad[16], inner[16];
    struct md2 m;

    if (key_len > 16)
        ds_md2(key, key_len, k);
    else
        memcpy(k, key, key_len);
    for (int i = 0; i < 16; i++)
        pad[i] = k[i] ^ 0x36;
    memset(&m, 0, sizeof(m));
    update(&m, pad, 16);
    update(&m, msg, len);
    final(&m, inner);
    for (int i = 0; i < 16; i++)
        pad[i] = k[i] ^ 0x5c;
    memset(&m, 0, sizeof(m));
    update(&m, pad, 16);
    update(&m, inner, 16);
    final(&m, out);
}
