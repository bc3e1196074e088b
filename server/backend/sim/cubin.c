#include "cubin.h"

#include "ds_error.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/*
 * Encodings, as read from cubins built by nvcc 13.0 and checked against the decoding
 * that `cuobjdump -elf` prints for them (tests/test_cubin.c has the details).
 *
 * ELF: 64-bit, little-endian, e_machine EM_CUDA (190).  The architecture is in e_flags:
 * bits 8..15 in the current ABI (EI_ABIVERSION 8, EI_OSABI 0x41: sm_90 -> 0x6005a04),
 * bits 0..7 in the older one (EI_OSABI 0x33).  Kernels are STT_FUNC symbols whose
 * st_other has STO_CUDA_ENTRY (0x10); device functions lack it.  A kernel's attributes
 * are in section ".nv.info.<kernel>" whose sh_info is the kernel's .text section.
 *
 * .nv.info records: u8 format, u8 attribute, then by format
 *   EIFMT_NVAL 1, EIFMT_BVAL 2, EIFMT_HVAL 3: a u16 (zero, byte, half) - 4 bytes in all;
 *   EIFMT_SVAL 4: u16 payload length, then the payload.
 * Attributes read here (all others are skipped by their length):
 *   EIATTR_PARAM_CBANK      0x0a SVAL: u32 symbol, u16 offset in the bank, u16 size
 *   EIATTR_KPARAM_INFO      0x17 SVAL: u32 index, u16 ordinal, u16 offset, u32 word:
 *                           size in bits 18..31, bank bits 12..16, space bits 8..11,
 *                           log2 pointee alignment bits 0..7
 *   EIATTR_CBANK_PARAM_SIZE 0x19 HVAL: parameter buffer size
 *   EIATTR_KPARAM_INFO_V2   0x45 SVAL: u32 index, u16 ordinal, u16 offset, u16 size,
 *                           u8 log2 pointee alignment, u8 space; ptxas uses it when the
 *                           parameters pass 4 KiB, where V1's 14-bit size runs out.
 *   EIATTR_MAX_THREADS      0x05 SVAL: u32 x, y, z of __launch_bounds__ (.maxntid)
 *   EIATTR_CTA_PER_CLUSTER  0x3d SVAL: u32 x, y, z of __cluster_dims__
 * and, in the section ".nv.info" that belongs to no kernel (sh_info 0):
 *   EIATTR_REGCOUNT         0x2f SVAL: u32 symbol index, u32 registers per thread
 * (nvcc 13 leaves the register count out of the .text section's sh_info, where older
 * toolkits put it).
 *
 * Fatbin entry header (after the container's 16-byte header; entries follow each other):
 *   +0 u16 kind (1 PTX, 2 ELF)   +2 u16 version   +4 u32 header size   +8 u64 payload size
 *   +16 u32 compressed size      +24 u16 minor, u16 major   +28 u32 arch (90)
 *   +32 u32 name offset, u32 name length   +40 u64 flags   +56 u64 decompressed size
 * flags: 0x1 64-bit, 0x2 debug, 0x10 Linux, 0x2000 LZ4, 0x8000 zstd.
 */

#define EM_CUDA 190
#define SHT_SYMTAB 2
#define SHT_NOBITS 8
#define SHT_SYMTAB_SHNDX 18
#define SHN_LORESERVE 0xff00
#define SHN_XINDEX 0xffff
#define STT_OBJECT 1
#define STT_FUNC 2
#define STO_CUDA_ENTRY 0x10
#define SYM_SIZE 24
#define SHDR_SIZE 64

#define EIFMT_NVAL 1
#define EIFMT_BVAL 2
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4
#define EIATTR_MAX_THREADS 0x05
#define EIATTR_PARAM_CBANK 0x0a
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_CBANK_PARAM_SIZE 0x19
#define EIATTR_REGCOUNT 0x2f
#define EIATTR_CTA_PER_CLUSTER 0x3d
#define EIATTR_KPARAM_INFO_V2 0x45
#define KPARAM_REC 12

#define FATBIN_KIND_PTX 1
#define FATBIN_KIND_ELF 2
#define FATBIN_ENTRY_MIN 64
#define FATBIN_LZ4 0x2000u
#define FATBIN_ZSTD 0x8000u

static const char info_prefix[] = ".nv.info.";
static const char global_info[] = ".nv.info";

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static bool fits(uint64_t off, uint64_t len, size_t total)
{
    return off <= total && len <= total - off;
}

/* A cubin whose section header table has been checked to lie inside it. */
struct elf {
    const unsigned char *p;
    size_t len;
    uint64_t shoff;
    uint32_t shnum;
    uint16_t shent;
    uint32_t shstrndx;
};

static const unsigned char *shdr(const struct elf *e, uint32_t i)
{
    return e->p + e->shoff + (uint64_t)i * e->shent;
}

static uint32_t sh_type(const struct elf *e, uint32_t i)
{
    return rd32(shdr(e, i) + 4);
}

static uint32_t sh_link(const struct elf *e, uint32_t i)
{
    return rd32(shdr(e, i) + 40);
}

static uint32_t sh_info(const struct elf *e, uint32_t i)
{
    return rd32(shdr(e, i) + 44);
}

/* Section i's bytes, or NULL when they do not lie inside the file (or it has none). */
static const unsigned char *sh_data(const struct elf *e, uint32_t i, size_t *len)
{
    uint64_t off = rd64(shdr(e, i) + 24), size = rd64(shdr(e, i) + 32);

    if (sh_type(e, i) == SHT_NOBITS || !fits(off, size, e->len))
        return NULL;
    *len = (size_t)size;
    return e->p + off;
}

/* The NUL-terminated string at `off` of string section `sec`, or NULL when it is not
 * terminated inside that section. */
static const char *str_at(const struct elf *e, uint32_t sec, uint32_t off)
{
    size_t len;
    const unsigned char *s = sec < e->shnum ? sh_data(e, sec, &len) : NULL;

    if (s == NULL || off >= len || memchr(s + off, 0, len - off) == NULL)
        return NULL;
    return (const char *)s + off;
}

static const char *sh_name(const struct elf *e, uint32_t i)
{
    return str_at(e, e->shstrndx, rd32(shdr(e, i)));
}

static int elf_open(const void *p, size_t len, struct elf *e, int *sm)
{
    const unsigned char *b = p;
    uint64_t shnum;
    uint32_t flags;

    if (p == NULL || len < 64 || memcmp(b, "\177ELF", 4) != 0 || b[5] != 1)
        return DS_EINVAL;
    if (b[4] == 1)
        return DS_ENOTSUP;
    if (b[4] != 2 || rd16(b + 18) != EM_CUDA)
        return DS_EINVAL;
    flags = rd32(b + 48);
    *sm = (int)(b[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff);

    e->p = b;
    e->len = len;
    e->shoff = rd64(b + 40);
    e->shent = rd16(b + 58);
    shnum = rd16(b + 60);
    e->shstrndx = rd16(b + 62);
    if (e->shoff == 0 || e->shent < SHDR_SIZE || !fits(e->shoff, e->shent, len))
        return DS_EINVAL;
    /* Extended numbering: the real counts live in section header 0. */
    if (shnum == 0)
        shnum = rd64(b + e->shoff + 32);
    if (e->shstrndx == SHN_XINDEX)
        e->shstrndx = rd32(b + e->shoff + 40);
    if (shnum == 0 || shnum > len / e->shent || !fits(e->shoff, shnum * e->shent, len) ||
        e->shstrndx >= shnum)
        return DS_EINVAL;
    e->shnum = (uint32_t)shnum;
    return 0;
}

/* The symbol table, its string table and its extended section indices (may be NULL). */
struct symtab {
    const unsigned char *syms;
    size_t nsyms;
    uint32_t strsec;
    const unsigned char *xindex;
    size_t nxindex;
};

static int find_symtab(const struct elf *e, struct symtab *st)
{
    uint32_t i, sec = 0;
    size_t len;

    memset(st, 0, sizeof(*st));
    for (i = 1; i < e->shnum && sec == 0; i++)
        if (sh_type(e, i) == SHT_SYMTAB)
            sec = i;
    if (sec == 0)
        return 0; /* nothing to export: no kernels */
    st->syms = sh_data(e, sec, &len);
    if (st->syms == NULL || rd64(shdr(e, sec) + 56) != SYM_SIZE)
        return DS_EINVAL;
    st->nsyms = len / SYM_SIZE;
    st->strsec = sh_link(e, sec);
    if (st->strsec == 0 || st->strsec >= e->shnum)
        return DS_EINVAL;
    for (i = 1; i < e->shnum; i++) {
        if (sh_type(e, i) == SHT_SYMTAB_SHNDX && sh_link(e, i) == sec) {
            st->xindex = sh_data(e, i, &len);
            if (st->xindex == NULL)
                return DS_EINVAL;
            st->nxindex = len / 4;
        }
    }
    return 0;
}

/* Section index of symbol k, or 0 when it has none we can use. */
static uint32_t sym_section(const struct symtab *st, size_t k)
{
    uint16_t shndx = rd16(st->syms + k * SYM_SIZE + 6);

    if (shndx == SHN_XINDEX)
        return k < st->nxindex ? rd32(st->xindex + 4 * k) : 0;
    return shndx >= SHN_LORESERVE ? 0 : shndx;
}

/* One EIATTR record: where its value starts and how long it is. */
struct eirec {
    uint8_t fmt, attr;
    const unsigned char *val;
    uint16_t len;
};

/* Step to the record at *pos of an .nv.info section.  Returns 1 with *r filled, 0 at the
 * end, DS_EINVAL for an unknown format or a record running past the section. */
static int next_record(const unsigned char *s, size_t len, size_t *pos, struct eirec *r)
{
    size_t at = *pos;

    if (at == len)
        return 0;
    if (len - at < 4)
        return DS_EINVAL;
    r->fmt = s[at];
    r->attr = s[at + 1];
    switch (r->fmt) {
    case EIFMT_NVAL:
    case EIFMT_BVAL:
    case EIFMT_HVAL:
        r->val = s + at + 2;
        r->len = 2;
        *pos = at + 4;
        return 1;
    case EIFMT_SVAL:
        r->len = rd16(s + at + 2);
        if (len - at - 4 < r->len)
            return DS_EINVAL;
        r->val = s + at + 4;
        *pos = at + 4 + r->len;
        return 1;
    }
    return DS_EINVAL;
}

static bool is_kparam(const struct eirec *r)
{
    return r->fmt == EIFMT_SVAL &&
           (r->attr == EIATTR_KPARAM_INFO || r->attr == EIATTR_KPARAM_INFO_V2);
}

static void decode_kparam(const struct eirec *r, struct ds_kparam *kp)
{
    uint32_t word = rd32(r->val + 8);

    kp->ordinal = rd16(r->val + 4);
    kp->offset = rd16(r->val + 6);
    kp->size = r->attr == EIATTR_KPARAM_INFO ? word >> 18 : (word & 0xffff);
}

/* The launch limits a kernel was compiled with, from one record of its .nv.info. */
static void read_limit(const struct eirec *r, struct ds_kernel *k)
{
    uint64_t threads;

    if (r->fmt != EIFMT_SVAL || r->len < 12)
        return;
    if (r->attr == EIATTR_MAX_THREADS) {
        threads = (uint64_t)rd32(r->val) * rd32(r->val + 4) * rd32(r->val + 8);
        k->max_threads = threads > UINT32_MAX ? UINT32_MAX : (uint32_t)threads;
    } else if (r->attr == EIATTR_CTA_PER_CLUSTER) {
        for (int i = 0; i < 3; i++)
            k->cluster[i] = rd32(r->val + 4 * i);
    }
}

/* Fill k's parameters and launch limits from its .nv.info section s. */
static int read_params(const unsigned char *s, size_t len, struct ds_kernel *k)
{
    struct eirec r;
    size_t pos = 0;
    uint32_t n = 0, i, end = 0, size_attr = UINT32_MAX, cbank_attr = UINT32_MAX;
    int rc;

    while ((rc = next_record(s, len, &pos, &r)) == 1)
        if (is_kparam(&r))
            n++;
    if (rc < 0)
        return rc;
    if (n > 0) {
        k->params = calloc(n, sizeof(*k->params));
        if (k->params == NULL)
            return DS_ENOMEM;
        for (i = 0; i < n; i++)
            k->params[i].ordinal = UINT32_MAX; /* marks an empty slot */
    }
    k->nparams = n;

    pos = 0;
    while (next_record(s, len, &pos, &r) == 1) {
        struct ds_kparam kp;

        if (is_kparam(&r)) {
            if (r.len < KPARAM_REC)
                return DS_EINVAL;
            decode_kparam(&r, &kp);
            /* n records into n slots, each ordinal below n and used once: exactly 0..n-1 */
            if (kp.ordinal >= n || k->params[kp.ordinal].ordinal != UINT32_MAX)
                return DS_EINVAL;
            k->params[kp.ordinal] = kp;
            if (kp.offset + kp.size > end)
                end = kp.offset + kp.size;
        } else if (r.attr == EIATTR_CBANK_PARAM_SIZE && r.fmt == EIFMT_HVAL) {
            size_attr = rd16(r.val);
        } else if (r.attr == EIATTR_PARAM_CBANK && r.fmt == EIFMT_SVAL && r.len >= 8) {
            cbank_attr = rd16(r.val + 6);
        } else {
            read_limit(&r, k);
        }
    }
    /* Both attributes carry the buffer size (they agree in every cubin seen); a kernel
     * without parameters has neither. */
    if (size_attr != UINT32_MAX)
        k->param_bytes = size_attr;
    else
        k->param_bytes = cbank_attr != UINT32_MAX ? cbank_attr : end;
    return end > k->param_bytes ? DS_EINVAL : 0;
}

static void free_kernel(struct ds_kernel *k)
{
    free(k->name);
    free(k->params);
}

void ds_cubin_free(struct ds_cubin *c)
{
    uint32_t i;

    if (c == NULL)
        return;
    for (i = 0; i < c->nkernels; i++)
        free_kernel(&c->kernels[i]);
    free(c->kernels);
    memset(c, 0, sizeof(*c));
}

/* For each .text section, the .nv.info.<kernel> section that describes it (0: none). */
static int index_info(const struct elf *e, uint32_t **out)
{
    uint32_t *info = calloc(e->shnum, sizeof(*info)), i;

    if (info == NULL)
        return DS_ENOMEM;
    for (i = 1; i < e->shnum; i++) {
        const char *name = sh_name(e, i);

        if (name != NULL && strncmp(name, info_prefix, sizeof(info_prefix) - 1) == 0 &&
            sh_info(e, i) < e->shnum)
            info[sh_info(e, i)] = i;
    }
    *out = info;
    return 0;
}

/* Registers per thread of each symbol, from the EIATTR_REGCOUNT records of the global
 * .nv.info section (0 where none is recorded), in a calloc'd array of nsyms entries. */
static int index_regs(const struct elf *e, size_t nsyms, uint32_t **out)
{
    uint32_t *regs = calloc(nsyms ? nsyms : 1, sizeof(*regs)), i;
    const unsigned char *s;
    struct eirec r;
    size_t len, pos;
    int rc = 0;

    if (regs == NULL)
        return DS_ENOMEM;
    for (i = 1; i < e->shnum && rc >= 0; i++) {
        const char *name = sh_name(e, i);

        if (name == NULL || strcmp(name, global_info) != 0 || sh_info(e, i) != 0 ||
            (s = sh_data(e, i, &len)) == NULL)
            continue;
        pos = 0;
        while ((rc = next_record(s, len, &pos, &r)) == 1)
            if (r.attr == EIATTR_REGCOUNT && r.fmt == EIFMT_SVAL && r.len >= 8 &&
                rd32(r.val) < nsyms)
                regs[rd32(r.val)] = rd32(r.val + 4);
    }
    if (rc < 0) {
        free(regs);
        return rc;
    }
    *out = regs;
    return 0;
}

/* Build kernel k from symbol `name` in section `text`. */
static int make_kernel(const struct elf *e, const uint32_t *info, uint32_t text,
                       const char *name, struct ds_kernel *k)
{
    uint32_t isec = info[text];
    const char *iname;
    const unsigned char *s;
    size_t len;

    k->name = strdup(name);
    if (k->name == NULL)
        return DS_ENOMEM;
    if (isec == 0)
        return 0;
    iname = sh_name(e, isec);
    /* sh_info ties the section to the code; the name must agree, or it is not ours */
    if (iname == NULL || strcmp(iname + sizeof(info_prefix) - 1, name) != 0)
        return 0;
    s = sh_data(e, isec, &len);
    if (s == NULL)
        return DS_EINVAL;
    return read_params(s, len, k);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct ds_kernel *)a)->name, ((const struct ds_kernel *)b)->name);
}

