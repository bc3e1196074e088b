/* XDR round trips of the wire types, and what happens to hostile encodings. */
#include "detshare.h"

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <string.h>

static size_t encode(xdrproc_t f, void *obj, char *buf, size_t len)
{
    XDR x;
    size_t n;

    xdrmem_create(&x, buf, (u_int)len, XDR_ENCODE);
    cr_assert(f(&x, obj));
    n = xdr_getpos(&x);
    xdr_destroy(&x);
    return n;
}

static int decode(xdrproc_t f, void *obj, char *buf, size_t len)
{
    XDR x;
    int ok;

    xdrmem_create(&x, buf, (u_int)len, XDR_DECODE);
    ok = f(&x, obj);
    xdr_destroy(&x);
    return ok;
}

Test(proto, hello_round_trip)
{
    ds_hello_args a = { .proto_version = DS_PROTO_VERSION, .tenant = "alice", .klass = DS_CLASS_LATENCY };
    ds_hello_args b;
    char buf[256];
    size_t n = encode((xdrproc_t)xdr_ds_hello_args, &a, buf, sizeof(buf));

    memset(&b, 0, sizeof(b));
    cr_assert(decode((xdrproc_t)xdr_ds_hello_args, &b, buf, n));
    cr_assert_eq(b.proto_version, DS_PROTO_VERSION);
    cr_assert_str_eq(b.tenant, "alice");
    cr_assert_eq(b.klass, DS_CLASS_LATENCY);
    xdr_free((xdrproc_t)xdr_ds_hello_args, (char *)&b);
}

Test(proto, copy_chunk_round_trip_is_bit_exact)
{
    static char data[4099], buf[8192];
    ds_htod_args a = { .dst = 0x123456789abcull, .stream = 7 }, b;
    size_t n;

    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)(i * 131);
    a.data.data_len = sizeof(data);
    a.data.data_val = data;
    n = encode((xdrproc_t)xdr_ds_htod_args, &a, buf, sizeof(buf));
    memset(&b, 0, sizeof(b));
    cr_assert(decode((xdrproc_t)xdr_ds_htod_args, &b, buf, n));
    cr_assert_eq(b.dst, a.dst);
    cr_assert_eq(b.stream, 7);
    cr_assert_eq(b.data.data_len, sizeof(data));
    cr_assert_arr_eq(b.data.data_val, data, sizeof(data));
    xdr_free((xdrproc_t)xdr_ds_htod_args, (char *)&b);
}

Test(proto, result_union_carries_only_the_error_on_failure)
{
    ds_alloc_res ok = { .err = 0 }, bad = { .err = 2 }, out;
    char buf[64];
    size_t n;

    ok.ds_alloc_res_u.ptr = 0xdeadbeef000ull;
    n = encode((xdrproc_t)xdr_ds_alloc_res, &ok, buf, sizeof(buf));
    cr_assert_eq(n, 12);
    cr_assert(decode((xdrproc_t)xdr_ds_alloc_res, &out, buf, n));
    cr_assert_eq(out.ds_alloc_res_u.ptr, 0xdeadbeef000ull);
    n = encode((xdrproc_t)xdr_ds_alloc_res, &bad, buf, sizeof(buf));
    cr_assert_eq(n, 4);
}

Test(proto, oversized_length_is_refused_before_allocation)
{
    /* dst, stream, then a byte count just over the bound. */
    uint32_t words[] = { 0, 1, 0, 2, htonl(DS_CHUNK_MAX + 1) };
    ds_htod_args b;

    memset(&b, 0, sizeof(b));
    cr_assert_not(decode((xdrproc_t)xdr_ds_htod_args, &b, (char *)words, sizeof(words)));
    xdr_free((xdrproc_t)xdr_ds_htod_args, (char *)&b);
}

Test(proto, truncated_input_is_refused)
{
    ds_memset_args a = { .dst = 1, .pitch = 2, .value = 3, .elem_size = 4, .width = 5, .height = 6, .stream = 7 }, b;
    char buf[128];
    size_t n = encode((xdrproc_t)xdr_ds_memset_args, &a, buf, sizeof(buf));

    for (size_t cut = 0; cut < n; cut += 4)
        cr_assert_not(decode((xdrproc_t)xdr_ds_memset_args, &b, buf, cut), "cut at %zu", cut);
    cr_assert(decode((xdrproc_t)xdr_ds_memset_args, &b, buf, n));
    cr_assert_eq(b.height, 6);
}
