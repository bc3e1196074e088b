/*
 * SM partitions and contention on the sim (docs/sim-device.md), as cuda_pctx.c is on a
 * GPU: the contexts of partitions, made once per tenant and set of groups and taking
 * DETSHARE_SIM_PCTX_MS each; moves between them; and the SMs a kernel gets beside other
 * tenants' queued kernels.
 */
#include "sim_core.h"

#include "ds_clock.h"
#include "ds_error.h"
#include "shm.h"

#include <stdlib.h>
#include <time.h>

void ds__sim_pctx_init(struct ds_backend *b)
{
    const char *ms = getenv("DETSHARE_SIM_PCTX_MS");

    b->pctx_ms = ms != NULL ? (unsigned)strtoul(ms, NULL, 10) % 10000 : 0;
    pthread_mutex_init(&b->pctx_lock, NULL);
}

void ds__sim_pctx_fini(struct ds_backend *b)
{
    pthread_mutex_destroy(&b->pctx_lock);
}

static int pctx_made(const struct ds_backend *b, uint64_t groups)
{
    for (int i = 0; i < b->npctx; i++)
        if (b->pctx[i] == groups)
            return 1;
    return groups == 0;
}

/* Making a partition's context takes time on a GPU (2 to 170 ms measured on an H100
 * under MPS), and a tenant cannot move before it is made: the sim takes
 * DETSHARE_SIM_PCTX_MS for each new set of groups, so that what executors do meanwhile
 * is tested.  Called by the binder thread, beside the serving thread's ds__sim_bind. */
int ds__sim_prepare(struct ds_backend *b, uint64_t groups)
{
    struct timespec ts = { b->pctx_ms / 1000, (long)(b->pctx_ms % 1000) * 1000000 };
    int rc = 0;

    if (b->groups.count < 64 && (groups >> b->groups.count) != 0)
        return DS_EINVAL;
    pthread_mutex_lock(&b->pctx_lock);
    if (!pctx_made(b, groups)) {
        if (b->npctx == SIM_PCTX_MAX) {
            rc = DS_ENOMEM;
        } else {
            nanosleep(&ts, NULL);
            b->pctx[b->npctx++] = groups;
            rc = 1;
        }
    }
    pthread_mutex_unlock(&b->pctx_lock);
    return rc;
}

/* A partition's SMs decide how many waves a kernel takes (sim_module.c).  Never waits
 * for a context being made: DS_EBUSY until it is, as the cuda backend. */
int ds__sim_bind(struct ds_backend *b, uint64_t groups)
{
    int n = __builtin_popcountll(groups), made;

    if (b->groups.count < 64 && (groups >> b->groups.count) != 0)
        return DS_EINVAL;
    if (pthread_mutex_trylock(&b->pctx_lock) != 0)
        return DS_EBUSY;
    made = pctx_made(b, groups);
    pthread_mutex_unlock(&b->pctx_lock);
    if (!made)
        return DS_EBUSY;
    b->sms = groups == 0 ? b->groups.sms : (unsigned)n * b->groups.size;
    b->bound = groups;
    return 0;
}

static uint64_t all_groups(const struct ds_backend *b)
{
    return b->groups.count >= 64 ? ~0ull : (1ull << b->groups.count) - 1;
}

/* When tenant o's kernel running at `now` ends: its queued kernels end at busy_until and
 * are taken to be as long as its last one. */
static uint64_t running_end(const struct ds_shm_slot *o, uint64_t now)
{
    uint64_t until = atomic_load(&o->sim_busy_until), d = atomic_load(&o->sim_kernel_ns);

    return d == 0 ? until : now + (until - now) % d;
}

/* Contention: two tenants whose kernels are on the same SMs at once each get half of
 * them.  Other tenants are seen through the control block: their groups and until when
 * their queued kernels run.  A kernel arriving on SMs where another tenant's kernel runs
 * cannot use them before that kernel's blocks are done (under MPS running blocks are
 * never preempted): wait_ns says until when, free how many of its SMs nobody occupies. */
void ds__sim_share_now(struct ds_backend *b, struct sim_share *out)
{
    const struct ds_shm *shm = b->cfg.shm;
    uint64_t mine = b->bound ? b->bound : all_groups(b), now = ds_now_ns(), covered = 0;
    uint64_t first = UINT64_MAX;
    unsigned shared = 0, taken;
    int whole = 0; /* a busy tenant on the whole device, SMs outside any group too */

    for (int i = 0; i < (int)shm->nslots; i++) {
        const struct ds_shm_slot *o = &shm->slots[i];
        uint64_t theirs, end;

        if (i == b->cfg.slot || atomic_load(&o->state) == 0 ||
            atomic_load(&o->sim_busy_until) <= now)
            continue;
        theirs = atomic_load(&o->bound_groups);
        whole |= theirs == 0;
        theirs = mine & (theirs ? theirs : all_groups(b));
        if (theirs == 0)
            continue;
        shared += (unsigned)__builtin_popcountll(theirs) * b->groups.size;
        covered |= theirs;
        end = running_end(o, now);
        first = end < first ? end : first;
    }
    shared = shared > b->sms ? b->sms : shared;
    taken = whole ? b->sms : (unsigned)__builtin_popcountll(covered) * b->groups.size;
    out->sms = b->sms - shared / 2;
    out->free = taken > b->sms ? 0 : b->sms - taken;
    out->wait_ns = first == UINT64_MAX ? 0 : first - now;
}

void ds__sim_busy_until(struct ds_backend *b, struct ds_bstream *s, uint64_t kernel_ns)
{
    struct ds_shm_slot *me = &b->cfg.shm->slots[b->cfg.slot];
    uint64_t end = ds__sim_stream(b, s)->ready_ns + b->stalled_ns;

    atomic_store(&me->sim_kernel_ns, kernel_ns);
    if (end > atomic_load(&me->sim_busy_until))
        atomic_store(&me->sim_busy_until, end);
}
