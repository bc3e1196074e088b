#define _GNU_SOURCE /* memfd_create */
/*
 * What the sim backend's files share: the device's clock, a stream's modelled time,
 * host addresses of device memory, memfds and faults.
 *
 * Time model.  Each stream keeps the time at which its last piece of work completes.
 * New work starts when the host submits it, the stream is free and (legacy default
 * stream rules) the streams it must wait for are free; it ends after a duration given
 * by the cost model below.  Queries and synchronisation compare against the monotonic
 * clock and sleep until the modelled end, so ordering, overlap and event timings are
 * observable exactly as on a device.  Data effects are applied when work is submitted:
 * the executor sees a tenant's calls in order, so for any program that synchronises
 * correctly the bytes it reads are the bytes a device would give it.
 */
#include "sim_core.h"

#include "ds_error.h"
#include "ds_memtab.h"
#include "shm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

void ds__sim_free_work(struct sim_work *w)
{
    while (w != NULL) {
        struct sim_work *next = w->next;

        if (w->kind == W_HTOD)
            free(w->host);
        free(w);
        w = next;
    }
}

struct ds_bstream *ds__sim_stream(struct ds_backend *b, struct ds_bstream *s)
{
    return stream_or_legacy(b, s);
}

uint64_t ds__sim_now(struct ds_backend *b)
{
    return now_ns(b);
}

/* When work submitted now to s may start, under the legacy default stream's rules. */
static uint64_t start_time(struct ds_backend *b, struct ds_bstream *s)
{
    uint64_t t = max_u64(now_ns(b), s->ready_ns);

    if (s == &b->legacy) {
        for (struct ds_bstream *o = b->streams.next; o != &b->streams; o = o->next)
            if (!(o->flags & CU_STREAM_NON_BLOCKING))
                t = max_u64(t, o->ready_ns);
    } else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
        t = max_u64(t, b->legacy.ready_ns);
    }
    return t;
}

uint64_t ds__sim_submit(struct ds_backend *b, struct ds_bstream *s, uint64_t duration_ns)
{
    s = stream_or_legacy(b, s);
    s->ready_ns = start_time(b, s) + duration_ns;
    return s->ready_ns;
}

unsigned char *ds__sim_host_of(struct ds_backend *b, uint64_t addr)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&b->mem, addr, 0);

    return (unsigned char *)e->data + (addr - e->base);
}

void ds_sim_sm_groups(int sms, struct ds_sm_groups *out)
{
    out->sms = (unsigned)sms;
    out->size = sms < 8 ? (unsigned)sms : 8;
    out->count = out->sms / out->size > 64 ? 64 : out->sms / out->size;
}

void ds__sim_moved(struct ds_backend *b, struct ds_bstream *s, uint64_t t0, uint64_t bytes,
                   int pcie, int wait)
{
    uint64_t end;

    stall_from(b, t0);
    end = ds__sim_submit(b, s, cost(bytes, pcie ? SIM_PCIE_BYTES_PER_US : SIM_HBM_BYTES_PER_US));
    if (wait)
        sleep_until(b, end);
}

/* Whether e was recorded, with the device time its recorded work ends at in *at.  An
 * interprocess event's record is in host time, shared with other executors, whose device
 * clocks stand still at other times than this one's. */
int ds__sim_event_at(const struct ds_backend *b, const struct ds_bevent *e, uint64_t *at)
{
    uint64_t host;

    if (e->shared == NULL) {
        *at = e->at_ns;
        return e->recorded;
    }
    host = atomic_load(&e->shared[SIM_EV_AT]);
    *at = host > b->stalled_ns ? host - b->stalled_ns : 0;
    return host != 0;
}

void ds__sim_wait_now(struct ds_backend *b, struct ds_bstream *s, struct ds_bevent *e)
{
    uint64_t at;

    s = stream_or_legacy(b, s);
    if (ds__sim_event_at(b, e, &at))
        s->ready_ns = max_u64(s->ready_ns, at);
}

void ds__sim_record_now(struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s)
{
    uint64_t at = ds__sim_submit(b, s, 0);

    if (e->shared != NULL)
        atomic_store(&e->shared[SIM_EV_AT], at + b->stalled_ns);
    e->at_ns = at;
    e->recorded = 1;
}

int ds__sim_memfd(const char *name)
{
    struct rlimit lim;
    int fd = memfd_create(name, MFD_CLOEXEC);

    if (fd < 0 && errno == EMFILE && getrlimit(RLIMIT_NOFILE, &lim) == 0 &&
        lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &lim) == 0)
            fd = memfd_create(name, MFD_CLOEXEC);
    }
    return fd;
}

void ds__sim_own_fault(struct ds_backend *b)
{
    struct ds_shm_slot *s = &b->cfg.shm->slots[b->cfg.slot];
    struct ds_shm_domain *d = b->domain;

    if (b->fault != 0)
        return;
    b->fault = CUDA_ERROR_ILLEGAL_ADDRESS;
    /* Under MPS on a GPU the culprit's context fails as its victims' do, with nothing to
     * tell them apart (docs/reliability.md): anonymous faults model that. */
    atomic_store(&s->fault_origin, b->anonymous && d != NULL ? DS_FAULT_UNKNOWN : DS_FAULT_OWN);
    if (d == NULL)
        return;
    atomic_store(&d->fault_by, s->id);
    memcpy(d->fault_name, s->tenant, sizeof(d->fault_name));
    b->domain_faults = atomic_fetch_add_explicit(&d->faults, 1, memory_order_release) + 1;
}

int ds__sim_fault_now(struct ds_backend *b)
{
    struct ds_shm_slot *s = &b->cfg.shm->slots[b->cfg.slot];
    struct ds_shm_domain *d = b->domain;

    if (b->fault == 0 && d != NULL &&
        atomic_load_explicit(&d->faults, memory_order_acquire) != b->domain_faults) {
        b->fault = CUDA_ERROR_ILLEGAL_ADDRESS;
        if (b->anonymous) {
            atomic_store(&s->fault_origin, DS_FAULT_UNKNOWN);
        } else {
            atomic_store(&s->lost_to, atomic_load(&d->fault_by));
            atomic_store(&s->fault_origin, DS_FAULT_NEIGHBOUR);
        }
    }
    return b->fault;
}
