/*
 * The sim device's insides, shared by its files: the cost model, the objects behind
 * the backend's opaque types, and the helpers more than one file uses.  Not for
 * anything outside server/sim*.c: the rest of the server sees only backend.h.
 */
#ifndef DS_SIM_CORE_H
#define DS_SIM_CORE_H

#include "backend.h"
#include "backend_list.h"
#include "cubin.h"
#include "ds_clock.h"
#include "ds_memtab.h"
#include "shm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <stdint.h>
#include <time.h>

/* Cost model, loosely an H100 on PCIe 5: enough to make timings plausible, not a
 * performance model. */
#define SIM_OP_NS 2000ull          /* fixed cost of any piece of work */
#define SIM_PCIE_BYTES_PER_US 25000ull   /* host<->device, 25 GB/s */
#define SIM_HBM_BYTES_PER_US 1500000ull  /* device->device copy and fill, 1.5 TB/s */

/* A kernel: a fixed launch cost, then waves of blocks, each block-wave 1 us per 256
 * threads of a block.  Kernels compute nothing; only their time is modelled. */
#define SIM_LAUNCH_NS 3000ull
#define SIM_WAVE_NS 1000ull
#define SIM_BLOCKS_PER_SM 2ull
#define SIM_ARCH 90 /* the cubins the sim accepts: what an H100 runs */

#define SIM_PCTX_MAX 32 /* partitions' contexts one tenant keeps, as the cuda backend */
#define SIM_VA_REGION (1ull << 40) /* a tenant's device addresses: a TiB reserved (sim_mem.c) */
#define SIM_HOST_PAGES 1 /* memtab owner of host arena pages mapped for the device */
#define SIM_VMM_VA 2     /* memtab owner of a VMM reservation (sim_vmm.c) */
/* cuMemAllocPitch's pitch: rows rounded up to the view's TEXTURE_ALIGNMENT, 512 bytes,
 * the multiple an H100's driver pads pitched rows to. */
#define SIM_PITCH_ALIGN 512ull
#define SIM_IPC_OPEN 3   /* memtab owner of another tenant's memory, opened (sim_ipc.c) */
#define SIM_VA_ALIGN 4096ull
#define SIM_VMM_GRANULARITY (2ull << 20) /* an H100's, minimum and recommended */

/* A piece of device work with data effects or modelled time: what a stream runs, and
 * what capture records into a graph to run later. */
struct sim_work {
    /* W_NONE: a graph node that does nothing; W_RECORD, W_WAIT: a graph's event node
     * (or, behind a parked stream, an event's record or wait); W_MEMOP: a stream memory
     * operation; W_HTOD, W_DTOH: a host copy behind a parked stream (sim_work.c) */
    enum { W_NONE, W_COPY, W_FILL, W_BOX, W_KERNEL, W_RECORD, W_WAIT, W_COND, W_MEMOP, W_HTOD,
           W_DTOH } kind;
    uint64_t dst, src, n;              /* W_COPY */
    struct ds_copy3d box;              /* W_BOX */
    uint64_t pitch, width, height;     /* W_FILL, at dst */
    uint32_t value;
    unsigned elem;
    uint64_t kernel_ns;                /* W_KERNEL */
    struct ds_bevent *event;           /* W_RECORD, W_WAIT */
    struct sim_cond_run *cond;         /* W_COND: its instantiated graph's */
    struct ds_memop_desc memop;        /* W_MEMOP */
    void *host;                        /* W_HTOD: n bytes it owns; W_DTOH: the arena's */
    uint64_t node;                     /* in an instantiated graph: its node's id, or 0 */
    int off;                           /* in an instantiated graph: its node is disabled */
    struct sim_work *next;
};

struct ds_bstream {
    uint64_t ready_ns; /* when the last submitted work ends */
    unsigned flags;
    int priority;
    int capturing;
    uint64_t capture_id;
    struct sim_work *captured, **captured_tail;
    /* Work behind a stream memory wait whose condition does not hold yet, in order: the
     * stream is parked until it holds (sim_work.c).  refs: fences that look at the
     * stream; dead: destroyed by the tenant, freed once drained and unreferenced. */
    struct sim_work *parked, **parked_tail;
    unsigned refs;
    int dead;
    struct ds_bstream *prev, *next;
};

/* A conditional handle: kernels compute nothing on the sim, so its value is the one it
 * starts with, at each launch (CU_GRAPH_COND_ASSIGN_DEFAULT) or once. */
