#include "ds_image.h"

#include "ds_error.h"

#include <stdbool.h>
#include <string.h>

/* Byte-wise little-endian reads: received buffers have no alignment guarantee. */
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

/* Does [off, off+len) fit in [0, cap)?  Written so that nothing can overflow. */
static bool fits(uint64_t off, uint64_t len, size_t cap)
{
    return off <= cap && len <= cap - off;
}

static size_t cap_of(size_t limit)
{
    return limit < DS_IMAGE_MAX ? limit : DS_IMAGE_MAX;
}

static int fatbin_size(const unsigned char *p, size_t cap, size_t *size)
{
    uint16_t hsize;
    uint64_t payload;

    if (cap < DS_FATBIN_HEADER_MIN || rd32(p) != DS_FATBIN_MAGIC)
        return DS_EINVAL;
    hsize = rd16(p + 6);
    payload = rd64(p + 8);
    if (hsize < DS_FATBIN_HEADER_MIN || !fits(hsize, payload, cap))
        return DS_EINVAL;
    *size = (size_t)(hsize + payload);
    return 0;
}

/* The fields of an ELF file header and of its section and program headers that decide
 * the extent, at their ELF32 / ELF64 offsets. */
struct elf_layout {
    size_t ehsize;                     /* fixed file-header size of the class */
    size_t phoff, shoff, ehsize_field, phentsize, phnum, shentsize, shnum;
    size_t sh_min, sh_type, sh_offset, sh_size, sh_info;
    size_t ph_min, p_offset, p_filesz;
    bool wide;                         /* 8-byte addresses and offsets */
};

static const struct elf_layout elf64 = {
    .ehsize = 64, .phoff = 32, .shoff = 40, .ehsize_field = 52, .phentsize = 54, .phnum = 56,
    .shentsize = 58, .shnum = 60,
    .sh_min = 64, .sh_type = 4, .sh_offset = 24, .sh_size = 32, .sh_info = 44,
    .ph_min = 56, .p_offset = 8, .p_filesz = 32, .wide = true,
};
static const struct elf_layout elf32 = {
    .ehsize = 52, .phoff = 28, .shoff = 32, .ehsize_field = 40, .phentsize = 42, .phnum = 44,
    .shentsize = 46, .shnum = 48,
    .sh_min = 40, .sh_type = 4, .sh_offset = 16, .sh_size = 20, .sh_info = 28,
    .ph_min = 32, .p_offset = 4, .p_filesz = 16, .wide = false,
};

static uint64_t rdw(const struct elf_layout *l, const unsigned char *p)
{
    return l->wide ? rd64(p) : rd32(p);
}