static bool is_kernel_sym(const struct elf *e, const struct symtab *st, size_t k,
                          uint32_t *text, const char **name)
{
    const unsigned char *sym = st->syms + k * SYM_SIZE;

    if ((sym[4] & 0xf) != STT_FUNC || (sym[5] & STO_CUDA_ENTRY) == 0)
        return false;
    *text = sym_section(st, k);
    *name = str_at(e, st->strsec, rd32(sym));
    return *text != 0 && *text < e->shnum && *name != NULL && **name != '\0';
}

int ds_cubin_parse(const void *elf, size_t len, struct ds_cubin *out)
{
    struct elf e;
    struct symtab st;
    uint32_t *info = NULL, *regs = NULL, text;
    const char *name;
    size_t k, n = 0;
    int rc, sm = 0;

    if (out == NULL)
        return DS_EINVAL;
    memset(out, 0, sizeof(*out));
    if ((rc = elf_open(elf, len, &e, &sm)) != 0 || (rc = find_symtab(&e, &st)) != 0)
        return rc;
    out->sm = sm;
    for (k = 0; k < st.nsyms; k++)
        if (is_kernel_sym(&e, &st, k, &text, &name))
            n++;
    if (n == 0)
        return 0;
    if ((rc = index_info(&e, &info)) != 0 || (rc = index_regs(&e, st.nsyms, &regs)) != 0)
        goto fail;
    out->kernels = calloc(n, sizeof(*out->kernels));
    if (out->kernels == NULL) {
        rc = DS_ENOMEM;
        goto fail;
    }
    for (k = 0; k < st.nsyms; k++) {
        if (!is_kernel_sym(&e, &st, k, &text, &name))
            continue;
        /* counted before make_kernel so that a failure frees what it allocated */
        rc = make_kernel(&e, info, text, name, &out->kernels[out->nkernels++]);
        if (rc != 0)
            goto fail;
        out->kernels[out->nkernels - 1].regs = regs[k];
    }
    free(info);
    free(regs);
    qsort(out->kernels, out->nkernels, sizeof(*out->kernels), by_name);
    return 0;

fail:
    free(info);
    free(regs);
    ds_cubin_free(out);
    return rc;
}

