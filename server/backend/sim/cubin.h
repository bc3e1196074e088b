/*
 * Kernels and their parameter layouts, read from a cubin; cubins and PTX found inside a
 * fatbin container.
 *
 * The sim backend has no driver to ask cuKernelGetParamInfo, so it reads the answer from
 * the same place the driver does: each kernel's .nv.info.<kernel> section, a list of
 * EIATTR records, of which EIATTR_KPARAM_INFO(_V2) gives one parameter's ordinal, offset
 * and size and EIATTR_CBANK_PARAM_SIZE / EIATTR_PARAM_CBANK the parameter buffer's size.
 * The same records give the limits a launch is checked against (launch bounds, cluster
 * dimensions, registers per thread).
 * Encodings are written down in cubin.c, beside the code that reads them.
 *
 * All input is untrusted (it comes from a tenant): every offset, count and string is
 * checked against the length given, and malformed input is an error, never a crash.
 */
#ifndef DS_CUBIN_H
#define DS_CUBIN_H

#include "ds_image.h"

#include <stddef.h>
#include <stdint.h>

struct ds_kparam {
    uint32_t ordinal; /* position in the kernel's parameter list, from 0 */
    uint32_t offset;  /* byte offset in the parameter buffer */
    uint32_t size;    /* bytes */
};

struct ds_kernel {
    char *name;               /* symbol name as in the cubin (C++ names stay mangled) */
    uint32_t nparams;
    struct ds_kparam *params; /* nparams entries, params[i].ordinal == i; NULL when 0 */
    uint32_t param_bytes;     /* size of the parameter buffer; >= every offset + size */
    uint32_t max_threads;     /* threads per block __launch_bounds__ allows; 0: no bound */
    uint32_t regs;            /* registers per thread; 0: the cubin does not say */
    uint32_t cluster[3];      /* __cluster_dims__; zeros: none */
};

struct ds_cubin {
    uint32_t nkernels;
    struct ds_kernel *kernels; /* sorted by name (strcmp) */
    int sm;                    /* target architecture from e_flags, e.g. 90 */
};

/*
 * Parse the ELF cubin of `len` bytes at `elf` and list its kernels: STT_FUNC symbols
 * marked as entry points (STO_CUDA_ENTRY), each defined in a section of the cubin.
 * Device functions, even global ones in -rdc cubins, are not listed.  A kernel without
 * a .nv.info.<name> section is listed with no parameters and param_bytes 0.
 *
 * Returns 0 and fills *out, which the caller releases with ds_cubin_free; DS_EINVAL for
 * anything that is not a well-formed 64-bit little-endian CUDA ELF, or whose parameter
 * records are inconsistent (duplicate or missing ordinals, a parameter past the buffer);
 * DS_ENOTSUP for a 32-bit cubin; DS_ENOMEM.  On error *out is zeroed and owns nothing.
 */
int ds_cubin_parse(const void *elf, size_t len, struct ds_cubin *out);

/* Free everything ds_cubin_parse allocated and zero *c.  c may be NULL; freeing a zeroed
 * ds_cubin is a no-op. */
void ds_cubin_free(struct ds_cubin *c);

/*
 * The variable `name` (a __device__ or __constant__ object, STT_OBJECT) of the cubin at
 * elf: its size, and its initial bytes inside elf, or *init = NULL when it starts as
 * zeros.  Returns 0, DS_EHANDLE when there is no such variable, DS_EINVAL for a
 * malformed cubin or symbol.
 */
int ds_cubin_global(const void *elf, size_t len, const char *name, uint64_t *size,
                    const void **init);

/* The kernel named `name` (exact, mangled), or NULL.  Points into c. */
const struct ds_kernel *ds_cubin_kernel(const struct ds_cubin *c, const char *name);

/* How a fatbin entry's payload is stored.  nvcc 13 by default zstd-compresses PTX and
 * stores release cubins raw (-G cubins are compressed too); --compress-mode=speed uses
 * LZ4, as older toolkits did by default. */
enum ds_fatbin_codec { DS_FATBIN_RAW, DS_FATBIN_LZ4, DS_FATBIN_ZSTD };

struct ds_fatbin_entry {
    enum ds_image_kind kind;    /* DS_IMAGE_ELF or DS_IMAGE_PTX */
    int sm;                     /* the entry's architecture, e.g. 90 for sm_90 / compute_90 */
    enum ds_fatbin_codec codec;
    uint64_t flags;             /* the entry header's flag word, as stored */
    const void *data;           /* the stored payload, inside the container */
    size_t len;                 /* bytes at data (raw entries may end in padding) */
    size_t raw_len;             /* bytes once decompressed; == len for DS_FATBIN_RAW */
};

/*
 * Find in the fatbin container at `fatbin` (`len` bytes, only the first container is
 * read) the entry of kind `kind` (DS_IMAGE_ELF for a cubin, DS_IMAGE_PTX) for
 * architecture `sm` (exact match), or, when sm <= 0, the one with the highest
 * architecture.  Among equals, a raw entry wins over LZ4 over zstd, then the first stored.
 * Entries of other kinds are skipped.
 *
 * Returns 0 and fills *out (pointing into fatbin: nothing to free); DS_ENOTSUP when no
 * entry matches; DS_EINVAL for a malformed container or entry.  A compressed entry is
 * returned like any other: check out->codec, and use ds_fatbin_extract for its bytes.
 */
int ds_fatbin_find(const void *fatbin, size_t len, int sm, enum ds_image_kind kind,
                   struct ds_fatbin_entry *out);

/*
 * A malloc'd copy of entry e's image, decompressed when stored with LZ4 or zstd (libzstd);
 * the caller frees *buf.  Returns 0, DS_EINVAL for a corrupt stream or one that does not
 * yield exactly e->raw_len bytes, DS_ENOMEM.
 */
int ds_fatbin_extract(const struct ds_fatbin_entry *e, void **buf, size_t *len);

#endif