struct ds_bcond {
    unsigned dflt, flags;
    struct ds_bcond *next;
};

/* A conditional node in an instantiated graph: its value, and its bodies' work. */
struct sim_cond_run {
    unsigned value, flags, dflt;
    int type; /* CUgraphConditionalNodeType */
    unsigned n;
    struct sim_work **bodies;
    struct sim_cond_run *next;
};

/* A node of a graph built node by node: its work, and the nodes it waits for. */
struct ds_bnode {
    uint64_t id; /* unique in the backend, so an instantiated graph can name it */
    struct sim_work w;
    struct sim_work *body; /* a child graph node's: its copy of the graph's work, in order */
    struct ds_bcond *cond; /* a conditional node's handle, type and body graphs */
    int cond_type;
    unsigned nbodies;
    struct ds_bgraph **bodies;
    struct ds_bnode **deps;
    size_t ndeps;
    int placed; /* instantiation's mark */
    struct ds_bnode *next;
};

/* A captured graph is an ordered list of work; a built one, its nodes in the order they
 * were added.  Instantiating either gives an ordered list of work. */
struct ds_bgraph {
    struct sim_work *work;
    struct ds_bnode *nodes;
    struct ds_bcond *conds;
};

struct ds_bgexec {
    struct sim_work *work;
    struct sim_cond_run *conds;
};

/* A memfd that other executors open by its tag (sim_ipc.c). */
struct sim_shared {
    int fd;
    uint64_t tag[2];
};

/* An interprocess event (CU_EVENT_INTERPROCESS) keeps its last record in `shared`, words
 * of a memfd page that every executor holding the event maps: [SIM_EV_AT] the host time
 * (ds_now_ns) at which the recorded work ends, 0 before any record (recorded and at_ns
 * are then unused); [SIM_EV_PENDING] its records behind parked streams of any executor,
 * so that another executor's wait parks as this one's would (a wait across two servers
 * of one tenant, client/api/xwait.c).  `own` is the memfd when this executor made the
 * event. */
enum { SIM_EV_AT, SIM_EV_PENDING };

struct ds_bevent {
    unsigned flags;
    int recorded;
    uint64_t at_ns;
    atomic_uint_fast64_t *shared;
    struct sim_shared *own;
    unsigned pending; /* records behind parked streams, not yet made */
    unsigned refs;    /* parked work and fences that name it */
    int dead;         /* destroyed by the tenant, freed once unreferenced */
};

struct ds_bfunc {
    const struct ds_kernel *k;
    int attrs[CU_FUNC_ATTRIBUTE_MAX]; /* the settable ones, as last set */
    struct ds_bfunc *next;
};

/* A module variable, placed in the tenant's sim memory the first time it is asked for. */
struct sim_global {
    char *name;
    uint64_t addr;
    struct sim_global *next;
};

/* A module owns the functions handed out of it and its variables' memory. */
struct ds_bmodule {
    struct ds_cubin cubin;
    void *elf; /* the cubin, kept for its variables */
    size_t elf_len;
    struct ds_bfunc *funcs;
    struct sim_global *globals;
};

struct ds_backend {
    struct ds_backend_config cfg;
    uint64_t next_capture_id;
    uint64_t next_node_id;
    uint64_t limits[CU_LIMIT_MAX];
    uint64_t stalled_ns; /* host time spent applying data effects: not device time */
    struct ds_memtab mem; /* data = host mapping; a VMM reservation is one entry */
    struct ds_memtab vmm_maps; /* VMM mappings inside the reservations */
    struct ds_memtab ipc_out;  /* allocations exported for IPC: data = struct sim_shared */
    uint64_t va_base, va_end;
    struct ds_bstream legacy;
    struct ds_bstream streams; /* list head of created streams */
    struct ds_sm_groups groups;
    unsigned sms;          /* of the partition the tenant is bound to */
    uint64_t bound;        /* its groups, 0 for all */
    const char *fault_kernel; /* DETSHARE_SIM_FAULT: launching it faults the context */
    int anonymous;            /* DETSHARE_SIM_ANONYMOUS_FAULTS: no culprit told, as on a GPU */
    const char *hang_kernel;  /* DETSHARE_SIM_HANG: launching it never returns */
    int fault;                /* the sticky CUresult once faulted, else 0 */
    /* The MPS domain the context shares (shm.h: the shared one or a named group's;
     * NULL: a domain of its own), and its faults when the context was made. */
    struct ds_shm_domain *domain;
    unsigned domain_faults;
    /* Partitions' contexts made so far, as in the cuda backend's pool: a move to one not
     * made yet is refused with DS_EBUSY, as on a GPU.  The binder thread makes them. */
    pthread_mutex_t pctx_lock;
    uint64_t pctx[SIM_PCTX_MAX];
    int npctx;
    unsigned pctx_ms; /* DETSHARE_SIM_PCTX_MS: what making one takes */
    unsigned nparked;         /* streams with parked work */
    int unparking;            /* parked work is running (sim_work.c) */
};

