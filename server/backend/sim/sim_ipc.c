/*
 * CUDA IPC on the sim.  Its device memory is host memory of the executor, so what one
 * tenant exports must become memory that another executor can map too.  An allocation's
 * first export moves its bytes into a memfd mapped over the same host range (shared,
 * MAP_FIXED), so nothing else in the sim sees a difference; an interprocess event keeps
 * its one shared word, the host time at which its last recorded work ends, in a memfd
 * page from its creation.
 *
 * Each such memfd is named for a random tag.  The blob of an export says which process
 * holds it, under which descriptor, and the tag; the opening executor, of the same user,
 * opens /proc/PID/fd/FD and takes the file only when its name carries that tag: a process
 * gone or a descriptor since reused for something else gives another name or none, so a
 * stale export opens nothing rather than another tenant's memory.
 *
 * An opened mapping is device memory of the opener like an allocation (an entry of
 * b->mem, owner SIM_IPC_OPEN) and is counted in its device memory as well, for as long as
 * it is open: the exporter may free its allocation meanwhile, as the pages stay while a
 * mapping holds them, and no tenant must be able to hold host memory that none is
 * charged for.
 */
#include "sim_core.h"

#include "ds_error.h"
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* What an export's blob says. */
struct blob {
    int32_t pid, fd;
    uint64_t size;
    uint64_t tag[2];
};

_Static_assert(sizeof(struct blob) <= DS_IPC_BLOB, "a sim export fits a blob");

#define EVENT_PAGE 4096u

static void memfd_name(const uint64_t tag[2], char *out, size_t len)
{
    snprintf(out, len, "detshare-ipc-%016" PRIx64 "%016" PRIx64, tag[0], tag[1]);
}

/* A memfd of size bytes under a fresh tag, in *sh.  Returns 0, or DS_E* with no
 * descriptor left (sh->fd -1). */
static int shared_new(uint64_t size, struct sim_shared *sh)
{
    char name[64];

    sh->fd = -1;
    if (getrandom(sh->tag, sizeof(sh->tag), 0) != (ssize_t)sizeof(sh->tag))
        return DS_EDEVICE;
    memfd_name(sh->tag, name, sizeof(name));
    sh->fd = ds__sim_memfd(name);
    if (sh->fd >= 0 && ftruncate(sh->fd, (off_t)size) != 0) {
        close(sh->fd);
        sh->fd = -1;
    }
    return sh->fd >= 0 ? 0 : DS_ENOMEM;
}

static void to_blob(const struct sim_shared *sh, uint64_t size, unsigned char out[DS_IPC_BLOB])
{
    struct blob bl = { .pid = getpid(), .fd = sh->fd, .size = size,
                       .tag = { sh->tag[0], sh->tag[1] } };

    memset(out, 0, DS_IPC_BLOB);
    memcpy(out, &bl, sizeof(bl));
}

/* Whether descriptor fd is the memfd that bl names: its name carries the tag. */
static int is_tagged(int fd, const struct blob *bl)
{
    char link[64], name[64], want[128], got[128];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    memfd_name(bl->tag, name, sizeof(name));
    snprintf(want, sizeof(want), "/memfd:%s (deleted)", name);
    n = readlink(link, got, sizeof(got) - 1);
    if (n < 0)
        return 0;
    got[n] = '\0';
    return strcmp(got, want) == 0;
}

/* Map the size bytes of the memfd that blob names, shared, in *map.  Returns 0,
 * DS_EHANDLE when it is gone (or was never there), or DS_ECU(CUDA_ERROR_MAP_FAILED) when
 * this process may not reach it. */
static int reach(const unsigned char blob[DS_IPC_BLOB], uint64_t size, void **map)
{
    struct blob bl;
    struct stat st;
    char path[64];
    int fd, rc = 0;

    memcpy(&bl, blob, sizeof(bl));
    if (bl.size != size || bl.pid <= 0 || bl.fd < 0)
        return DS_EHANDLE;
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)bl.pid, (int)bl.fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH ? DS_EHANDLE : DS_ECU(CUDA_ERROR_MAP_FAILED);
    if (!is_tagged(fd, &bl) || fstat(fd, &st) != 0 || (uint64_t)st.st_size != size)
        rc = DS_EHANDLE;
    if (rc == 0) {
        *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        rc = *map == MAP_FAILED ? DS_ECU(CUDA_ERROR_MAP_FAILED) : 0;
    }
    close(fd);
    return rc;
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

/* Move allocation [host, host+size) into a new memfd mapped over the same range.  Pages
 * of zeros are not written: the memfd's holes read as zeros and cost nothing. */
static int share(unsigned char *host, uint64_t size, struct sim_shared *sh)
{
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    int rc = shared_new(size, sh);

    for (uint64_t off = 0; rc == 0 && off < size; off += page) {
        size_t n = (size_t)(size - off < page ? size - off : page);

        if (!all_zero(host + off, n) && pwrite(sh->fd, host + off, n, (off_t)off) != (ssize_t)n)
            rc = DS_ENOMEM;
    }
    if (rc == 0 && mmap(host, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, sh->fd, 0) ==
                       MAP_FAILED)
        rc = DS_ENOMEM;
    if (rc != 0 && sh->fd >= 0)
        close(sh->fd);
    return rc;
}

