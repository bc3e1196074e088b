/* The call ring between a local client and its executor (common/ds_ring.h): records
 * arrive whole and in order across the ring's end, the consumer refuses what a hostile
 * tenant could write there, and the doorbell wakes a sleeping consumer. */
#define _GNU_SOURCE
#include "ds_error.h"
#include "ds_ring.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

enum { SIZE = 64 << 10, RECORDS = 20000 };

static struct ds_ring prod, cons;

/* A producer and a consumer on the same ring, as in two processes. */
static void pair(void)
{
    int memfd;

    cr_assert_eq(ds_ring_create(&prod, SIZE, &memfd), 0);
    cr_assert_eq(ds_ring_attach(&cons, memfd, dup(prod.bell)), 0);
}

static void unpair(void)
{
    ds_ring_close(&cons);
    ds_ring_close(&prod);
}

/* Record i: between 1 and 6 000 bytes, each byte derived from i and its place. */
static size_t record_len(unsigned i)
{
    return 1 + (i * 2654435761u) % 6000;
}

static unsigned char record_byte(unsigned i, size_t k)
{
    return (unsigned char)(i * 31 + k * 7);
}

static void *produce(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < RECORDS; i++) {
        size_t len = record_len(i), avail;
        unsigned char *p;

        while ((p = ds_ring_space(&prod, &avail)), avail < len)
            sched_yield();
        for (size_t k = 0; k < len; k++)
            p[k] = record_byte(i, k);
        if (ds_ring_publish(&prod, len) != 0)
            return (void *)1;
    }
    return NULL;
}

Test(ring, records_arrive_whole_and_in_order_across_the_end, .timeout = 60)
{
    pthread_t t;
    void *res;

    pair();
    cr_assert_eq(pthread_create(&t, NULL, produce, NULL), 0);
    for (unsigned i = 0; i < RECORDS; i++) {
        const unsigned char *rec;
        size_t len;
        int rc;

        while ((rc = ds_ring_peek(&cons, &rec, &len)) == 0)
            sched_yield();
        cr_assert_eq(rc, 1, "record %u: %d", i, rc);
        cr_assert_eq(len, record_len(i), "record %u", i);
        for (size_t k = 0; k < len; k++)
            cr_assert_eq(rec[k], record_byte(i, k), "record %u byte %zu", i, k);
        ds_ring_consume(&cons);
    }
    cr_assert_eq(pthread_join(t, &res), 0);
    cr_assert_null(res);
    cr_assert(ds_ring_drained(&prod));
    unpair();
}

Test(ring, a_full_ring_offers_no_room_until_served)
{
    size_t avail;
    const unsigned char *rec;
    size_t len;

    pair();
    ds_ring_space(&prod, &avail);
    cr_assert_lt(avail, SIZE);
    cr_assert_eq(ds_ring_publish(&prod, avail), 0);
    ds_ring_space(&prod, &avail);
    cr_assert_eq(avail, 0);
    cr_assert(!ds_ring_drained(&prod));
    cr_assert_eq(ds_ring_peek(&cons, &rec, &len), 1);
    ds_ring_consume(&cons);
    cr_assert(ds_ring_drained(&prod));
    ds_ring_space(&prod, &avail);
    cr_assert_gt(avail, SIZE / 2);
    unpair();
}

/* What a tenant could write into the shared header or a length word. */
Test(ring, the_consumer_refuses_impossible_records)
{
    const unsigned char *rec;
    size_t len, avail;
    unsigned char *p;
    uint32_t bogus;

    pair();
    p = ds_ring_space(&prod, &avail);
    memset(p, 0, 16);
    cr_assert_eq(ds_ring_publish(&prod, 16), 0);
    /* The length word sits just before the record's bytes. */
    bogus = 1000;
    memcpy(p - 4, &bogus, 4);
    cr_assert_eq(ds_ring_peek(&cons, &rec, &len), DS_EPROTO, "longer than what was published");
    bogus = 0;
    memcpy(p - 4, &bogus, 4);
    cr_assert_eq(ds_ring_peek(&cons, &rec, &len), DS_EPROTO, "an empty record");
    bogus = 16;
    memcpy(p - 4, &bogus, 4);
    cr_assert_eq(ds_ring_peek(&cons, &rec, &len), 1);
    /* A length changed between peek and consume does not move the consumer. */
    bogus = 4000;
    memcpy(p - 4, &bogus, 4);
    ds_ring_consume(&cons);
    cr_assert(ds_ring_drained(&prod));
    /* A tail beyond the ring's size. */
    prod.tail += 2 * SIZE;
    cr_assert_eq(ds_ring_publish(&prod, 8), 0);
    cr_assert_eq(ds_ring_peek(&cons, &rec, &len), DS_EPROTO);
    unpair();
}

Test(ring, attach_refuses_a_memfd_that_could_shrink)
{
    int fd = memfd_create("not-a-ring", MFD_CLOEXEC);
    struct ds_ring r;

    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, 4096 + SIZE), 0);
    cr_assert_eq(ds_ring_attach(&r, fd, eventfd(0, EFD_CLOEXEC)), DS_EINVAL);
    fd = memfd_create("odd-size", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    cr_assert_eq(ftruncate(fd, 4096 + 3 * 4096), 0);
    cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL), 0);
    cr_assert_eq(ds_ring_attach(&r, fd, eventfd(0, EFD_CLOEXEC)), DS_EINVAL);
}

static int bell_rung(void)
{
    struct pollfd p = { .fd = cons.bell, .events = POLLIN };

    return poll(&p, 1, 0) == 1;
}

Test(ring, the_doorbell_rings_only_for_a_sleeping_consumer)
{
    const unsigned char *rec;
    size_t len, avail;

    pair();
    ds_ring_space(&prod, &avail);
    cr_assert_eq(ds_ring_publish(&prod, 8), 0);
    cr_assert(!bell_rung(), "rang for an awake consumer");
    cr_assert_eq(ds_ring_sleep(&cons), 0, "slept with a record waiting");
    cr_assert_eq(ds_ring_peek(&cons, &rec, &len), 1);
    ds_ring_consume(&cons);
    cr_assert_eq(ds_ring_sleep(&cons), 1);
    ds_ring_space(&prod, &avail);
    cr_assert_eq(ds_ring_publish(&prod, 8), 0);
    cr_assert(bell_rung(), "a sleeping consumer was not woken");
    ds_ring_wake(&cons);
    cr_assert(!bell_rung(), "the doorbell stays rung after waking");
    unpair();
}