/* The backend's operations (backend_ops.h), by area: sim.c the device, copies, streams
 * and events; sim_mem.c memory; sim_work.c event records and waits (they may park);
 * sim_module.c and sim_link.c modules and kernels; sim_pctx.c prepare and bind;
 * sim_graph.c capture and graphs; sim_fence.c fences; sim_memop.c stream memory
 * operations and device queries; sim_facts.c what NVML says of it; sim_vmm.c, sim_tensormap.c, sim_ipc.c, sim_pool.c and
 * sim_array.c their namesakes. */
#define SIM_PROTO(ret, op, args) ret ds__sim_##op args;
DS_BACKEND_OPS(SIM_PROTO)
#undef SIM_PROTO

/* Shared by the files above. */
uint64_t ds__sim_submit(struct ds_backend *b, struct ds_bstream *s, uint64_t duration_ns);
unsigned char *ds__sim_host_of(struct ds_backend *b, uint64_t addr);
int ds__sim_work_run(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w);
void ds__sim_free_work(struct sim_work *w);
/* sim_pctx.c: partitions' contexts (DETSHARE_SIM_PCTX_MS). */
void ds__sim_pctx_init(struct ds_backend *b);
void ds__sim_pctx_fini(struct ds_backend *b);
/* What a kernel launched now gets of its partition's SMs beside other tenants' queued
 * kernels (half of those they occupy too), and how long it waits for their running
 * blocks there. */
struct sim_share {
    unsigned sms;     /* SMs a kernel of the tenant gets while others' kernels run */
    unsigned free;    /* of those, SMs no other tenant's kernel occupies */
    uint64_t wait_ns; /* until the first of the kernels running on the others ends */
};
void ds__sim_share_now(struct ds_backend *b, struct sim_share *out);
/* Tell other tenants that this one's kernels keep its SMs busy until stream s is done,
 * each taking about kernel_ns. */
void ds__sim_busy_until(struct ds_backend *b, struct ds_bstream *s, uint64_t kernel_ns);

/* Work w on s now, whatever is parked (sim_work.c); event records and waits as they are
 * made when nothing holds them. */
int ds__sim_work_now(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w);
void ds__sim_record_now(struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s);
void ds__sim_wait_now(struct ds_backend *b, struct ds_bstream *s, struct ds_bevent *e);
struct ds_bstream *ds__sim_stream(struct ds_backend *b, struct ds_bstream *s);
/* The device's clock: the host's less the time spent applying data effects.  Whether
 * event e was recorded, and the modelled time its work ends at in *at. */
uint64_t ds__sim_now(struct ds_backend *b);
int ds__sim_event_at(const struct ds_backend *b, const struct ds_bevent *e, uint64_t *at);

/* A batch memory operation node's work: its n operations as a list of W_MEMOP items in
 * *out (NULL and DS_ENOMEM when it cannot be made), which ds__sim_free_work frees. */
int ds__sim_memop_list(const struct ds_memop_desc *ops, unsigned n, struct sim_work **out);

/* sim_work.c: the parked streams stream memory waits make.  park puts a
 * copy of w behind s when s is parked, or when w is a wait that does not hold yet
 * (parking s); returns 1 when it did, 0 when w may run now, or DS_ENOMEM.  unpark runs
 * parked work whose waits hold now, on every stream, as far as it goes; blocked says
 * whether fence point `at` stands behind parked work.  The release functions drop a
 * reference and free a dead stream or event with none left. */
int ds__sim_park(struct ds_backend *b, struct ds_bstream *s, const struct sim_work *w);
void ds__sim_unpark(struct ds_backend *b);
int ds__sim_blocked(struct ds_backend *b, const struct ds_fence_at *at);
void ds__sim_stream_release(struct ds_backend *b, struct ds_bstream *s);
void ds__sim_event_release(struct ds_bevent *e);
/* Whether a record of e waits behind a parked stream (for an interprocess event, a
 * stream of any executor holding it). */