int ds_cubin_global(const void *elf, size_t len, const char *name, uint64_t *size,
                    const void **init)
{
    struct elf e;
    struct symtab st;
    int rc, sm;

    if (name == NULL || size == NULL || init == NULL)
        return DS_EINVAL;
    if ((rc = elf_open(elf, len, &e, &sm)) != 0 || (rc = find_symtab(&e, &st)) != 0)
        return rc;
    for (size_t k = 0; k < st.nsyms; k++) {
        const unsigned char *sym = st.syms + k * SYM_SIZE;
        const char *sname = str_at(&e, st.strsec, rd32(sym));
        uint32_t sec = sym_section(&st, k);
        uint64_t value = rd64(sym + 8), bytes = rd64(sym + 16);
        const unsigned char *data;
        size_t dlen;

        if ((sym[4] & 0xf) != STT_OBJECT || sname == NULL || strcmp(sname, name) != 0)
            continue;
        if (sec == 0 || sec >= e.shnum || bytes == 0)
            return DS_EINVAL;
        *size = bytes;
        *init = NULL;
        /* Initialised variables have their bytes in the section, at the symbol's value;
         * uninitialised ones live in a NOBITS section and start as zeros. */
        if (sh_type(&e, sec) != SHT_NOBITS) {
            data = sh_data(&e, sec, &dlen);
            if (data == NULL || !fits(value, bytes, dlen))
                return DS_EINVAL;
            *init = data + value;
        }
        return 0;
    }
    return DS_EHANDLE;
}

