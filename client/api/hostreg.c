#define _GNU_SOURCE /* mremap, process_vm_readv */
/*
 * Registered host memory.  CUDA registers whole pages, so a range's pages move onto the
 * arena with the bytes around the range that share them, which belong to the program
 * and are copied along.  Moving is a copy then a mapping over the same addresses, so a
 * write by another thread to those pages during cuMemHostRegister or cuMemHostUnregister
 * may be lost (docs/memory.md).  Unregistering moves the pages back to private memory; a
 * forked child gets private copies too (as it would of ordinary pages), since the arena
 * is shared with the parent.
 */
#include "cuda_api.h"
#include "hostreg.h"

#include "arena.h"
#include "ctx.h"
#include "ds_arena.h"
#include "ds_memtab.h"
#include "mem.h"
#include "rpc.h"
#include "unsupported.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE 4096ull

/* One registration: its pages [start, start+len), and the arena pages behind them
 * (NULL for a remote tenant, whose pages stay where they were). */
struct reg {
    uint64_t start, len;
    unsigned char *back;
    uint64_t dev; /* the device address of start; 0 when there is none */
    unsigned flags;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ds_memtab regs;  /* the ranges as given: data = struct reg */
static struct ds_memtab pages; /* the same, by whole pages */
static _Atomic(ds_hostreg_pinned_fn) pinned_hook;

#define ALL_FLAGS                                                                        \
    (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |                        \
     CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)

/* The registration holding [p, p+n) (n 0: holding p), or NULL; with the lock held. */
static const struct reg *holding(uint64_t p, uint64_t n)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&regs, p, n);

    return e != NULL ? e->data : NULL;
}

int ds__hostreg_arena(const void *p, size_t n, void **on_arena)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    const struct reg *g;
    int found = 0;

    pthread_mutex_lock(&lock);
    g = holding(a, n);
    if (g != NULL && g->back != NULL) {
        *on_arena = g->back + (a - g->start);
        found = 1;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

int ds__hostreg_range(uint64_t p, uint64_t *base, uint64_t *size)
{
    const struct ds_memtab_entry *e;

    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&regs, p, 0);
    if (e != NULL) {
        *base = e->base;
        *size = e->size;
    }
    pthread_mutex_unlock(&lock);
    return e != NULL;
}

int ds__hostreg_device(const void *p, uint64_t *dev, CUresult *rc)
{
    static atomic_int once;
    uint64_t a = (uint64_t)(uintptr_t)p;
    const struct reg *g;

    pthread_mutex_lock(&lock);
    g = holding(a, 0);
    *dev = g != NULL && g->dev != 0 ? g->dev + (a - g->start) : 0;
    pthread_mutex_unlock(&lock);
    if (g != NULL && rc != NULL)
        *rc = *dev != 0 ? CUDA_SUCCESS
                        : ds__unsupported("cuMemHostGetDevicePointer of registered memory "
                                          "without a Unix-socket connection", &once);
    return g != NULL;
}

int ds__hostreg_flags(const void *p, unsigned *flags)
{
    const struct reg *g;

    pthread_mutex_lock(&lock);
    g = holding((uint64_t)(uintptr_t)p, 0);
    if (g != NULL)
        *flags = g->flags;
    pthread_mutex_unlock(&lock);
    return g != NULL;
}

/* Copy the pages' bytes to the arena.  process_vm_readv reports pages that cannot be
 * read instead of faulting; where it is not allowed, mincore at least refuses pages
 * that are not mapped. */
static int copy_in(const struct reg *g)
{
    struct iovec to = { g->back, g->len }, from = { (void *)(uintptr_t)g->start, g->len };
    ssize_t n = process_vm_readv(getpid(), &to, 1, &from, 1, 0);
    unsigned char *vec;
    int rc;

    if (n == (ssize_t)g->len)
        return 0;
    if (n >= 0 || (errno != ENOSYS && errno != EPERM))
        return -1;
    if ((vec = malloc(g->len / PAGE)) == NULL)
        return -1;
    rc = mincore((void *)(uintptr_t)g->start, g->len, vec);
    free(vec);
    if (rc == 0)
        memcpy(g->back, (void *)(uintptr_t)g->start, g->len);
    return rc;
}

/* Put the pages back on private memory, their bytes kept; 0 or -1 (then they stay on
 * the arena, still the program's).  The bytes are read through the arena's view of the
 * pages: the program's view holds bytes a sanitizer's allocator keeps out of bounds. */
