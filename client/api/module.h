/* What the client knows of each kernel: its server handle, parameter layout and the
 * attributes read so far (they change only through this process's cuFuncSetAttribute). */
#ifndef DS_MODULE_H
#define DS_MODULE_H

#include "detshare.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

struct ds_cfunc {
    uint32_t magic;
    uint64_t handle; /* the executor's */
    uint64_t module;
    char *name; /* as the tenant asked for it */
    uint32_t nparams;
    uint32_t *offset, *size; /* one allocation: size == offset + nparams */
    uint32_t param_bytes;
    uint64_t attr_known; /* bit a: attr[a] holds CUfunction_attribute a */
    int attr[DS_FUNC_ATTRS];
    uint64_t set_known;  /* bit a: attribute a was last set, successfully, to set_to[a] */
    int set_to[DS_FUNC_ATTRS];
    struct ds_cfunc *next;
};

/* The function behind a CUfunction or CUkernel value, or NULL when it is none of ours. */
struct ds_cfunc *ds__module_func(const void *f);

/* Attribute attr (a CUfunction_attribute) of f in *value: what the client keeps, else
 * asked of the executor and kept until cuFuncSetAttribute changes what it bounds.
 * Returns what cuFuncGetAttribute returns. */
CUresult ds__module_attr(struct ds_cfunc *f, int attr, int *value);

/* Attributes attrs[0..n) of f into out[0..n) (-1 for one that cannot be learnt), taking
 * the client's lock once: what every launch is checked against (launchcheck.h), so a
 * launch costs one lock, not one per attribute.  Those not kept yet are asked of the
 * executor, once. */
void ds__module_attrs(struct ds_cfunc *f, const int *attrs, int n, long long *out);

/* The loaded function the executor knows as `handle`, or NULL. */
struct ds_cfunc *ds__module_func_of(uint64_t handle);

/* Every kernel of `module`, as cuModuleGetFunction hands it out, in a malloc'd array of
 * *count (NULL when there are none). */
CUresult ds__module_kernels(CUmodule module, CUfunction **out, unsigned *count);

/* The whole file at path in a malloc'd buffer with a NUL after its *len bytes (so that
 * PTX text is recognised), or NULL when it cannot be read. */
void *ds__module_read_file(const char *path, size_t *len);

#endif