const struct ds_kernel *ds_cubin_kernel(const struct ds_cubin *c, const char *name)
{
    struct ds_kernel key = { .name = (char *)name };

    if (c == NULL || name == NULL || c->nkernels == 0)
        return NULL;
    return bsearch(&key, c->kernels, c->nkernels, sizeof(*c->kernels), by_name);
}

/* ---- fatbin ---- */

static int entry_codec(uint64_t flags, enum ds_fatbin_codec *codec)
{
    bool lz4 = (flags & FATBIN_LZ4) != 0, zstd = (flags & FATBIN_ZSTD) != 0;

    if (lz4 && zstd)
        return DS_EINVAL;
    *codec = lz4 ? DS_FATBIN_LZ4 : zstd ? DS_FATBIN_ZSTD : DS_FATBIN_RAW;
    return 0;
}

/* Decode the entry header at h (hsize bytes, then `size` payload bytes, all checked to
 * be inside the container). */
static int read_entry(const unsigned char *h, uint32_t hsize, uint64_t size,
                      struct ds_fatbin_entry *e)
{
    uint16_t kind = rd16(h);
    uint64_t raw;
    int rc;

    memset(e, 0, sizeof(*e));
    e->kind = kind == FATBIN_KIND_PTX ? DS_IMAGE_PTX : DS_IMAGE_ELF;
    e->sm = (int)(rd32(h + 28) & 0xffff); /* 90 for sm_90 and sm_90a alike */
    e->flags = rd64(h + 40);
    if ((rc = entry_codec(e->flags, &e->codec)) != 0)
        return rc;
    e->data = h + hsize;
    if (e->codec == DS_FATBIN_RAW) {
        e->len = e->raw_len = (size_t)size;
        return 0;
    }
    /* compressed: the stream may be shorter than the (padded) payload */
    e->len = rd32(h + 16);
    raw = rd64(h + 56);
    if (e->len == 0 || e->len > size || raw == 0 || raw > DS_IMAGE_MAX)
        return DS_EINVAL;
    e->raw_len = (size_t)raw;
    return 0;
}

