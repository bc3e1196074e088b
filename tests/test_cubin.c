#include "cubin.h"
#include "ds_error.h"
#include "ds_image.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Images of tests/kernels/params.cu, built by nvcc at build time (tests/CMakeLists.txt). */
#define KPATH(f) DS_KERNEL_DIR "/" f

/*
 * The expected layouts were read off `cuobjdump -elf params.cubin` (cuobjdump 13.2 from
 * NVIDIA's nvidia-cuda-cuobjdump wheel, on the cubin that nvcc 13.0.88 builds with
 * `-cubin -arch=sm_90`): for each .nv.info.<kernel> section, the Ordinal / Offset / Size
 * of every EIATTR_KPARAM_INFO or EIATTR_KPARAM_INFO_V2 record, and the value of
 * EIATTR_CBANK_PARAM_SIZE (which equals the size half of EIATTR_PARAM_CBANK's second
 * word, e.g. 0x410210 -> 0x41 for k_struct).  cuobjdump lists parameters last first.
 * They agree with the C rules for laying out each argument at its own alignment.
 */
struct expect {
    const char *name;
    uint32_t param_bytes;
    uint32_t nparams;
    struct ds_kparam p[23];
};

static const struct expect expected[] = {
    { "_Z6k_tmplIfEvPT_S0_", 0xc, 2, { { 0, 0x0, 8 }, { 1, 0x8, 4 } } },
    { "k_big", 0x1390, 2, { { 0, 0x0, 0x1388 }, { 1, 0x1388, 8 } } }, /* KPARAM_INFO_V2 */
    { "k_calls", 0x8, 1, { { 0, 0x0, 8 } } },
    { "k_cluster", 0x8, 1, { { 0, 0x0, 8 } } },
    { "k_int", 0x4, 1, { { 0, 0x0, 4 } } },
    { "k_many", 0x68, 23,
      { { 0, 0x00, 4 }, { 1, 0x04, 4 }, { 2, 0x08, 4 }, { 3, 0x0c, 4 }, { 4, 0x10, 4 },
        { 5, 0x14, 4 }, { 6, 0x18, 4 }, { 7, 0x1c, 4 }, { 8, 0x20, 4 }, { 9, 0x24, 4 },
        { 10, 0x28, 4 }, { 11, 0x2c, 4 }, { 12, 0x30, 4 }, { 13, 0x34, 4 }, { 14, 0x38, 4 },
        { 15, 0x3c, 4 }, { 16, 0x40, 4 }, { 17, 0x44, 4 }, { 18, 0x48, 4 }, { 19, 0x4c, 4 },
        { 20, 0x50, 8 }, { 21, 0x58, 1 }, { 22, 0x60, 8 } } },
    { "k_mixed", 0x24, 7,
      { { 0, 0x0, 1 }, { 1, 0x2, 2 }, { 2, 0x4, 4 }, { 3, 0x8, 8 }, { 4, 0x10, 1 },
        { 5, 0x18, 8 }, { 6, 0x20, 4 } } },
    { "k_none", 0, 0, { { 0, 0, 0 } } },
    { "k_ptrs", 0x20, 4, { { 0, 0x0, 8 }, { 1, 0x8, 8 }, { 2, 0x10, 4 }, { 3, 0x18, 8 } } },
    { "k_struct", 0x41, 6,
      { { 0, 0x0, 1 }, { 1, 0x1, 7 }, { 2, 0x8, 6 }, { 3, 0x10, 0x20 }, { 4, 0x30, 0x10 },
        { 5, 0x40, 1 } } },
    { "k_unused", 0x11, 3, { { 0, 0x0, 4 }, { 1, 0x8, 8 }, { 2, 0x10, 1 } } },
};
#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;

    cr_assert_not_null(f, "cannot open %s (built by the ds_test_kernels target)", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    cr_assert_gt(n, 0);
    rewind(f);
    buf = malloc((size_t)n);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void check_expected(const struct ds_cubin *c)
{
    size_t i, j;

    cr_assert_eq(c->sm, 90);
    cr_assert_eq(c->nkernels, NEXPECTED, "kernels: %u", c->nkernels);
    for (i = 0; i < NEXPECTED; i++) {
        const struct ds_kernel *k = &c->kernels[i];
        const struct expect *x = &expected[i];

        cr_assert_str_eq(k->name, x->name, "kernels are sorted by name");
        cr_assert_eq(ds_cubin_kernel(c, x->name), k);
        cr_assert_eq(k->nparams, x->nparams, "%s: %u params", x->name, k->nparams);
        cr_assert_eq(k->param_bytes, x->param_bytes, "%s: %u bytes", x->name,
                     k->param_bytes);
        if (x->nparams == 0)
            cr_assert_null(k->params);
        for (j = 0; j < x->nparams; j++) {
            cr_assert_eq(k->params[j].ordinal, x->p[j].ordinal, "%s #%zu", x->name, j);
            cr_assert_eq(k->params[j].offset, x->p[j].offset, "%s #%zu offset", x->name, j);
            cr_assert_eq(k->params[j].size, x->p[j].size, "%s #%zu size", x->name, j);
        }
    }
}

/* What must hold of any successful parse, however odd the input. */
static void check_consistent(const struct ds_cubin *c)
{
    uint32_t i, j;

    for (i = 0; i < c->nkernels; i++) {
        const struct ds_kernel *k = &c->kernels[i];

        cr_assert_not_null(k->name);
        cr_assert_neq(k->name[0], '\0');
        cr_assert((k->nparams == 0) == (k->params == NULL));
        for (j = 0; j < k->nparams; j++) {
            cr_assert_eq(k->params[j].ordinal, j);
            cr_assert_leq((uint64_t)k->params[j].offset + k->params[j].size, k->param_bytes);
        }
        if (i > 0)
            cr_assert_leq(strcmp(c->kernels[i - 1].name, k->name), 0);
    }
}

Test(cubin, layouts_match_cuobjdump)
{
    size_t len;
    unsigned char *img = slurp(KPATH("params.cubin"), &len);
    struct ds_cubin c;

    cr_assert_eq(ds_cubin_parse(img, len, &c), 0);
    check_expected(&c);
    cr_assert_null(ds_cubin_kernel(&c, "helper"));
    cr_assert_null(ds_cubin_kernel(&c, "_Z6helperi"));
    cr_assert_null(ds_cubin_kernel(&c, "k_tmpl"), "names stay mangled");
    ds_cubin_free(&c);
    cr_assert_eq(c.nkernels, 0);
    cr_assert_null(c.kernels);
    ds_cubin_free(&c); /* a freed cubin frees again harmlessly */
    ds_cubin_free(NULL);
    free(img);
}

/* The limits a launch is checked against, from kernels/limits.cu: launch bounds
 * (EIATTR_MAX_THREADS), cluster dimensions (EIATTR_CTA_PER_CLUSTER) and the register
 * count of the global .nv.info (EIATTR_REGCOUNT, as ptxas -v reports it). */
Test(cubin, launch_limits_are_read)
{
    size_t len;
    unsigned char *img = slurp(KPATH("limits.cubin"), &len);
    const struct ds_kernel *k;
    struct ds_cubin c;

    cr_assert_eq(ds_cubin_parse(img, len, &c), 0);
    cr_assert_not_null(k = ds_cubin_kernel(&c, "bounded"));
    cr_assert_eq(k->max_threads, 256);
    cr_assert_eq(k->cluster[0], 0);
    cr_assert_not_null(k = ds_cubin_kernel(&c, "heavy"));
    cr_assert_eq(k->max_threads, 0, "no launch bounds");
    cr_assert_eq(k->regs, 128, "ptxas 13.0 -v: 128 registers");
    cr_assert_not_null(k = ds_cubin_kernel(&c, "clustered"));
    cr_assert_eq(k->cluster[0], 2);
    cr_assert_eq(k->cluster[1], 1);
    cr_assert_eq(k->cluster[2], 1);
    cr_assert_not_null(k = ds_cubin_kernel(&c, "plain"));
    cr_assert_eq(k->max_threads, 0);
    cr_assert_gt(k->regs, 0);
    cr_assert_lt(k->regs, 32);
    ds_cubin_free(&c);
    free(img);
}

/* Under -rdc the device function helper() is a global STT_FUNC with its own .text and
 * .nv.info sections; only STO_CUDA_ENTRY tells it from a kernel. */
Test(cubin, device_functions_are_not_kernels)
{
    size_t len;
    unsigned char *img = slurp(KPATH("params_rdc.cubin"), &len);
    struct ds_cubin c;

    cr_assert_eq(ds_cubin_parse(img, len, &c), 0);
    check_expected(&c);
    cr_assert_null(ds_cubin_kernel(&c, "_Z6helperi"));
    ds_cubin_free(&c);
    free(img);
}

Test(cubin, fatbin_gives_the_sm90_cubin)
{
    size_t len;
    unsigned char *img = slurp(KPATH("params.fatbin"), &len);
    struct ds_fatbin_entry e;
    struct ds_cubin c;

    cr_assert_eq(ds_fatbin_find(img, len, 90, DS_IMAGE_ELF, &e), 0);
    cr_assert_eq(e.kind, DS_IMAGE_ELF);
    cr_assert_eq(e.sm, 90);
    cr_assert_eq(e.codec, DS_FATBIN_RAW, "nvcc 13 stores release cubins uncompressed");
    cr_assert((const unsigned char *)e.data > img &&
              (const unsigned char *)e.data + e.len <= img + len);
    cr_assert_eq(ds_cubin_parse(e.data, e.len, &c), 0);
    check_expected(&c);
    ds_cubin_free(&c);

    cr_assert_eq(ds_fatbin_find(img, len, 90, DS_IMAGE_PTX, &e), 0);
    cr_assert_eq(e.kind, DS_IMAGE_PTX);
    cr_assert_eq(e.sm, 90);
    cr_assert_eq(e.codec, DS_FATBIN_ZSTD, "nvcc 13 zstd-compresses PTX by default");

    cr_assert_eq(ds_fatbin_find(img, len, 0, DS_IMAGE_ELF, &e), 0, "any arch");
    cr_assert_eq(e.sm, 90);
    cr_assert_eq(ds_fatbin_find(img, len, 80, DS_IMAGE_ELF, &e), DS_ENOTSUP);
    cr_assert_eq(ds_fatbin_find(img, len, 100, DS_IMAGE_PTX, &e), DS_ENOTSUP);
    cr_assert_eq(ds_fatbin_find(img, len, 90, DS_IMAGE_FATBIN, &e), DS_EINVAL);
    cr_assert_eq(ds_fatbin_find(NULL, len, 90, DS_IMAGE_ELF, &e), DS_EINVAL);
    free(img);
}

Test(cubin, extract_raw_lz4_and_zstd)
{
    size_t rlen, llen, zlen, outlen;
    unsigned char *raw = slurp(KPATH("params_raw.fatbin"), &rlen);
    unsigned char *lz4 = slurp(KPATH("params_lz4.fatbin"), &llen);
    unsigned char *zst = slurp(KPATH("params_zstd.fatbin"), &zlen);
    struct ds_fatbin_entry er, el, ez;
    enum ds_image_kind kind;
    void *out;
    size_t size;

    /* --compress-mode=none: the PTX text itself */
    cr_assert_eq(ds_fatbin_find(raw, rlen, 90, DS_IMAGE_PTX, &er), 0);
    cr_assert_eq(er.codec, DS_FATBIN_RAW);
    cr_assert_eq(ds_image_identify(er.data, er.len, &kind, NULL, &size), 0);
    cr_assert_eq(kind, DS_IMAGE_PTX);

    /* --compress-mode=speed: LZ4, which decodes to the same text */
    cr_assert_eq(ds_fatbin_find(lz4, llen, 90, DS_IMAGE_PTX, &el), 0);
    cr_assert_eq(el.codec, DS_FATBIN_LZ4);
    cr_assert_leq(el.raw_len, er.len);
    cr_assert_eq(ds_fatbin_extract(&el, &out, &outlen), 0);
    cr_assert_eq(outlen, el.raw_len);
    cr_assert_eq(memcmp(out, er.data, outlen), 0);
    free(out);

    /* raw entries extract to a plain copy */
    cr_assert_eq(ds_fatbin_find(raw, rlen, 90, DS_IMAGE_ELF, &er), 0);
    cr_assert_eq(ds_fatbin_extract(&er, &out, &outlen), 0);
    cr_assert_eq(outlen, er.len);
    cr_assert_eq(memcmp(out, er.data, outlen), 0);
    free(out);

    /* --compress-mode=size: zstd, even for the cubin, which decodes to the raw one */
    cr_assert_eq(ds_fatbin_find(zst, zlen, 90, DS_IMAGE_ELF, &ez), 0);
    cr_assert_eq(ez.codec, DS_FATBIN_ZSTD);
    cr_assert_eq(ds_fatbin_extract(&ez, &out, &outlen), 0);
    cr_assert_eq(outlen, ez.raw_len);
    cr_assert_geq(er.len, outlen);
    cr_assert_eq(memcmp(out, er.data, outlen), 0);
    free(out);
    free(raw);
    free(lz4);
    free(zst);
}

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* Append a 64-byte entry header and `size` payload bytes at *pos. */
static void add_entry(unsigned char *buf, size_t *pos, uint16_t kind, uint32_t arch,
                      uint64_t flags, uint64_t size)
{
    unsigned char *h = buf + *pos;

    put16(h, kind);
    put16(h + 2, 0x101);
    put32(h + 4, 64);
    put64(h + 8, size);
    put32(h + 16, (uint32_t)size);
    put32(h + 28, arch);
    put64(h + 40, flags);
    put64(h + 56, size * 2);
    memset(h + 64, (int)arch, size);
    *pos += 64 + size;
}

Test(cubin, fatbin_choice_among_entries)
{
    unsigned char buf[16 + 6 * (64 + 16)] = { 0 };
    size_t pos = 16;
    struct ds_fatbin_entry e;

    put32(buf, DS_FATBIN_MAGIC);
    put16(buf + 4, 1);
    put16(buf + 6, 16);
    add_entry(buf, &pos, 2, 80, 0x11, 16);
    add_entry(buf, &pos, 2, 90, 0x8011, 16);  /* zstd */
    add_entry(buf, &pos, 2, 90, 0x11, 16);    /* raw: preferred */
    add_entry(buf, &pos, 8, 120, 0x11, 16);   /* a kind this code does not know: skipped */
    add_entry(buf, &pos, 1, 100, 0x2011, 16); /* LZ4 PTX */
    add_entry(buf, &pos, 1, 86, 0x11, 16);
    put64(buf + 8, pos - 16);
    cr_assert_eq(pos, sizeof(buf));

    cr_assert_eq(ds_fatbin_find(buf, pos, 90, DS_IMAGE_ELF, &e), 0);
    cr_assert_eq(e.codec, DS_FATBIN_RAW);
    cr_assert_eq(e.data, buf + 16 + 2 * 80 + 64);
    cr_assert_eq(ds_fatbin_find(buf, pos, 0, DS_IMAGE_ELF, &e), 0);
    cr_assert_eq(e.sm, 90);
    cr_assert_eq(e.codec, DS_FATBIN_RAW);
    cr_assert_eq(ds_fatbin_find(buf, pos, 0, DS_IMAGE_PTX, &e), 0);
    cr_assert_eq(e.sm, 100);
    cr_assert_eq(e.codec, DS_FATBIN_LZ4);
    cr_assert_eq(e.len, 16);
    cr_assert_eq(e.raw_len, 32);
    cr_assert_eq(ds_fatbin_find(buf, pos, 120, DS_IMAGE_ELF, &e), DS_ENOTSUP);

    /* both codec flags at once is not a format we know */
    put64(buf + 16 + 40, 0xa011);
    cr_assert_eq(ds_fatbin_find(buf, pos, 90, DS_IMAGE_ELF, &e), DS_EINVAL);
    put64(buf + 16 + 40, 0x11);
    /* an entry header claiming more than the container holds */
    put64(buf + 16 + 8, 4096);
    cr_assert_eq(ds_fatbin_find(buf, pos, 90, DS_IMAGE_ELF, &e), DS_EINVAL);
    put64(buf + 16 + 8, 16);
    put32(buf + 16 + 4, 8); /* header too small to hold its own fields */
    cr_assert_eq(ds_fatbin_find(buf, pos, 90, DS_IMAGE_ELF, &e), DS_EINVAL);
    put32(buf + 16 + 4, 64);
    /* the container's payload size past the buffer */
    cr_assert_eq(ds_fatbin_find(buf, pos - 1, 90, DS_IMAGE_ELF, &e), DS_EINVAL);
}

static int lz4(const unsigned char *block, size_t len, size_t raw_len, void **out,
               size_t *outlen)
{
    struct ds_fatbin_entry e = {
        .kind = DS_IMAGE_PTX, .codec = DS_FATBIN_LZ4, .data = block, .len = len,
        .raw_len = raw_len,
    };

    return ds_fatbin_extract(&e, out, outlen);
}

/* Hand-made LZ4 blocks (format: lz4's doc/lz4_Block_format.md). */
Test(cubin, lz4_blocks)
{
    /* "abc", then a match 3 back of 4+4 bytes (overlapping), then the literal "!" */
    static const unsigned char good[] = { 0x34, 'a', 'b', 'c', 3, 0, 0x10, '!' };
    static const unsigned char off0[] = { 0x34, 'a', 'b', 'c', 0, 0, 0x10, '!' };
    static const unsigned char far[] = { 0x34, 'a', 'b', 'c', 4, 0, 0x10, '!' };
    /* 15 + 255 + 3 literals announced, 3 present */
    static const unsigned char longlit[] = { 0xf0, 255, 3, 'x', 'y', 'z' };
    unsigned char big[3 + 300];
    void *out = NULL;
    size_t outlen = 0, i;
    struct ds_fatbin_entry z = { .codec = DS_FATBIN_ZSTD, .data = good, .len = 8,
                                 .raw_len = 12 };

    cr_assert_eq(lz4(good, sizeof(good), 12, &out, &outlen), 0);
    cr_assert_eq(outlen, 12);
    cr_assert_eq(memcmp(out, "abcabcabcab!", 12), 0);
    free(out);

    cr_assert_eq(lz4(good, sizeof(good), 13, &out, &outlen), DS_EINVAL, "stream too short");
    cr_assert_eq(lz4(good, sizeof(good), 11, &out, &outlen), DS_EINVAL, "stream too long");
    cr_assert_eq(lz4(good, 5, 12, &out, &outlen), DS_EINVAL, "cut inside the offset");
    cr_assert_eq(lz4(off0, sizeof(off0), 12, &out, &outlen), DS_EINVAL);
    cr_assert_eq(lz4(far, sizeof(far), 12, &out, &outlen), DS_EINVAL);
    cr_assert_eq(lz4(longlit, sizeof(longlit), 273, &out, &outlen), DS_EINVAL);
    cr_assert_eq(lz4(good, sizeof(good), 0, &out, &outlen), DS_EINVAL);
    cr_assert_eq(ds_fatbin_extract(&z, &out, &outlen), DS_EINVAL, "not a zstd frame");

    /* a literal run long enough to need the 255-continued length */
    big[0] = 0xf0;
    big[1] = 255;
    big[2] = 300 - 15 - 255;
    for (i = 0; i < 300; i++)
        big[3 + i] = (unsigned char)i;
    cr_assert_eq(lz4(big, sizeof(big), 300, &out, &outlen), 0);
    cr_assert_eq(memcmp(out, big + 3, 300), 0);
    free(out);
}

static size_t find_bytes(const unsigned char *hay, size_t len, const void *needle,
                         size_t nlen, size_t from)
{
    size_t i;

    for (i = from; i + nlen <= len; i++)
        if (memcmp(hay + i, needle, nlen) == 0)
            return i;
    return SIZE_MAX;
}

/* Offset and size of the section called `name` in a (trusted, test-built) ELF64. */
static void section(const unsigned char *img, const char *name, size_t *off, size_t *size)
{
    uint64_t shoff, stroff, v;
    uint16_t shnum, shstrndx;
    size_t i;

    memcpy(&shoff, img + 40, 8);
    memcpy(&shnum, img + 60, 2);
    memcpy(&shstrndx, img + 62, 2);
    memcpy(&stroff, img + shoff + (size_t)shstrndx * 64 + 24, 8);
    for (i = 0; i < shnum; i++) {
        const unsigned char *sh = img + shoff + i * 64;
        uint32_t nameoff;

        memcpy(&nameoff, sh, 4);
        if (strcmp((const char *)img + stroff + nameoff, name) == 0) {
            memcpy(&v, sh + 24, 8);
            *off = (size_t)v;
            memcpy(&v, sh + 32, 8);
            *size = (size_t)v;
            return;
        }
    }
    cr_assert_fail("no section %s", name);
}

/* Where `needle` starts inside section `name`. */
static size_t in_section(const unsigned char *img, const char *name, const void *needle,
                         size_t nlen)
{
    size_t off, size, at;

    section(img, name, &off, &size);
    at = find_bytes(img + off, size, needle, nlen, 0);
    cr_assert_neq(at, SIZE_MAX, "pattern not in %s", name);
    return off + at;
}

Test(cubin, inconsistent_records_are_refused)
{
    /* EIATTR_KPARAM_INFO (SVAL, 12 bytes): index 0, ordinal 0, offset 0, and the word
     * with size 4 in bits 18.. and cbank 0x1f in bits 12..16 */
    static const unsigned char kp[] = { 4, 0x17, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        0x00, 0xf0, 0x11, 0x00 };
    static const unsigned char psize[] = { 3, 0x19, 4, 0 }; /* CBANK_PARAM_SIZE 4 */
    size_t len, at;
    unsigned char *orig = slurp(KPATH("params.cubin"), &len), *img = malloc(len);
    struct ds_cubin c;

    cr_assert_not_null(img);
    memcpy(img, orig, len);
    at = in_section(img, ".nv.info.k_int", kp, sizeof(kp));
    img[at + 8] = 40; /* ordinal 40 of 1 */
    cr_assert_eq(ds_cubin_parse(img, len, &c), DS_EINVAL);
    cr_assert_eq(c.nkernels, 0);
    cr_assert_null(c.kernels);

    memcpy(img, orig, len);
    at = in_section(img, ".nv.info.k_unused", kp, sizeof(kp));
    img[at + 8] = 1; /* two ordinal-1 parameters and no ordinal 0 */
    cr_assert_eq(ds_cubin_parse(img, len, &c), DS_EINVAL);

    memcpy(img, orig, len);
    at = in_section(img, ".nv.info.k_int", psize, sizeof(psize));
    img[at + 2] = 2; /* a 4-byte int in a 2-byte buffer */
    cr_assert_eq(ds_cubin_parse(img, len, &c), DS_EINVAL);

    memcpy(img, orig, len);
    at = in_section(img, ".nv.info.k_int", kp, sizeof(kp));
    img[at] = 9; /* a record format that does not exist */
    cr_assert_eq(ds_cubin_parse(img, len, &c), DS_EINVAL);

    memcpy(img, orig, len);
    at = in_section(img, ".nv.info.k_int", kp, sizeof(kp));
    img[at + 2] = 0xff; /* a record running past its section */
    img[at + 3] = 0x7f;
    cr_assert_eq(ds_cubin_parse(img, len, &c), DS_EINVAL);

    memcpy(img, orig, len);
    img[4] = 1; /* ELFCLASS32 */
    cr_assert_eq(ds_cubin_parse(img, len, &c), DS_ENOTSUP);
    memcpy(img, orig, len);
    img[18] = 62; /* EM_X86_64 */
    cr_assert_eq(ds_cubin_parse(img, len, &c), DS_EINVAL);
    cr_assert_eq(ds_cubin_parse(NULL, len, &c), DS_EINVAL);
    cr_assert_eq(ds_cubin_parse(orig, len, NULL), DS_EINVAL);
    free(img);
    free(orig);
}

static uint32_t rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

Test(cubin, truncated_cubins_fail_or_stay_consistent)
{
    size_t len, n;
    unsigned char *orig = slurp(KPATH("params.cubin"), &len);
    struct ds_cubin c;

    for (n = 0; n < len; n += 3) {
        unsigned char *cut = malloc(n ? n : 1);

        cr_assert_not_null(cut);
        memcpy(cut, orig, n);
        if (ds_cubin_parse(cut, n, &c) == 0) {
            check_consistent(&c);
            ds_cubin_free(&c);
        }
        free(cut);
    }
    free(orig);
}

/* Byte flips aimed at what the parser reads: the ELF header, the section header table
 * and (by chance) the symbol table and .nv.info sections. */
Test(cubin, mutated_cubins_fail_or_stay_consistent)
{
    size_t len, it, shoff, table;
    unsigned char *orig = slurp(KPATH("params.cubin"), &len), *img = malloc(len);
    uint64_t seed = 0xc0b1;
    struct ds_cubin c;

    cr_assert_not_null(img);
    memcpy(&shoff, orig + 40, sizeof(shoff));
    table = (size_t)orig[60] * 64;
    cr_assert_leq(shoff + table, len);
    for (it = 0; it < 4000; it++) {
        unsigned n = 1 + rng(&seed) % 6, k;

        memcpy(img, orig, len);
        for (k = 0; k < n; k++) {
            unsigned where = rng(&seed) % 3;
            size_t at = where == 0 ? rng(&seed) % 64
                      : where == 1 ? shoff + rng(&seed) % table
                                   : rng(&seed) % len;

            img[at] = (unsigned char)rng(&seed);
        }
        if (ds_cubin_parse(img, len, &c) == 0) {
            check_consistent(&c);
            ds_cubin_free(&c);
        }
    }
    free(img);
    free(orig);
}

Test(cubin, mutated_fatbins_fail_cleanly)
{
    static const char *const files[] = { KPATH("params.fatbin"), KPATH("params_lz4.fatbin") };
    uint64_t seed = 0xfa7;
    size_t f, it, len;

    for (f = 0; f < 2; f++) {
        unsigned char *orig = slurp(files[f], &len), *img = malloc(len);

        cr_assert_not_null(img);
        for (it = 0; it < 3000; it++) {
            unsigned n = 1 + rng(&seed) % 6, k;
            struct ds_fatbin_entry e;
            void *out;
            size_t outlen;

            memcpy(img, orig, len);
            for (k = 0; k < n; k++) {
                /* headers live in the first 0x60 bytes; the LZ4 stream follows */
                size_t at = rng(&seed) % 2 ? rng(&seed) % 0x200 : rng(&seed) % len;

                img[at] = (unsigned char)rng(&seed);
            }
            if (ds_fatbin_find(img, len, 0, DS_IMAGE_PTX, &e) == 0) {
                cr_assert((const unsigned char *)e.data >= img &&
                          (const unsigned char *)e.data + e.len <= img + len);
                if (e.raw_len <= (1u << 20) && ds_fatbin_extract(&e, &out, &outlen) == 0)
                    free(out);
            }
            if (ds_fatbin_find(img, len, 90, DS_IMAGE_ELF, &e) == 0 &&
                e.codec == DS_FATBIN_RAW) {
                struct ds_cubin c;

                if (ds_cubin_parse(e.data, e.len, &c) == 0) {
                    check_consistent(&c);
                    ds_cubin_free(&c);
                }
            }
        }
        free(img);
        free(orig);
    }
}

Test(cubin, garbage_is_refused)
{
    uint64_t seed = 7;
    size_t it, k, len;
    struct ds_cubin c;
    struct ds_fatbin_entry e;

    for (it = 0; it < 2000; it++) {
        unsigned char *buf;

        len = 1 + rng(&seed) % 1024;
        buf = malloc(len);
        cr_assert_not_null(buf);
        for (k = 0; k < len; k++)
            buf[k] = (unsigned char)rng(&seed);
        if (len >= 64 && it % 2) {
            /* a plausible ELF header over random tables */
            memcpy(buf, "\177ELF\2\1\1\101\10", 9);
            buf[18] = 190;
            buf[19] = 0;
        }
        if (ds_cubin_parse(buf, len, &c) == 0) {
            check_consistent(&c);
            ds_cubin_free(&c);
        }
        if (len >= 16 && it % 3 == 0) {
            put32(buf, DS_FATBIN_MAGIC);
            put16(buf + 6, 16);
            put64(buf + 8, len - 16);
        }
        (void)ds_fatbin_find(buf, len, 0, DS_IMAGE_ELF, &e);
        free(buf);
    }
}