int ds__sim_ipc_mem_export(struct ds_backend *b, uint64_t addr, uint64_t size,
                           unsigned char blob[DS_IPC_BLOB])
{
    const struct ds_memtab_entry *x = ds_memtab_find(&b->ipc_out, addr, 0);
    struct ds_memtab_entry e = { .base = addr, .size = size };
    struct sim_shared *sh;
    int rc;

    if (x != NULL) {
        to_blob(x->data, size, blob);
        return 0;
    }
    sh = malloc(sizeof(*sh));
    if (sh == NULL)
        return DS_ENOMEM;
    rc = share(ds__sim_host_of(b, addr), size, sh);
    e.data = sh;
    if (rc == 0 && (rc = ds_memtab_insert(&b->ipc_out, &e)) != 0)
        close(sh->fd);
    if (rc != 0) {
        free(sh);
        return rc;
    }
    to_blob(sh, size, blob);
    return 0;
}

void ds__sim_ipc_unshare(struct ds_backend *b, uint64_t addr)
{
    struct ds_memtab_entry x;
    struct sim_shared *sh;

    if (ds_memtab_remove(&b->ipc_out, addr, &x) != 0)
        return;
    sh = x.data;
    close(sh->fd);
    free(sh);
}

void ds__sim_ipc_fini(struct ds_backend *b)
{
    while (b->ipc_out.n > 0)
        ds__sim_ipc_unshare(b, b->ipc_out.v[0].base);
    ds_memtab_destroy(&b->ipc_out);
}

/* At an address of the opener's own region; flags (peer access) mean nothing with one
 * device. */
int ds__sim_ipc_mem_open(struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],
                         uint64_t size, unsigned flags, uint64_t *addr)
{
    struct ds_memtab_entry e = { .size = size, .owner = SIM_IPC_OPEN };
    int rc;

    (void)flags;
    if (ds_shm_sim_reserve(b->cfg.shm, b->cfg.slot, size) != 0)
        return DS_ENOMEM;
    rc = ds_memtab_first_fit(&b->mem, b->va_base, b->va_end, size, SIM_VA_ALIGN, &e.base);
    if (rc == 0)
        rc = reach(blob, size, &e.data);
    if (rc == 0 && (rc = ds_memtab_insert(&b->mem, &e)) != 0)
        munmap(e.data, size);
    if (rc != 0) {
        ds_shm_sim_release(b->cfg.shm, b->cfg.slot, size);
        return rc;
    }
    *addr = e.base;
    return 0;
}

void ds__sim_ipc_mem_close(struct ds_backend *b, uint64_t addr)
{
    struct ds_memtab_entry e;

    if (ds_memtab_remove(&b->mem, addr, &e) != 0)
        return;
    munmap(e.data, e.size);
    ds_shm_sim_release(b->cfg.shm, b->cfg.slot, e.size);
}

/* The event's shared word, in the first bytes of a page of memfd fd. */
static int map_event(int fd, struct ds_bevent *e)
{
    void *p = mmap(NULL, EVENT_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

    if (p == MAP_FAILED)
        return DS_ENOMEM;
    e->shared = p;
    return 0;
}

int ds__sim_ipc_event_init(struct ds_bevent *e)
{
    struct sim_shared *sh = malloc(sizeof(*sh));
    int rc = sh != NULL ? shared_new(EVENT_PAGE, sh) : DS_ENOMEM;

    if (rc == 0 && (rc = map_event(sh->fd, e)) != 0)
        close(sh->fd);
    if (rc != 0) {
        free(sh);
        return rc;
    }
    e->own = sh;
    return 0;
}

void ds__sim_ipc_event_fini(struct ds_bevent *e)
{
    if (e->shared != NULL)
        munmap((void *)e->shared, EVENT_PAGE);
    if (e->own != NULL) {
        close(e->own->fd);
        free(e->own);
    }
}

int ds__sim_ipc_event_export(struct ds_backend *b, struct ds_bevent *e,
                             unsigned char blob[DS_IPC_BLOB])
{
    (void)b;
    if (e->own == NULL)
        return DS_EHANDLE;
    to_blob(e->own, EVENT_PAGE, blob);
    return 0;
}

/* An opened event is an interprocess event without timing, as in CUDA. */
int ds__sim_ipc_event_open(struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],
                           struct ds_bevent **out)
{
    struct ds_bevent *e;
    void *page;
    int rc;

    (void)b;
    /* A driver may refuse an event made under another MPS daemon: so may the sim, for
     * what copes with that to be tested. */
    if (getenv("DETSHARE_SIM_NO_IPC_EVENTS") != NULL)
        return DS_ECU(CUDA_ERROR_NOT_SUPPORTED);
    if ((e = calloc(1, sizeof(*e))) == NULL)
        return DS_ENOMEM;
    rc = reach(blob, EVENT_PAGE, &page);
    if (rc != 0) {
        free(e);
        return rc;
    }
    e->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    e->shared = page;
    *out = e;
    return 0;
}