/* Is a better than b for the request?  Higher arch first when any arch will do, then
 * the cheapest codec; ties keep the earlier entry. */
static bool better(const struct ds_fatbin_entry *a, const struct ds_fatbin_entry *b,
                   int sm)
{
    if (sm <= 0 && a->sm != b->sm)
        return a->sm > b->sm;
    return a->codec < b->codec;
}

int ds_fatbin_find(const void *fatbin, size_t len, int sm, enum ds_image_kind kind,
                   struct ds_fatbin_entry *out)
{
    const unsigned char *b = fatbin;
    struct ds_fatbin_entry cur, best;
    uint64_t pos, end;
    uint16_t chsize;
    bool found = false;
    int rc;

    if (fatbin == NULL || out == NULL || (kind != DS_IMAGE_ELF && kind != DS_IMAGE_PTX))
        return DS_EINVAL;
    if (len < DS_FATBIN_HEADER_MIN || rd32(b) != DS_FATBIN_MAGIC)
        return DS_EINVAL;
    chsize = rd16(b + 6);
    if (chsize < DS_FATBIN_HEADER_MIN || !fits(chsize, rd64(b + 8), len))
        return DS_EINVAL;
    end = chsize + rd64(b + 8);

    for (pos = chsize; pos < end;) {
        const unsigned char *h = b + pos;
        uint32_t hsize;
        uint64_t size;
        uint16_t ekind;

        if (end - pos < FATBIN_ENTRY_MIN)
            return DS_EINVAL;
        ekind = rd16(h);
        hsize = rd32(h + 4);
        size = rd64(h + 8);
        if (hsize < FATBIN_ENTRY_MIN || hsize > end - pos || size > end - pos - hsize)
            return DS_EINVAL;
        pos += hsize + size;
        if (ekind != FATBIN_KIND_PTX && ekind != FATBIN_KIND_ELF)
            continue;
        if ((rc = read_entry(h, hsize, size, &cur)) != 0)
            return rc;
        if (cur.kind != kind || (sm > 0 && cur.sm != sm))
            continue;
        if (!found || better(&cur, &best, sm))
            best = cur;
        found = true;
    }
    if (!found)
        return DS_ENOTSUP;
    *out = best;
    return 0;
}

