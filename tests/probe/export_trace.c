/*
 * A probe, not part of detshare: a libcuda.so.1 that forwards everything to the real
 * driver (DS_REAL_LIBCUDA, an absolute path) and logs, to stderr, every call into the
 * export-table slots nobody has documented, with their arguments, result and the bytes
 * the arguments point at.  Run a program natively with LD_LIBRARY_PATH at this library's
 * directory to see how cudart and the CUDA libraries use those slots; what it showed is
 * written up in docs/export-tables.md.
 */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1 /* literal entry-point names, as in client/cuda_api.h */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_SLOTS 100

typedef uintptr_t (*fn6)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

struct traced {
    unsigned char id[16];
    const char *name;
    void *real[MAX_SLOTS];
    void *copy[MAX_SLOTS];
    size_t nslots;
};

static struct traced tables[] = {
    { .id = { 0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9 }, .name = "f8cff951" },
    { .id = { 0x69, 0xa2, 0x8e, 0x9f, 0x24, 0x49, 0x8b, 0x47, 0xb0, 0x30, 0xc5, 0xda, 0x33, 0x0e, 0xa4, 0xe9 }, .name = "69a28e9f" },
    { .id = { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2 }, .name = "21318c60" },
    { .id = { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca }, .name = "1734dc26" },
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

static void *real_driver(void)
{
    static void *h;
    const char *path = getenv("DS_REAL_LIBCUDA");

    if (h == NULL && path != NULL)
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "export_trace: set DS_REAL_LIBCUDA to the real libcuda.so.1\n");
        abort();
    }
    return h;
}

/* Up to 32 bytes at p, if this process may read them. */
static void dump(const char *what, uintptr_t p)
{
    unsigned char b[32];
    struct iovec local = { b, sizeof(b) }, remote = { (void *)p, sizeof(b) };

    if (p < 4096 || process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != sizeof(b))
        return;
    fprintf(stderr, "    %s @%#lx:", what, (unsigned long)p);
    for (size_t i = 0; i < sizeof(b); i++)
        fprintf(stderr, "%s%02x", i % 8 ? "" : " ", b[i]);
    fprintf(stderr, "\n");
}

static uintptr_t traced_call(unsigned t, unsigned slot, uintptr_t a0, uintptr_t a1, uintptr_t a2,
                             uintptr_t a3, uintptr_t a4, uintptr_t a5)
{
    uintptr_t a[6] = { a0, a1, a2, a3, a4, a5 }, r;
    char name[16];

    fprintf(stderr, "export_trace: %s[%u](%#lx, %#lx, %#lx, %#lx, %#lx, %#lx)\n", tables[t].name,
            slot, (unsigned long)a0, (unsigned long)a1, (unsigned long)a2, (unsigned long)a3,
            (unsigned long)a4, (unsigned long)a5);
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "a%d before", i);
        dump(name, a[i]);
    }
    r = ((fn6)tables[t].real[slot])(a0, a1, a2, a3, a4, a5);
    fprintf(stderr, "export_trace: %s[%u] -> %#lx\n", tables[t].name, slot, (unsigned long)r);
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "a%d after", i);
        dump(name, a[i]);
    }
    return r;
}

#define TR(t, s)                                                                        \
    static uintptr_t tr_##t##_##s(uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, \
                                  uintptr_t a4, uintptr_t a5)                           \
    {                                                                                   \
        return traced_call(t, s, a0, a1, a2, a3, a4, a5);                               \
    }
