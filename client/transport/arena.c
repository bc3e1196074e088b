#define _GNU_SOURCE /* memfd_create, MADV_REMOVE */
#include "arena.h"

#include "ds_arena.h"
#include "ds_memtab.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ds_memtab pieces;     /* what ds__arena_take handed out */
static unsigned char *arena;        /* NULL without one */
static int arena_fd = -1;           /* kept to map arena pages over registered ranges */

/* Where the arena is asked to go: far below where mmap and the CUDA driver put things
 * (near the top of the address space), so that the executor, whose address space holds
 * the driver's reservations, likely finds the same range free (ds__arena_base).  A hint
 * only: elsewhere works, just without the shared address. */
#define ARENA_HINT 0x500000000000ull

int ds__arena_create(void)
{
    int fd = memfd_create("detshare-host", MFD_CLOEXEC);
    void *p;

    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)DS_ARENA_SIZE) != 0 ||
        (p = mmap((void *)ARENA_HINT, DS_ARENA_SIZE, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_NORESERVE, fd, 0)) == MAP_FAILED) {
        close(fd);
        return -1;
    }
    arena = p;
    arena_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    return fd;
}

int ds__arena_fd(void)
{
    return arena_fd;
}

uint64_t ds__arena_base(void)
{
    return (uint64_t)(uintptr_t)arena;
}

int ds__arena_holds(const void *p)
{
    return arena != NULL && (const unsigned char *)p >= arena &&
           (const unsigned char *)p < arena + DS_ARENA_SIZE;
}

/* First fit, whole pages. */
void *ds__arena_take(size_t size)
{
    uint64_t base = (uint64_t)(uintptr_t)arena;
    struct ds_memtab_entry e = { .size = size };
    void *p = NULL;

    if (arena == NULL)
        return NULL;
    pthread_mutex_lock(&lock);
    if (ds_memtab_first_fit(&pieces, base, base + DS_ARENA_SIZE, (size + 4095) & ~(size_t)4095,
                            4096, &e.base) == 0 &&
        ds_memtab_insert(&pieces, &e) == 0)
        p = (void *)(uintptr_t)e.base;
    pthread_mutex_unlock(&lock);
    return p;
}

void ds__arena_give(void *p)
{
    struct ds_memtab_entry e;
    int rc;

    pthread_mutex_lock(&lock);
    rc = ds_memtab_remove(&pieces, (uint64_t)(uintptr_t)p, &e);
    pthread_mutex_unlock(&lock);
    if (rc == 0)
        madvise(p, (e.size + 4095) & ~(size_t)4095, MADV_REMOVE);
}

int ds__arena_offset(const void *p, size_t n, uint64_t *offset)
{
    const struct ds_memtab_entry *e;
    uint64_t a = (uint64_t)(uintptr_t)p;
    int inside = 0;

    if (!ds__arena_holds(p))
        return 0;
    pthread_mutex_lock(&lock);
    e = ds_memtab_find(&pieces, a, 0);
    if (e != NULL && n <= e->size - (a - e->base)) {
        *offset = a - (uint64_t)(uintptr_t)arena;
        inside = 1;
    }
    pthread_mutex_unlock(&lock);
    return inside;
}
