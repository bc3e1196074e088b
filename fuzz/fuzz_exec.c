/*
 * libFuzzer target: the executor's request decoding and dispatch, on the sim device.
 *
 * Each input is one tenant's session.  It runs in this process through
 * ds__executor_serve (server/exec/executor.h), the executor's own loop, on one end of a
 * socket pair whose other end a peer thread feeds with the input and drains of replies;
 * the session ends at the end of the input like a tenant that disconnects.  The input:
 *
 *   byte 0    bit 0: hand over a host arena first (a memfd, as a local client does)
 *             bit 1: hand over a call ring, and read the rest as chunks
 *   the rest  without a ring: the bytes the tenant sends on its socket (RPC record
 *             marking and all); with one: chunks of [where: 1 byte][length: 2 bytes, big
 *             endian][bytes], published as one ring record when bit 0 of `where` is set
 *             and added to the socket's bytes otherwise.  Ring records are all in the
 *             ring before the session starts, and the socket ends only once the
 *             executor has served them.
 *
 * After each session the tenant's slot of the control block must say it holds no
 * memory and the process must hold no more descriptors than before: anything else is
 * a leak, and aborts.  Memory leaks are LeakSanitizer's.
 */
#define _GNU_SOURCE
#include "ds_arena.h"
#include "ds_fdpass.h"
#include "ds_ring.h"
#include "executor.h"
#include "fuzz_io.h"
#include "shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define FLAG_ARENA 1u
#define FLAG_RING 2u
/* Small against the client's 4 MiB: the ring's code is the same at any size. */
#define RING_BYTES (64u * 1024)
#define ARENA_BYTES (1u << 20)
#define SIM_MEMORY (64ull << 20) /* enough for the seeds; bounds what one input touches */
#define SIM_SMS 132

static struct ds_shm *shm;
static int slot;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    int fd;

    (void)argc;
    (void)argv;
    /* A warning per malformed call would cost more than serving it. */
    setenv("DETSHARE_LOG", "error", 0);
    shm = ds_shm_create(SIM_MEMORY, &fd);
    if (shm == NULL) {
        perror("ds_shm_create");
        abort();
    }
    close(fd);
    slot = ds_shm_slot_take(shm);
    return 0;
}

static int send_arena(int sock)
{
    int fd = memfd_create("fuzz-arena", MFD_CLOEXEC), rc = -1;

    if (fd < 0)
        return -1;
    if (ftruncate(fd, ARENA_BYTES) == 0)
        rc = ds_arena_send(sock, fd);
    close(fd);
    return rc;
}

/* Split the chunks: ring records go into the ring, socket bytes into sock (len bytes,
 * the input's size at most).  Returns how many socket bytes there are. */
static size_t split(struct ds_ring *ring, const uint8_t *p, size_t len, uint8_t *sock)
{
    size_t n = 0;

    while (len >= 3) {
        size_t want = ((size_t)p[1] << 8) | p[2], take = want < len - 3 ? want : len - 3;
        int to_ring = p[0] & 1u;

        p += 3;
        len -= 3;
        if (to_ring) {
            size_t avail;
            unsigned char *dst = ds_ring_space(ring, &avail);

            if (take > 0 && take <= avail) {
                memcpy(dst, p, take);
                ds_ring_publish(ring, take);
            }
        } else {
            memcpy(sock + n, p, take);
            n += take;
        }
        p += take;
        len -= take;
    }
    return n;
}

static int send_ring(int sock, struct ds_ring *ring)
{
    int memfd;

    if (ds_ring_create(ring, RING_BYTES, &memfd) != 0)
        return -1;
    if (ds_fd_send(sock, DS_RING_MARKER, memfd) != 0 ||
        ds_fd_send(sock, DS_BELL_MARKER, ring->bell) != 0) {
        close(memfd);
        return -1;
    }
    close(memfd);
    return 0;
}

/* The control process's part when an executor exits: the slot is cleared for the next
 * tenant.  What the executor itself must have given back is checked first. */
static void check_and_clear(void)
{
    struct ds_shm_slot *s = &shm->slots[slot];

    if (atomic_load(&s->mem_used) != 0 || atomic_load(&s->sim_mem_used) != 0) {
        fprintf(stderr, "leak: the tenant's slot still holds %llu bytes (sim: %llu)\n",
                (unsigned long long)atomic_load(&s->mem_used),
                (unsigned long long)atomic_load(&s->sim_mem_used));
        abort();
    }
    ds_shm_slot_clear(shm, slot);
    atomic_store(&s->state, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ds_backend_config cfg = { .sim_sms = SIM_SMS, .shm = shm, .slot = slot };
    struct ds_ring ring = { .bell = -1 };
    struct ds_fuzz_peer peer;
    const uint8_t *rest = data + 1;
    size_t nsock = size - 1;
    uint8_t *sock = NULL;
    int sv[2], fds = ds_fuzz_open_fds();

    if (size < 1 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    if ((data[0] & FLAG_ARENA) && send_arena(sv[1]) != 0)
        abort();
    if (data[0] & FLAG_RING) {
        if (send_ring(sv[1], &ring) != 0)
            abort();
        sock = malloc(size);
        nsock = split(&ring, data + 1, size - 1, sock);
        rest = sock;
    }
    if (ds_fuzz_peer_start(&peer, sv[1], rest, nsock, ring.hdr != NULL ? &ring : NULL) != 0)
        abort();
    ds__executor_serve(&ds_sim_backend, &cfg, sv[0]);
    ds_fuzz_peer_join(&peer);
    ds_ring_close(&ring);
    free(sock);
    check_and_clear();
    if (ds_fuzz_open_fds() != fds) {
        fprintf(stderr, "leak: %d descriptors open after the session, %d before\n",
                ds_fuzz_open_fds(), fds);
        abort();
    }
    return 0;
}