#define SHT_NULL_ 0
#define SHT_NOBITS_ 8
#define PN_XNUM_ 0xffff

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static int elf_size(const unsigned char *p, size_t cap, size_t *size)
{
    const struct elf_layout *l;
    uint64_t phoff, shoff, phnum, shnum, phent, shent, end, i;

    if (cap < 16 || memcmp(p, "\177ELF", 4) != 0)
        return DS_EINVAL;
    if (p[5] != 1) /* every CUDA target is little-endian */
        return DS_EINVAL;
    if (p[4] == 2)
        l = &elf64;
    else if (p[4] == 1)
        l = &elf32;
    else
        return DS_EINVAL;
    if (cap < l->ehsize)
        return DS_EINVAL;

    phoff = rdw(l, p + l->phoff);
    shoff = rdw(l, p + l->shoff);
    phent = rd16(p + l->phentsize);
    phnum = rd16(p + l->phnum);
    shent = rd16(p + l->shentsize);
    shnum = rd16(p + l->shnum);
    end = max64(l->ehsize, rd16(p + l->ehsize_field));

    /* Extended numbering: more than 0xff00 sections (or 0xffff segments) keeps the real
     * counts in section header 0. */
    if (shoff != 0 && (shnum == 0 || phnum == PN_XNUM_)) {
        if (shent < l->sh_min || !fits(shoff, shent, cap))
            return DS_EINVAL;
        if (shnum == 0)
            shnum = rdw(l, p + shoff + l->sh_size);
        if (phnum == PN_XNUM_)
            phnum = rd32(p + shoff + l->sh_info);
    }

    if (shnum > 0) {
        if (shoff == 0 || shent < l->sh_min || shnum > cap / shent ||
            !fits(shoff, shnum * shent, cap))
            return DS_EINVAL;
        end = max64(end, shoff + shnum * shent);
        for (i = 0; i < shnum; i++) {
            const unsigned char *sh = p + shoff + i * shent;
            uint32_t type = rd32(sh + l->sh_type);
            uint64_t off = rdw(l, sh + l->sh_offset), sz = rdw(l, sh + l->sh_size);

            if (type == SHT_NULL_ || type == SHT_NOBITS_ || sz == 0)
                continue;
            if (!fits(off, sz, cap))
                return DS_EINVAL;
            end = max64(end, off + sz);
        }
    }

    if (phnum > 0) {
        if (phoff == 0 || phent < l->ph_min || phnum > cap / phent ||
            !fits(phoff, phnum * phent, cap))
            return DS_EINVAL;
        end = max64(end, phoff + phnum * phent);
        for (i = 0; i < phnum; i++) {
            const unsigned char *ph = p + phoff + i * phent;
            uint64_t off = rdw(l, ph + l->p_offset), sz = rdw(l, ph + l->p_filesz);

            if (sz == 0)
                continue;
            if (!fits(off, sz, cap))
                return DS_EINVAL;
            end = max64(end, off + sz);
        }
    }

    if (end > cap)
        return DS_EINVAL;
    *size = (size_t)end;
    return 0;
}

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* PTX must begin with .version, after any white space and comments (PTX ISA, "Module
 * Directives").  Checking that is what tells PTX from arbitrary bytes that happen to
 * contain a NUL. */
static bool ptx_starts_right(const unsigned char *s, size_t n)
{
    static const char dir[] = ".version";
    size_t i = 0;

    while (i < n) {
        if (is_space(s[i])) {
            i++;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
            for (i += 2; i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'); i++)
                ;
            if (i + 1 >= n)
                return false;
            i += 2;
        } else {
            break;
        }
    }
    return n - i > sizeof(dir) - 1 && memcmp(s + i, dir, sizeof(dir) - 1) == 0 &&
           is_space(s[i + sizeof(dir) - 1]);
}

static int ptx_size(const unsigned char *p, size_t cap, size_t *size)
{
    const unsigned char *nul = memchr(p, 0, cap);

    if (nul == NULL || !ptx_starts_right(p, (size_t)(nul - p)))
        return DS_EINVAL;
    *size = (size_t)(nul - p) + 1;
    return 0;
}

static int wrapper_target(const unsigned char *p, size_t limit, const void **image,
                          size_t *size)
{
    uint32_t version;
    const void *target;

    /* magic, version, then the container pointer at offset 8 */
    if (limit != SIZE_MAX || image == NULL)
        return DS_EINVAL;
    version = rd32(p + 4);
    if (version != 1 && version != 2)
        return DS_EINVAL;
    memcpy(&target, p + 8, sizeof(target));
    if (target == NULL || fatbin_size(target, DS_IMAGE_MAX, size) != 0)
        return DS_EINVAL;
    *image = target;
    return 0;
}

int ds_image_identify(const void *p, size_t limit, enum ds_image_kind *kind,
                      const void **image, size_t *size)
{
    const unsigned char *b = p;
    size_t cap = cap_of(limit), n = 0;
    int rc;

    if (p == NULL || kind == NULL || size == NULL || limit == 0)
        return DS_EINVAL;
    /* Look at the first byte before reading a 4-byte magic, so that a short PTX string
     * is never read past its NUL. */
    if (b[0] == 0x7f) {
        *kind = DS_IMAGE_ELF;
        rc = elf_size(b, cap, &n);
    } else if (b[0] == (DS_FATBIN_MAGIC & 0xff) && cap >= 4 && rd32(b) == DS_FATBIN_MAGIC) {
        *kind = DS_IMAGE_FATBIN;
        rc = fatbin_size(b, cap, &n);
    } else if (b[0] == (DS_FATBIN_WRAPPER_MAGIC & 0xff) && cap >= 16 &&
               rd32(b) == DS_FATBIN_WRAPPER_MAGIC) {
        *kind = DS_IMAGE_FATBIN;
        return wrapper_target(b, limit, image, size);
    } else {
        *kind = DS_IMAGE_PTX;
        rc = ptx_size(b, cap, &n);
    }
    if (rc != 0)
        return rc;
    if (image != NULL)
        *image = p;
    *size = n;
    return 0;
}

const char *ds_image_kind_name(enum ds_image_kind kind)
{
    switch (kind) {
    case DS_IMAGE_FATBIN:
        return "fatbin";
    case DS_IMAGE_ELF:
        return "elf";
    case DS_IMAGE_PTX:
        return "ptx";
    }
    return "?";
}