static int move_out(const struct reg *g)
{
    void *at = (void *)(uintptr_t)g->start;
    void *tmp = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (tmp == MAP_FAILED)
        return -1;
    memcpy(tmp, g->back, g->len);
    if (mremap(tmp, g->len, g->len, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED) {
        munmap(tmp, g->len);
        return -1;
    }
    return 0;
}

/* Move the pages onto the arena and have the executor give them to the device. */
static CUresult move_in(struct reg *g)
{
    ds_host_register_args a = { .size = g->len, .addr = g->start, .flags = g->flags };
    ds_alloc_res r;
    CUresult rc;

    g->back = ds__arena_take(g->len);
    if (g->back == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a.offset = (uint64_t)(uintptr_t)g->back - ds__arena_base();
    if (copy_in(g) != 0) {
        ds__arena_give(g->back);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (mmap((void *)(uintptr_t)g->start, g->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
             ds__arena_fd(), (off_t)a.offset) == MAP_FAILED) {
        ds__arena_give(g->back);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rc = ds_rpc_host_register(&a, &r);
    if (rc != CUDA_SUCCESS) {
        if (move_out(g) == 0)
            ds__arena_give(g->back);
        return rc;
    }
    g->dev = r.ds_alloc_res_u.ptr;
    return CUDA_SUCCESS;
}

void ds__hostreg_on_pinned(ds_hostreg_pinned_fn fn)
{
    atomic_store(&pinned_hook, fn);
}

/* Pages of the arena, pinned and managed memory, are registered already. */
static int registered_already(uint64_t start, uint64_t len)
{
    uint64_t base = ds__arena_base();
    ds_hostreg_pinned_fn is_pinned;
    unsigned flags;

    if (base != 0 && start < base + DS_ARENA_SIZE && base < start + len)
        return 1;
    is_pinned = atomic_load(&pinned_hook);
    return (is_pinned != NULL && is_pinned((void *)(uintptr_t)start, &flags)) ||
           ds__hostreg_flags((void *)(uintptr_t)start, &flags);
}

static CUresult add(uint64_t p, uint64_t size, struct reg *g)
{
    struct ds_memtab_entry byte = { .base = p, .size = size, .data = g };
    struct ds_memtab_entry page = { .base = g->start, .size = g->len, .data = g };
    CUresult rc = CUDA_SUCCESS;

    if (ds_memtab_overlap(&pages, g->start, g->len) != NULL)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    if (ds__arena_fd() >= 0 && (rc = move_in(g)) != CUDA_SUCCESS)
        return rc;
    if (ds_memtab_insert(&regs, &byte) != 0 || ds_memtab_insert(&pages, &page) != 0) {
        ds_memtab_remove(&regs, p, NULL);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (g->dev != 0)
        ds__mem_remember(g->dev + (p - g->start), size);
    return CUDA_SUCCESS;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

/* The child has no connection (rpc.c): its registrations end, and its pages become its
 * own, as a fork leaves ordinary pages. */
static void atfork_child(void)
{
    for (size_t i = 0; i < regs.n; i++) {
        struct reg *g = regs.v[i].data;

        if (g->back != NULL)
            move_out(g);
        free(g);
    }
    ds_memtab_destroy(&regs);
    ds_memtab_destroy(&pages);
    ds_memtab_init(&regs);
    ds_memtab_init(&pages);
    pthread_mutex_unlock(&lock);
}

static void register_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* The refusals CUDA itself makes, and the ones detshare must: I/O memory is the tenant
 * machine's device registers, which the executor cannot map; read-only registration
 * only where the device says it has it. */
static CUresult refused(unsigned flags)
{
    static atomic_int io_once, ro_once;
    const ds_device_desc *d = ds__rpc_device(ds__route_current());
    unsigned ro = CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED;

    if (flags & CU_MEMHOSTREGISTER_IOMEMORY)
        return ds__unsupported("cuMemHostRegister of I/O memory (CU_MEMHOSTREGISTER_IOMEMORY)",
                               &io_once);
    if ((flags & CU_MEMHOSTREGISTER_READ_ONLY) &&
        (ro >= d->attrs.attrs_len || d->attrs.attrs_val[ro] == 0))
        return ds__unsupported("cuMemHostRegister with CU_MEMHOSTREGISTER_READ_ONLY on a device "
                               "without READ_ONLY_HOST_REGISTER_SUPPORTED", &ro_once);
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned int flags)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    uint64_t a = (uint64_t)(uintptr_t)p, ctx;
    struct reg *g;
    CUresult rc;

    DS_NEED_INIT();
    if (p == NULL || size == 0 || (flags & ~(unsigned)ALL_FLAGS) != 0 ||
        size > UINT64_MAX - PAGE - a)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = refused(flags)) != CUDA_SUCCESS || (rc = ds__ctx_current(&ctx)) != CUDA_SUCCESS)
        return rc;
    if ((g = calloc(1, sizeof(*g))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->start = a & ~(PAGE - 1);
    g->len = ((a + size + PAGE - 1) & ~(PAGE - 1)) - g->start;
    g->flags = flags;
    if (registered_already(g->start, g->len)) {
        free(g);
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    pthread_once(&once, register_atfork);
    pthread_mutex_lock(&lock);
    rc = add(a, size, g);
    pthread_mutex_unlock(&lock);
    if (rc != CUDA_SUCCESS)
        free(g);
    return rc;
}

CUresult cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
    return cuMemHostRegister_v2(p, size, flags);
}

/* The executor lets go of the pages first, so the device never reaches pages that are
 * no longer the arena's. */
CUresult cuMemHostUnregister(void *p)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    const struct ds_memtab_entry *e;
    struct reg *g;
    ds_void_res r;

    DS_NEED_INIT();
    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&regs, a, 0);
    if (e == NULL || e->base != a) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    g = e->data;
    if (g->back != NULL) {
        ds_host_map_args m = { .offset = (uint64_t)(uintptr_t)g->back - ds__arena_base(),
                               .size = g->len };

        ds_rpc_host_unmap(&m, &r);
        if (move_out(g) == 0)
            ds__arena_give(g->back);
    }
    if (g->dev != 0)
        ds__mem_drop(g->dev + (a - g->start));
    ds_memtab_remove(&regs, a, NULL);
    ds_memtab_remove(&pages, g->start, NULL);
    pthread_mutex_unlock(&lock);
    free(g);
    return CUDA_SUCCESS;
}

int ds__hostreg_arena_offset(const void *p, size_t n, uint64_t *offset)
{
    void *on_arena;

    if (ds__arena_base() != 0 && !ds__arena_holds(p) && ds__hostreg_arena(p, n, &on_arena))
        p = on_arena;
    return ds__arena_offset(p, n, offset);
}
