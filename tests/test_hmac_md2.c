/* MD2 against RFC 1319's test suite, and HMAC-MD2 against its definition (RFC 2104 with
 * MD2's 16-byte block).  The MAC's agreement with the real driver is recorded in
 * docs/export-tables.md (measured on the H100). */
#include "hmac_md2.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static void hex(const unsigned char d[16], char out[33])
{
    for (int i = 0; i < 16; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

Test(hmac_md2, rfc1319_test_suite)
{
    static const char *const in[] = {
        "", "a", "abc", "message digest", "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
    };
    static const char *const want[] = {
        "8350e5a3e24c153df2275c9f80692773", "32ec01ec4a6dac72c0ab96fb34c0b5d1",
        "da853b0d3f88d99b30283a69e6ded6bb", "ab4f496bfb2a530b219ff33031fe06b0",
        "4e8ddff3650292ab5a4108c3aa47940b", "da33def2a42df13975352846c30338cd",
        "d5976f79d83d3a0dc9806c3c66f3efd8",
    };
    unsigned char d[16];
    char h[33];

    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        ds_md2(in[i], strlen(in[i]), d);
        hex(d, h);
        cr_assert_str_eq(h, want[i], "MD2(\"%s\")", in[i]);
    }
}

Test(hmac_md2, hmac_is_md2_of_the_padded_keys)
{
    static const unsigned char key[16] = { 0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                           0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f };
    const char *msg = "the quick brown fox jumps over the lazy dog, twice or more";
    unsigned char inner_in[16 + 64], outer_in[32], inner[16], want[16], got[16];
    size_t n = strlen(msg);

    for (int i = 0; i < 16; i++) {
        inner_in[i] = key[i] ^ 0x36;
        outer_in[i] = key[i] ^ 0x5c;
    }
    memcpy(inner_in + 16, msg, n);
    ds_md2(inner_in, 16 + n, inner);
    memcpy(outer_in + 16, inner, 16);
    ds_md2(outer_in, 32, want);
    ds_hmac_md2(key, sizeof(key), msg, n, got);
    cr_assert_arr_eq(got, want, 16);
    /* A key longer than the block is hashed first. */
    ds_hmac_md2(msg, n, key, sizeof(key), got);
    ds_md2(msg, n, inner);
    ds_hmac_md2(inner, 16, key, sizeof(key), want);
    cr_assert_arr_eq(got, want, 16);
}
