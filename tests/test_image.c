#include "ds_error.h"
#include "ds_image.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Images of tests/kernels/params.cu, built by nvcc at build time (tests/CMakeLists.txt). */
#define KPATH(f) DS_KERNEL_DIR "/" f

/* The whole file in a buffer of exactly its size (plus `extra` zero bytes), so that
 * ASan reports any read past the end. */
static unsigned char *slurp(const char *path, size_t extra, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;

    cr_assert_not_null(f, "cannot open %s (built by the ds_test_kernels target)", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    cr_assert_gt(n, 0);
    rewind(f);
    buf = calloc(1, (size_t)n + extra);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n + extra;
    return buf;
}

static int identify(const void *p, size_t limit, enum ds_image_kind *kind, size_t *size)
{
    const void *image = NULL;
    int rc = ds_image_identify(p, limit, kind, &image, size);

    if (rc == 0)
        cr_assert_eq(image, p, "only a wrapper moves the image start");
    return rc;
}

/* Every proper prefix, each in a buffer of exactly its length, must be refused. */
static void refuse_prefixes(const unsigned char *img, size_t size)
{
    enum ds_image_kind kind;
    size_t n, got;

    for (n = 1; n < size; n++) {
        unsigned char *cut = malloc(n);

        cr_assert_not_null(cut);
        memcpy(cut, img, n);
        cr_assert_eq(identify(cut, n, &kind, &got), DS_EINVAL, "prefix of %zu bytes", n);
        free(cut);
    }
}

Test(image, cubin_is_elf_and_spans_the_file)
{
    size_t len, size = 0;
    enum ds_image_kind kind;
    unsigned char *img = slurp(KPATH("params.cubin"), 0, &len);

    cr_assert_eq(identify(img, len, &kind, &size), 0);
    cr_assert_eq(kind, DS_IMAGE_ELF);
    cr_assert_eq(size, len, "nvcc writes nothing past the ELF's last table or section");
    /* the client's call: no limit at all */
    cr_assert_eq(identify(img, SIZE_MAX, &kind, &size), 0);
    cr_assert_eq(size, len);
    free(img);
}

Test(image, trailing_bytes_are_not_counted)
{
    size_t len, size = 0;
    enum ds_image_kind kind;
    unsigned char *img = slurp(KPATH("params.cubin"), 100, &len);

    cr_assert_eq(identify(img, len, &kind, &size), 0);
    cr_assert_eq(size, len - 100);
    free(img);
}

Test(image, fatbin_container)
{
    size_t len, size = 0;
    enum ds_image_kind kind;
    unsigned char *img = slurp(KPATH("params.fatbin"), 0, &len);

    cr_assert_eq(identify(img, len, &kind, &size), 0);
    cr_assert_eq(kind, DS_IMAGE_FATBIN);
    cr_assert_eq(size, len);
    free(img);
}

Test(image, ptx_counts_its_nul)
{
    size_t len, size = 0;
    enum ds_image_kind kind;
    unsigned char *img = slurp(KPATH("params.ptx"), 1, &len); /* adds the NUL */

    cr_assert_eq(identify(img, len, &kind, &size), 0);
    cr_assert_eq(kind, DS_IMAGE_PTX);
    cr_assert_eq(size, len);
    cr_assert_eq(identify(img, SIZE_MAX, &kind, &size), 0);
    cr_assert_eq(size, len);
    free(img);
}

Test(image, ptx_text_rules)
{
    static const char ok1[] = ".version 9.0\n.target sm_90\n";
    static const char ok2[] = "\n// made by hand\n  /* a\n block */\t.version 8.5\n";
    static const char *const bad[] = {
        "",                             /* nothing */
        "hello world",                  /* not PTX */
        "// only a comment\n",
        "/* never closed .version 8.0",
        ".versions 1.0\n",              /* a different word */
        ".version",                     /* the directive must be followed by its value */
        ".target sm_90\n.version 9.0\n", /* .version must come first */
    };
    enum ds_image_kind kind;
    size_t size, i;

    cr_assert_eq(identify(ok1, sizeof(ok1), &kind, &size), 0);
    cr_assert_eq(kind, DS_IMAGE_PTX);
    cr_assert_eq(size, sizeof(ok1));
    cr_assert_eq(identify(ok2, sizeof(ok2), &kind, &size), 0);
    cr_assert_eq(size, sizeof(ok2));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(identify(bad[i], strlen(bad[i]) + 1, &kind, &size), DS_EINVAL, "%s",
                     bad[i]);
    /* no NUL within the limit */
    cr_assert_eq(identify(ok1, sizeof(ok1) - 1, &kind, &size), DS_EINVAL);
}

/* The struct nvcc emits into .nvFatBinSegment (objdump -s -j .nvFatBinSegment on an
 * object shows magic, version 1, then a relocated pointer to .nv_fatbin). */
struct wrapper {
    uint32_t magic, version;
    const void *data;
    const void *unused;
};

Test(image, wrapper_reports_its_container)
{
    size_t len, size = 0;
    enum ds_image_kind kind;
    const void *image = NULL;
    unsigned char *img = slurp(KPATH("params.fatbin"), 0, &len);
    struct wrapper w = { DS_FATBIN_WRAPPER_MAGIC, 1, img, NULL };

    cr_assert_eq(ds_image_identify(&w, SIZE_MAX, &kind, &image, &size), 0);
    cr_assert_eq(kind, DS_IMAGE_FATBIN);
    cr_assert_eq(image, img);
    cr_assert_eq(size, len);
    w.version = 2;
    cr_assert_eq(ds_image_identify(&w, SIZE_MAX, &kind, &image, &size), 0);

    /* received bytes: the pointer inside means nothing to the server */
    cr_assert_eq(ds_image_identify(&w, sizeof(w), &kind, &image, &size), DS_EINVAL);
    /* a caller that cannot take a different start */
    cr_assert_eq(ds_image_identify(&w, SIZE_MAX, &kind, NULL, &size), DS_EINVAL);
    w.version = 3;
    cr_assert_eq(ds_image_identify(&w, SIZE_MAX, &kind, &image, &size), DS_EINVAL);
    w.version = 1;
    w.data = NULL;
    cr_assert_eq(ds_image_identify(&w, SIZE_MAX, &kind, &image, &size), DS_EINVAL);
    w.data = &w; /* points at something that is not a container */
    cr_assert_eq(ds_image_identify(&w, SIZE_MAX, &kind, &image, &size), DS_EINVAL);
    free(img);
}

Test(image, bad_arguments)
{
    static const char ptx[] = ".version 9.0\n";
    enum ds_image_kind kind;
    const void *image;
    size_t size;

    cr_assert_eq(ds_image_identify(NULL, 10, &kind, &image, &size), DS_EINVAL);
    cr_assert_eq(ds_image_identify(ptx, 0, &kind, &image, &size), DS_EINVAL);
    cr_assert_eq(ds_image_identify(ptx, sizeof(ptx), NULL, &image, &size), DS_EINVAL);
    cr_assert_eq(ds_image_identify(ptx, sizeof(ptx), &kind, &image, NULL), DS_EINVAL);
    cr_assert_eq(ds_image_identify(ptx, sizeof(ptx), &kind, NULL, &size), 0,
                 "image is optional");
}

Test(image, truncated_images_fail_cleanly)
{
    static const char *const files[] = { KPATH("params.cubin"), KPATH("params.fatbin") };
    size_t i, len;

    for (i = 0; i < 2; i++) {
        unsigned char *img = slurp(files[i], 0, &len);

        refuse_prefixes(img, len);
        free(img);
    }
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

/* Corrupt one field of a real image and expect a refusal, not a crash. */
Test(image, corrupt_headers_are_refused)
{
    size_t len, size;
    enum ds_image_kind kind;
    unsigned char *orig = slurp(KPATH("params.cubin"), 0, &len), *img = malloc(len);
    uint64_t shoff;
    struct {
        size_t at, width;
        uint64_t value;
    } elf[] = {
        { 40, 8, UINT64_MAX },          /* e_shoff wraps */
        { 40, 8, 0 },                   /* sections but no table */
        { 32, 8, UINT64_MAX - 8 },      /* e_phoff wraps */
        { 32, 8, 0 },                   /* segments but no table */
        { 58, 2, 8 },                   /* e_shentsize too small to hold a header */
        { 60, 2, 0xfff0 },              /* e_shnum past the end */
        { 56, 2, 0xfffe },              /* e_phnum past the end */
        { 54, 2, 8 },                   /* e_phentsize too small */
        { 5, 1, 2 },                    /* big-endian */
        { 4, 1, 3 },                    /* no such class */
    };
    size_t i;

    cr_assert_not_null(img);
    for (i = 0; i < sizeof(elf) / sizeof(elf[0]); i++) {
        memcpy(img, orig, len);
        if (elf[i].width == 1)
            img[elf[i].at] = (unsigned char)elf[i].value;
        else if (elf[i].width == 2)
            put16(img + elf[i].at, (uint16_t)elf[i].value);
        else
            put64(img + elf[i].at, elf[i].value);
        cr_assert_eq(identify(img, len, &kind, &size), DS_EINVAL, "ELF case %zu", i);
    }

    /* a section whose offset + size wraps, and one that ends past the buffer */
    memcpy(img, orig, len);
    memcpy(&shoff, img + 40, 8);
    put64(img + shoff + 64 + 24, UINT64_MAX - 4);
    cr_assert_eq(identify(img, len, &kind, &size), DS_EINVAL);
    memcpy(img, orig, len);
    put64(img + shoff + 64 + 32, len);
    cr_assert_eq(identify(img, len, &kind, &size), DS_EINVAL);
    free(img);
    free(orig);

    orig = slurp(KPATH("params.fatbin"), 0, &len);
    img = malloc(len);
    cr_assert_not_null(img);
    memcpy(img, orig, len);
    put64(img + 8, UINT64_MAX - 8); /* payload size wraps */
    cr_assert_eq(identify(img, len, &kind, &size), DS_EINVAL);
    memcpy(img, orig, len);
    put16(img + 6, 4); /* header smaller than itself */
    cr_assert_eq(identify(img, len, &kind, &size), DS_EINVAL);
    memcpy(img, orig, len);
    put64(img + 8, len); /* payload one header too long */
    cr_assert_eq(identify(img, len, &kind, &size), DS_EINVAL);
    free(img);
    free(orig);
}

/* ELF32 and the extended section count in section header 0, built by hand: nvcc emits
 * neither, but both are valid ELF. */
Test(image, synthetic_elf_layouts)
{
    unsigned char e32[52 + 16 + 2 * 40 + 16] = { 0x7f, 'E', 'L', 'F', 1, 1, 1 };
    unsigned char e64[64 + 2 * 64 + 32] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
    enum ds_image_kind kind;
    size_t size;

    /* ELF32: the data of section 1 (16 bytes at 52) ends before the table (at 68) */
    put16(e32 + 40, 52);
    put32(e32 + 32, 68);
    put16(e32 + 46, 40);
    put16(e32 + 48, 2);
    put32(e32 + 68 + 40 + 4, 1);  /* PROGBITS */
    put32(e32 + 68 + 40 + 16, 52);
    put32(e32 + 68 + 40 + 20, 16);
    cr_assert_eq(identify(e32, sizeof(e32), &kind, &size), 0);
    cr_assert_eq(size, 68 + 2 * 40);
    put32(e32 + 68 + 40 + 16, 148); /* now the data is last */
    cr_assert_eq(identify(e32, sizeof(e32), &kind, &size), 0);
    cr_assert_eq(size, sizeof(e32));
    put32(e32 + 68 + 40 + 20, 17);
    cr_assert_eq(identify(e32, sizeof(e32), &kind, &size), DS_EINVAL);

    /* ELF64 with e_shnum 0: the count (2) is in section 0's sh_size */
    put16(e64 + 52, 64);
    put64(e64 + 40, 64);
    put16(e64 + 58, 64);
    put64(e64 + 64 + 32, 2);
    put32(e64 + 128 + 4, 1);
    put64(e64 + 128 + 24, 192);
    put64(e64 + 128 + 32, 32);
    cr_assert_eq(identify(e64, sizeof(e64), &kind, &size), 0);
    cr_assert_eq(size, sizeof(e64));
    put64(e64 + 64 + 32, 1u << 30); /* a count no buffer holds */
    cr_assert_eq(identify(e64, sizeof(e64), &kind, &size), DS_EINVAL);
    put64(e64 + 64 + 32, 2);
    put32(e64 + 128 + 4, 8); /* NOBITS occupies no file bytes */
    cr_assert_eq(identify(e64, sizeof(e64), &kind, &size), 0);
    cr_assert_eq(size, 192);
}

/* A small deterministic generator, so a failure replays. */
static uint32_t rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Flip a few bytes, mostly in the headers where lengths live, and check that whatever
 * comes back stays inside the buffer. */
Test(image, mutations_stay_inside_limit)
{
    static const char *const files[] = { KPATH("params.cubin"), KPATH("params.fatbin"),
                                         KPATH("params.ptx") };
    uint64_t seed = 0x5eed;
    size_t f, it, len, size;
    enum ds_image_kind kind;

    for (f = 0; f < 3; f++) {
        unsigned char *orig = slurp(files[f], f == 2, &len);
        unsigned char *img = malloc(len);

        cr_assert_not_null(img);
        for (it = 0; it < 3000; it++) {
            unsigned n = 1 + rng(&seed) % 8, k;

            memcpy(img, orig, len);
            for (k = 0; k < n; k++) {
                size_t at = rng(&seed) % 2 ? rng(&seed) % 64 : rng(&seed) % len;

                img[at] = (unsigned char)rng(&seed);
            }
            if (identify(img, len, &kind, &size) == 0)
                cr_assert_leq(size, len);
        }
        free(img);
        free(orig);
    }
}

Test(image, garbage_is_refused_or_bounded)
{
    uint64_t seed = 42;
    size_t it, len, size, k;
    enum ds_image_kind kind;

    for (it = 0; it < 2000; it++) {
        unsigned char *buf;

        len = 1 + rng(&seed) % 512;
        buf = malloc(len);
        cr_assert_not_null(buf);
        for (k = 0; k < len; k++)
            buf[k] = (unsigned char)rng(&seed);
        /* steer some toward each recogniser */
        if (it % 4 == 1)
            memcpy(buf, "\177ELF", len < 4 ? len : 4);
        else if (it % 4 == 2 && len >= 4)
            put32(buf, DS_FATBIN_MAGIC);
        if (identify(buf, len, &kind, &size) == 0)
            cr_assert_leq(size, len);
        free(buf);
    }
}

Test(image, kind_names)
{
    cr_assert_str_eq(ds_image_kind_name(DS_IMAGE_FATBIN), "fatbin");
    cr_assert_str_eq(ds_image_kind_name(DS_IMAGE_ELF), "elf");
    cr_assert_str_eq(ds_image_kind_name(DS_IMAGE_PTX), "ptx");
    cr_assert_str_eq(ds_image_kind_name((enum ds_image_kind)77), "?");
}