/* Decode one LZ4 block (the format of lz4's doc/lz4_Block_format.md) into exactly
 * outlen bytes.  Every length is checked before it is used. */
static int lz4_block(const unsigned char *in, size_t inlen, unsigned char *out,
                     size_t outlen)
{
    size_t ip = 0, op = 0;

    for (;;) {
        size_t lit, mlen, off;
        unsigned token;

        if (ip >= inlen)
            return DS_EINVAL;
        token = in[ip++];
        lit = token >> 4;
        if (lit == 15) {
            unsigned char more;

            do {
                if (ip >= inlen || lit > outlen)
                    return DS_EINVAL;
                more = in[ip++];
                lit += more;
            } while (more == 255);
        }
        if (lit > inlen - ip || lit > outlen - op)
            return DS_EINVAL;
        memcpy(out + op, in + ip, lit);
        ip += lit;
        op += lit;
        /* the last sequence is literals only; anything after it is padding */
        if (op == outlen)
            return 0;
        if (inlen - ip < 2)
            return DS_EINVAL;
        off = rd16(in + ip);
        ip += 2;
        if (off == 0 || off > op)
            return DS_EINVAL;
        mlen = token & 15;
        if (mlen == 15) {
            unsigned char more;

            do {
                if (ip >= inlen || mlen > outlen)
                    return DS_EINVAL;
                more = in[ip++];
                mlen += more;
            } while (more == 255);
        }
        mlen += 4;
        if (mlen > outlen - op)
            return DS_EINVAL;
        /* byte by byte: a match may overlap the bytes it produces */
        for (; mlen > 0; mlen--, op++)
            out[op] = out[op - off];
    }
}

