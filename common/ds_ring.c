#define _GNU_SOURCE
#include "ds_ring.h"

#include "ds_error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HDR_SIZE 4096u
#define SEALS (F_SEAL_SHRINK | F_SEAL_SEAL)

/* head, tail and the sleep flag each on their own cache line: the two sides write
 * different ones, and sharing a line would make every store a miss for the other. */
struct ds_ring_hdr {
    alignas(64) _Atomic uint64_t head;
    alignas(64) _Atomic uint64_t tail;
    alignas(64) atomic_uint sleeping;
};

_Static_assert(sizeof(struct ds_ring_hdr) <= HDR_SIZE, "ring header outgrew its page");

static size_t pad8(size_t n)
{
    return (n + 7u) & ~(size_t)7u;
}

/* Map the header page, then the data area twice in a row. */
static int map_twice(struct ds_ring *r, int memfd, size_t size)
{
    size_t len = HDR_SIZE + 2 * size;
    unsigned char *base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (base == MAP_FAILED)
        return DS_EIO;
    if (mmap(base, HDR_SIZE + size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd, 0) ==
            MAP_FAILED ||
        mmap(base + HDR_SIZE + size, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd,
             HDR_SIZE) == MAP_FAILED) {
        munmap(base, len);
        return DS_EIO;
    }
    r->hdr = (struct ds_ring_hdr *)base;
    r->data = base + HDR_SIZE;
    r->size = size;
    r->map_len = len;
    r->head = r->tail = 0;
    return 0;
}

int ds_ring_create(struct ds_ring *r, size_t size, int *memfd)
{
    int fd = memfd_create("detshare-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);

    memset(r, 0, sizeof(*r));
    r->bell = -1;
    if (fd < 0)
        return DS_EIO;
    if (size == 0 || (size & (size - 1)) != 0 || size % HDR_SIZE != 0 ||
        ftruncate(fd, (off_t)(HDR_SIZE + size)) != 0 || fcntl(fd, F_ADD_SEALS, SEALS) != 0 ||
        map_twice(r, fd, size) != 0) {
        close(fd);
        return DS_EIO;
    }
    r->bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->bell < 0) {
        ds_ring_close(r);
        close(fd);
        return DS_EIO;
    }
    *memfd = fd;
    return 0;
}

int ds_ring_attach(struct ds_ring *r, int memfd, int bell)
{
    struct stat st;
    size_t size;
    int seals = fcntl(memfd, F_GET_SEALS), rc = DS_EINVAL;

    memset(r, 0, sizeof(*r));
    r->bell = -1;
    /* Without the shrink seal the tenant could cut the file under the executor's
     * mapping, and the executor's next read would die of SIGBUS. */
    if (seals >= 0 && (seals & SEALS) == SEALS && fstat(memfd, &st) == 0 &&
        st.st_size > (off_t)HDR_SIZE) {
        size = (size_t)st.st_size - HDR_SIZE;
        if ((size & (size - 1)) == 0 && size % HDR_SIZE == 0 && size <= (64u << 20) &&
            map_twice(r, memfd, size) == 0)
            rc = 0;
    }
    close(memfd);
    if (rc == 0) {
        /* Whatever the tenant wrote before, this side starts from the beginning. */
        atomic_store(&r->hdr->head, 0);
        atomic_store(&r->hdr->sleeping, 0);
        r->bell = bell;
    } else {
        close(bell);
    }
    return rc;
}

void ds_ring_close(struct ds_ring *r)
{
    if (r->hdr != NULL)
        munmap(r->hdr, r->map_len);
    if (r->bell >= 0)
        close(r->bell);
    r->hdr = NULL;
    r->data = NULL;
    r->bell = -1;
}

unsigned char *ds_ring_space(struct ds_ring *r, size_t *avail)
{
    size_t used;

    r->head = atomic_load_explicit(&r->hdr->head, memory_order_acquire);
    used = (size_t)(r->tail - r->head);
    *avail = used + 8 < r->size ? r->size - used - 8 : 0;
    return r->data + (r->tail & (r->size - 1)) + 4;
}

int ds_ring_publish(struct ds_ring *r, size_t len)
{
    uint32_t n = (uint32_t)len;
    uint64_t one = 1;

    memcpy(r->data + (r->tail & (r->size - 1)), &n, sizeof(n));
    r->tail += pad8(4 + len);
    atomic_store_explicit(&r->hdr->tail, r->tail, memory_order_release);
    /* Pairs with the fence in ds_ring_sleep: either the consumer sees this record before
     * it blocks, or this side sees that it sleeps and wakes it. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&r->hdr->sleeping, memory_order_relaxed) &&
        write(r->bell, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
        return DS_EIO;
    return 0;
}

int ds_ring_drained(struct ds_ring *r)
{
    r->head = atomic_load_explicit(&r->hdr->head, memory_order_acquire);
    return r->head == r->tail;
}

int ds_ring_peek(struct ds_ring *r, const unsigned char **rec, size_t *len)
{
    uint64_t avail;
    uint32_t n;

    r->tail = atomic_load_explicit(&r->hdr->tail, memory_order_acquire);
    avail = r->tail - r->head;
    if (avail == 0)
        return 0;
    if (avail > r->size || avail < 8 || avail % 8 != 0)
        return DS_EPROTO;
    memcpy(&n, r->data + (r->head & (r->size - 1)), sizeof(n));
    if (n == 0 || pad8(4 + (size_t)n) > avail)
        return DS_EPROTO;
    *rec = r->data + (r->head & (r->size - 1)) + 4;
    *len = n;
    r->peeked = pad8(4 + (size_t)n);
    return 1;
}

/* The length comes from the peek, not from the ring again: the tenant could have changed
 * it since. */
void ds_ring_consume(struct ds_ring *r)
{
    r->head += r->peeked;
    r->peeked = 0;
    atomic_store_explicit(&r->hdr->head, r->head, memory_order_release);
}

int ds_ring_sleep(struct ds_ring *r)
{
    atomic_store_explicit(&r->hdr->sleeping, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&r->hdr->tail, memory_order_relaxed) != r->head) {
        atomic_store_explicit(&r->hdr->sleeping, 0, memory_order_relaxed);
        return 0;
    }
    return 1;
}

void ds_ring_wake(struct ds_ring *r)
{
    uint64_t v;

    atomic_store_explicit(&r->hdr->sleeping, 0, memory_order_relaxed);
    while (read(r->bell, &v, sizeof(v)) == sizeof(v))
        ;
}
