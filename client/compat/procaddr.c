#define _GNU_SOURCE /* dladdr */
/* cuGetProcAddress: how the CUDA runtime and frameworks find driver entry points. */
#include "cuda_api.h"
#include "entry_points.h"

#include "ds_log.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

struct entry {
    const char *name;
    int version;
    void *fn;
};

#define EP_ROW(base, ver, sym) { #base, ver, (void *)sym },
static const struct entry entries[] = { DS_ENTRY_POINTS(EP_ROW) };

/* An entry point this library does not implement yet still has an exported stub (see
 * gen-stubs.sh) that returns CUDA_ERROR_NOT_SUPPORTED and logs its name: hand that out,
 * so that a runtime which resolves everything at start-up starts, and fails only when a
 * missing function is really called.  Looked up in this library only, never elsewhere. */
static void *stub_for(const char *symbol)
{
    static void *self;
    Dl_info info;
    void *fn;

    if (self == NULL && dladdr((void *)stub_for, &info) != 0)
        self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (self == NULL || strncmp(symbol, "cu", 2) != 0)
        return NULL;
    fn = dlsym(self, symbol);
    return fn;
}

/* The per-thread default stream is served as the legacy stream (server/exec/tenant.c), so
 * the per-thread flag selects the same functions as the legacy one. */
static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    const struct entry *best = NULL;
    int known = 0;

    if (symbol == NULL || pfn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        if (strcmp(entries[i].name, symbol) != 0)
            continue;
        known = 1;
        if (entries[i].version <= version && (best == NULL || entries[i].version > best->version))
            best = &entries[i];
    }
    *pfn = best ? best->fn : known ? NULL : stub_for(symbol);
    if (status != NULL)
        *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS
                  : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (*pfn == NULL)
        ds_debug("cuGetProcAddress(%s, %d, %llu): not found", symbol, version,
                 (unsigned long long)flags);
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}