int ds__sim_event_pending(const struct ds_bevent *e);
/* At close: free s's parked work, letting go of the events it names. */
void ds__sim_drop_parked(struct ds_backend *b, struct ds_bstream *s);

/* sim_mem.c: the device's address region, [va_base, va_end), reserved in this process at
 * open (0 or DS_ENOMEM) and let go at close. */
int ds__sim_mem_open(struct ds_backend *b);
void ds__sim_mem_close(struct ds_backend *b);

/* sim_vmm.c: whether [addr, addr+n), inside one VMM reservation, is mapped throughout. */
int ds__sim_vmm_mapped(const struct ds_backend *b, uint64_t addr, uint64_t n);

/* A memfd named `name`, close-on-exec.  Each allocation shared with other processes
 * holds one for as long as it lives, and a framework can make thousands, past a default
 * soft limit of 1024: the first refusal raises the soft limit to the hard one.  Returns
 * the descriptor or -1 (errno set). */
int ds__sim_memfd(const char *name);

/* sim_ipc.c: an allocation's export ending with its
 * dev_free (and every one at close); an interprocess event's shared page made at its
 * creation and let go at its destruction. */
void ds__sim_ipc_unshare(struct ds_backend *b, uint64_t addr);
void ds__sim_ipc_fini(struct ds_backend *b);
int ds__sim_ipc_event_init(struct ds_bevent *e);
void ds__sim_ipc_event_fini(struct ds_bevent *e);

/* Bytes were moved (host time from t0 on, which is not device time): the copy's modelled
 * time, at the host link's rate when pcie else the device memory's, goes on stream s;
 * with wait, the call returns once the stream gets there. */
void ds__sim_moved(struct ds_backend *b, struct ds_bstream *s, uint64_t t0, uint64_t bytes,
                   int pcie, int wait);

/* The sim models MPS's blast radius (docs/sim-device.md): a kernel's fault in a
 * tenant of the shared fault domain, or of a named group (one MPS daemon each), ends
 * the context of every other tenant of that domain, which their next synchronisation
 * finds; tenants of other domains go on, and a tenant of a domain of its own keeps its
 * faults, and its neighbours', to itself.  ds__sim_own_fault fails b's
 * context by its own kernel's fault; ds__sim_fault_now returns b's sticky CUresult
 * (0: none), failing the context first when a neighbour of its domain faulted since
 * it was made. */
void ds__sim_own_fault(struct ds_backend *b);
int ds__sim_fault_now(struct ds_backend *b);

/* A malloc'd copy of the sm_90 cubin of an image: the image itself, or its fatbin's
 * entry, decompressed.  Returns 0, DS_ENOTSUP for PTX or a fatbin with no sm_90 cubin,
 * DS_EINVAL for bytes that are no image, DS_ENOMEM. */
int ds__sim_cubin_of(const void *image, size_t len, void **elf, size_t *elf_len);
/* The work of launch l of f on the tenant's SMs as they are now (sim_module.c);
 * `arriving` when its stream is idle, so that it waits for other tenants' running
 * blocks on its SMs. */
void ds__sim_kernel_work(struct ds_backend *b, const struct ds_launch *l, int arriving,
                         struct sim_work *w);

/* Device time.  The device's clock stands still while the host copies bytes to apply a
 * piece of work's effects: a modelled 1.5 TB/s copy must not take as long as the host's
 * memmove of the same bytes, or the model would measure the host. */
static inline uint64_t now_ns(struct ds_backend *b)
{
    return ds_now_ns() - b->stalled_ns;
}

static inline void stall_from(struct ds_backend *b, uint64_t host_start)
{
    b->stalled_ns += ds_now_ns() - host_start;
}

static inline void sleep_until(struct ds_backend *b, uint64_t t)
{
    uint64_t real = t + b->stalled_ns;
    struct timespec ts = { .tv_sec = (time_t)(real / 1000000000ull),
                           .tv_nsec = (long)(real % 1000000000ull) };

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static inline struct ds_bstream *stream_or_legacy(struct ds_backend *b, struct ds_bstream *s)
{
    return s ? s : &b->legacy;
}

static inline uint64_t cost(uint64_t bytes, uint64_t bytes_per_us)
{
    return SIM_OP_NS + bytes * 1000ull / bytes_per_us;
}

#endif