/* One zstd frame, possibly followed by the entry's padding, that must decode to exactly
 * want bytes.  nvcc 13 stores PTX and the cubins of NVIDIA's libraries (cuBLAS among
 * them) this way. */
static int zstd_frame(const void *src, size_t len, unsigned char *out, size_t want)
{
    size_t frame = ZSTD_findFrameCompressedSize(src, len), got;

    if (ZSTD_isError(frame))
        return DS_EINVAL;
    got = ZSTD_decompress(out, want, src, frame);
    return !ZSTD_isError(got) && got == want ? 0 : DS_EINVAL;
}

int ds_fatbin_extract(const struct ds_fatbin_entry *e, void **buf, size_t *len)
{
    unsigned char *out;
    int rc = 0;

    if (e == NULL || buf == NULL || len == NULL || e->data == NULL)
        return DS_EINVAL;
    if (e->raw_len == 0 || e->raw_len > DS_IMAGE_MAX)
        return DS_EINVAL;
    out = malloc(e->raw_len);
    if (out == NULL)
        return DS_ENOMEM;
    if (e->codec == DS_FATBIN_RAW)
        memcpy(out, e->data, e->raw_len);
    else if (e->codec == DS_FATBIN_LZ4)
        rc = lz4_block(e->data, e->len, out, e->raw_len);
    else
        rc = zstd_frame(e->data, e->len, out, e->raw_len);
    if (rc != 0) {
        free(out);
        return rc;
    }
    *buf = out;
    *len = e->raw_len;
    return 0;
}