#define TR10(t, d) TR(t, d##0) TR(t, d##1) TR(t, d##2) TR(t, d##3) TR(t, d##4) \
    TR(t, d##5) TR(t, d##6) TR(t, d##7) TR(t, d##8) TR(t, d##9)
#define TRT(t) TR(t, 1) TR(t, 2) TR(t, 3) TR(t, 4) TR(t, 5) TR(t, 6) TR(t, 7) TR(t, 8) \
    TR(t, 9) TR10(t, 1) TR10(t, 2) TR10(t, 3) TR10(t, 4) TR10(t, 5) TR10(t, 6) TR10(t, 7) \
    TR10(t, 8) TR10(t, 9)
TRT(0)
TRT(1)
TRT(2)
TRT(3)

#define P(t, s) (void *)tr_##t##_##s
#define P10(t, d) P(t, d##0), P(t, d##1), P(t, d##2), P(t, d##3), P(t, d##4), P(t, d##5), \
    P(t, d##6), P(t, d##7), P(t, d##8), P(t, d##9)
#define PT(t) { NULL, P(t, 1), P(t, 2), P(t, 3), P(t, 4), P(t, 5), P(t, 6), P(t, 7), P(t, 8), \
    P(t, 9), P10(t, 1), P10(t, 2), P10(t, 3), P10(t, 4), P10(t, 5), P10(t, 6), P10(t, 7), \
    P10(t, 8), P10(t, 9) }
static void *const trampolines[NTABLES][MAX_SLOTS] = { PT(0), PT(1), PT(2), PT(3) };

static CUresult (*real_get_export_table)(const void **, const CUuuid *);

static CUresult traced_get_export_table(const void **out, const CUuuid *id)
{
    CUresult rc = real_get_export_table(out, id);
    void *const *real;

    fprintf(stderr, "export_trace: table %02x%02x%02x%02x requested -> %d\n", id->bytes[0] & 0xff,
            id->bytes[1] & 0xff, id->bytes[2] & 0xff, id->bytes[3] & 0xff, rc);
    if (rc != CUDA_SUCCESS || out == NULL || *out == NULL)
        return rc;
    for (unsigned t = 0; t < NTABLES; t++) {
        struct traced *tb = &tables[t];

        if (memcmp(tb->id, id->bytes, 16) != 0)
            continue;
        real = *out;
        tb->nslots = (uintptr_t)real[0] / sizeof(void *);
        if (tb->nslots > MAX_SLOTS)
            tb->nslots = MAX_SLOTS;
        tb->copy[0] = real[0];
        for (size_t i = 1; i < tb->nslots; i++) {
            tb->real[i] = real[i];
            tb->copy[i] = real[i] ? trampolines[t][i] : NULL;
        }
        fprintf(stderr, "export_trace: table %s served traced, %zu slots\n", tb->name,
                tb->nslots);
        *out = tb->copy;
    }
    return rc;
}

EXPORT CUresult cuGetExportTable(const void **out, const CUuuid *id)
{
    if (real_get_export_table == NULL)
        *(void **)&real_get_export_table = dlsym(real_driver(), "cuGetExportTable");
    return traced_get_export_table(out, id);
}

EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags);

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *st)
{
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    CUresult rc;

    *(void **)&gpa = dlsym(real_driver(), "cuGetProcAddress_v2");
    rc = gpa(sym, pfn, ver, flags, st);
    if (rc == CUDA_SUCCESS && strcmp(sym, "cuGetExportTable") == 0) {
        real_get_export_table = (CUresult(*)(const void **, const CUuuid *))*pfn;
        *pfn = (void *)cuGetExportTable;
    }
    /* cudart looks cuGetProcAddress up through itself, then uses what it got. */
    if (rc == CUDA_SUCCESS && strcmp(sym, "cuGetProcAddress") == 0)
        *pfn = ver >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
    return rc;
}


EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}

/* Every other entry point is an assembly forwarder (forwarders.S) that jumps through a
 * pointer filled here, before anything can call it. */
#define FWD(name) extern void *fwd_##name;
#include "forwarders.h"
#undef FWD

__attribute__((constructor)) static void fill_forwarders(void)
{
    void *h = real_driver();

#define FWD(name) fwd_##name = dlsym(h, #name);
#include "forwarders.h"
#undef FWD
}
