/*
 * One tenant's state inside its executor: its virtual contexts, streams and events
 * (behind handles), its allocations, and the first error of a batched call not yet
 * reported.  The connection owns the tenant; ds__tenant_fini frees everything it held,
 * however the connection ended.
 */
#ifndef DS_TENANT_H
#define DS_TENANT_H

#include "account.h"
#include "backend.h"
#include "binder.h"
#include "bulk.h"
#include "detshare.h"
#include "ds_memtab.h"
#include "handles.h"
#include "trace.h"

struct ds_shm;

/* What a range of t->mem is (its entry's kind), which decides who may free it and
 * whether it counts against the quota. */
enum ds_range_kind {
    DS_RANGE_ALLOC = 1, /* cuMemAlloc's: owner = its context; freed by cuMemFree */
    DS_RANGE_GLOBAL,    /* a module's global: owner = the module */
    DS_RANGE_HOST,      /* part of the tenant's host arena, mapped for the device */
    DS_RANGE_IPC,       /* another tenant's memory, opened (ops_ipc.c) */
    DS_RANGE_VMM_READ,  /* a VMM mapping the device may read: owner = the allocation */
    DS_RANGE_VMM_RW,    /* one it may read and write */
    DS_RANGE_POOL,      /* a memory pool's allocation: owner = the pool (ops_pool.c) */
    DS_RANGE_MANAGED,   /* managed memory on the arena: owner = its arena offset
                         * (ops_hostreg.c); freed by cuMemFree */
    DS_RANGE_GRAPH,     /* a memory allocation node's: owner = its struct ds_gmem
                         * (ops_gmem.c) */
};

/* What an entry of texobjs is (ops_array.c). */
enum ds_texobj_kind { DS_TEXOBJ_TEX = 1, DS_TEXOBJ_SURF };

/* What a part of the arena given to the device is (its host_maps entry's kind). */
enum ds_host_use {
    DS_HOST_PINNED,     /* cuMemHostAlloc's */
    DS_HOST_REGISTERED, /* the tenant's own pages, moved onto the arena (cuMemHostRegister) */
    DS_HOST_MANAGED,    /* cuMemAllocManaged's, counted as managed memory */
};

struct ds_vctx {
    int primary;
    int active;        /* a primary context is inactive until retained */
    unsigned flags;
    unsigned refcount; /* primary only */
    uint64_t id;
};

/* A tenant stream.  The real stream behind it may change (migration); the handle and
 * everything the tenant sees of it never do. */
struct ds_vstream {
    uint64_t ctx;
    unsigned flags;
    int priority;
    uint64_t id;
    int capturing; /* between capture_begin and capture_end */
    int mode;      /* capturing: the capture's CUstreamCaptureMode */
    uint64_t into; /* capturing into a graph (ops_gcapture.c): that graph, else 0, */
    uint64_t *into_deps; /* and the nodes of it the capture's next work depends on */
    uint32_t ninto_deps;
    int owns_into; /* into is the capture's own graph: a plain capture met a host function */
    /* capturing: the backend id the capture began with, the one the tenant is told,
     * though each cut of it (ops_gcapture.c) begins a backend capture of another id */
    uint64_t first_id;
    struct ds_bstream *real;
};

/* A conditional handle: the number kernels and nodes name it by, and the backend's. */
struct ds_vcond {
    uint64_t value;
    struct ds_bcond *real;
};

/* One stage of an instantiated graph that has host nodes (ops_gstage.c): the device
 * nodes of the stage as a graph of their own (NULL when it has none), then the host
 * functions the tenant runs once the stream has reached the end of it. */
struct ds_gstage {
    struct ds_bgraph *g;
    struct ds_bgexec *e;
    uint64_t *nodes;        /* the built graph's nodes the stage's device nodes stand for */
    struct ds_bnode **real; /* and their backend nodes in g */
    uint32_t n;
    ds_stage_call *calls;   /* what the tenant does at the stage's end, */
    uint64_t *call_nodes;   /* for these nodes (host nodes, copies of its own memory) */
    uint32_t ncalls;
};

/* A graph, captured or built node by node, or an instantiated one. */
struct ds_vgraph {
    uint64_t ctx;
    void *real;      /* struct ds_bgraph or struct ds_bgexec; NULL when staged */
    int built;       /* made by cuGraphCreate (or cloned from such): its nodes are below */
    int embedded;    /* built: a node's own (a child graph's copy, a conditional's body),
                      * which goes with the node */
    int frozen;      /* embedded: a child graph's copy, which the backend copied in turn,
                      * so that edits here would not reach it */
    uint64_t *nodes; /* built: its nodes' handles, in the order they were added */
    uint32_t nnodes;
    uint64_t graph;  /* instantiated: the graph it was made from */
    uint64_t flags;  /* instantiated: the flags it was instantiated with */
    struct ds_vevent **events; /* instantiated: the events its nodes use, one ref each */
    uint32_t nevents;
    struct ds_gstage *stages; /* instantiated from a graph with host nodes */
    uint32_t nstages;
    struct ds_vcond *conds;   /* built: the conditional handles made for it */
    uint32_t nconds;
    uint64_t *off;            /* instantiated: its graph's nodes it skips */
    uint32_t noff;
    struct ds_gmem **gmems;   /* captured: the memory allocated in its capture; instantiated:
                               * the graph memory its nodes use; one ref each */
    uint32_t ngmems;
    ds_memcpy_node *hcopies;  /* captured: the copies of the tenant's pageable memory each
                               * launch does around the graph (ops_ghcopy.c) */
    uint32_t nhcopies;
};

/* Memory a capturing stream allocated (cuMemAllocAsync), for the graph its capture makes. */
struct ds_gcap {
    uint64_t stream;
    struct ds_gmem *m;
};

/* A copy of the tenant's pageable memory that a capture not yet ended took: the backend
 * capture it belongs to, the copy between the host and m that launches do, and m, the
 * staging memory the captured device copy reads or writes (ops_ghcopy.c). */
struct ds_hcap {
    uint64_t capture;
    ds_memcpy_node copy;
    struct ds_gmem *m;
};

/* A memory allocation node's memory: it lives while the node, or an instance made from
 * its graph, holds a reference (ops_gmem.c). */
struct ds_gmem {
    uint64_t base, size;
    unsigned refs;
};

/* A node of a built graph (ops_gnode.c): the tenant's description of it, checked, of
 * which the node owns a deep copy (a kernel's parameters and attributes), the handles of
 * the nodes it waits for, and the backend's node. */
struct ds_vnode {
    uint64_t graph;
    ds_node_params params;
    uint64_t *deps;
    uint32_t ndeps;
    struct ds_bnode *real;
    struct ds_vevent *event; /* an event node's, one ref */
    struct ds_gmem *gmem;    /* a memory allocation node's, one ref */
    uint64_t origin;         /* in a clone: the node it was copied from */
    uint32_t mark;           /* scratch for walks over the graph (ops_gstage.c) */
};

/* An export in the server's IPC registry (ops_ipc.c): its entry, and the handle the
 * tenant got, which it gets again when it exports the same thing again. */
struct ds_ipc_export {
    int index;
    unsigned char handle[DS_IPC_HANDLE_SIZE];
};

struct ds_vevent {
    uint64_t ctx;
    unsigned flags;
    struct ds_bevent *real;
    struct ds_ipc_export *exported; /* cuIpcGetEventHandle's, while the event lives */
    int opened;                     /* made by cuIpcOpenEventHandle */
    /* For another server's stream of the tenant to wait on (DS_PEER_EVENT_EXPORT): an
     * interprocess event recorded behind this one's last record, and its export; NULL
     * until such a wait comes. */
    struct ds_bevent *shadow;
    struct ds_ipc_export *shadow_out;
    /* Graph nodes and instantiated graphs that record or wait on it: an event the tenant
     * destroys (gone) lives on, nameless, until the last of them goes (ops_event.c). */
    unsigned refs;
    int gone;
};

/* A loaded module (or library: the same thing to the executor). */
struct ds_vmodule {
    uint64_t ctx;
    struct ds_bmodule *real;
};

/* A kernel of a module, with the parameter layout every launch is checked against. */
struct ds_vfunc {
    uint64_t module;
    char *name;
    struct ds_bfunc *real;
    struct ds_param_layout layout;
};

struct ds_tenant;

/* One area of the executor's handlers (ops/ops_areas.c lists them) as the tenant's
 * lifetime sees it: init when the tenant is set up; at its end, every area's fini in
 * order, then every area's drop with all != 0, before the backend closes; and drop for
 * context ctx alone when the tenant destroys that context.  drop frees what the area
 * holds of context ctx (of every context when all != 0).  Any of them may be NULL. */
struct ds_tenant_area {
    void (*init)(struct ds_tenant *t);
    void (*fini)(struct ds_tenant *t);
    void (*drop)(struct ds_tenant *t, uint64_t ctx, int all);
};

struct ds_tenant_areas {
    const struct ds_tenant_area *v;
    size_t n;
};

struct ds_tenant {
    const struct ds_backend_ops *ops;
    const struct ds_tenant_areas *areas; /* what the handlers keep (ds__tenant_init) */
    struct ds_backend_config cfg;
    struct ds_backend *be; /* opened at the handshake */
    struct ds_device_view view;
    struct ds_handles h;
    struct ds_memtab mem; /* every range the device may touch; kind: ds_range_kind */
    struct ds_account acct; /* device memory held, against the quota */
    uint64_t primary;     /* handle of the primary context once first retained */
    uint64_t next_id;
    int pending;          /* CUresult of the first failed batched call, 0 if none */
    int greeted;          /* hello accepted */
    int captures;         /* streams with capturing set (ds__tenant_set_capturing) */
    int closing;          /* the connection must end after this request */
    char name[DS_NAME_MAX + 1];
    struct ds_shm *shm;
    int slot;
    unsigned char *arena;      /* the tenant's shared host memory, or NULL */
    uint64_t arena_len;
    int arena_fd;               /* the arena's memfd, kept to map parts of it at the
                                 * tenant's addresses (ops_hostreg.c); -1 without one */
    struct ds_memtab host_maps; /* parts of the arena given to the device: base = offset,
                                 * owner = device address, kind = enum ds_host_use,
                                 * data = this process's own mapping of the part at the
                                 * tenant's address, or NULL (the arena's is used) */
    struct ds_memtab vmm_va;    /* cuMemAddressReserve's reservations */
    struct ds_memtab vmm_maps;  /* cuMemMap's mappings: owner = the allocation's handle */
    struct ds_memtab ipc_out;   /* allocations exported (cuIpcGetMemHandle):
                                 * data = struct ds_ipc_export */
    struct ds_memtab ipc_in;    /* other tenants' memory opened (cuIpcOpenMemHandle):
                                 * owner = context, data = its references (ops_ipc.c) */
    struct ds_memtab texobjs;   /* texture and surface objects: base = the value, size 1,
                                 * owner = context, kind = enum ds_texobj_kind */
    uint64_t pool_default;      /* the device's default pool, once named (ops_pool.c) */
    uint64_t pool_current;      /* cuDeviceSetMemPool's; 0: the default pool */
    unsigned bind_gen;          /* the control block's bind_gen last acted on */
    int gate_failed;            /* the device could not wait on the gate: host gate only */
    int stamps_off;             /* the device could not write a progress stamp */
    uint64_t stamped;           /* the last launch stamped */
    unsigned nstamps;           /* stamps made: the next goes in entry nstamps % 32 */
    uint64_t stamp_ns;          /* when the last was made (ds_now_ns) */
    struct ds_bstream *last;    /* the stream of the last launch */
    struct ds_bstream *shadows; /* where event shadows are recorded (ops_ipc.c), or NULL */
    struct ds_binder binder;    /* runs while the device is open */
    uint64_t launches;          /* kernels and graphs launched, published in the control
                                 * block (ds__tenant_launched) */
    int timing;                 /* DETSHARE_LOG=debug: time the backend's launches */
    int own_process;            /* the process serves this tenant alone (an executor, not
                                 * a test or fuzz target serving in-process): its fd 1
                                 * and 2 may become the tenant's (devout.h) */
    uint64_t launch_backend_ns; /* time in the backend's launch, when timing */
    struct ds_bfence *await;    /* left by a synchronising call's handler: its reply
                                 * waits until the device passes this (waits.h) */
    int lost;                   /* the CUresult that ended the device context, or 0:
                                 * every later call fails with it (executor.c) */
    uint64_t lost_ns;           /* when it was seen (ds_now_ns) */
    unsigned faults_seen;       /* the control block's faults last acted on */
    struct ds_bulk bulk;        /* buffers for in-band copy chunks (bulk.h) */
    uint64_t graph_mem, graph_mem_high; /* bytes of graph memory, now and at most */
    struct ds_gcap *gcap;       /* allocations of captures not yet ended (ops_gmem.c) */
    uint32_t ngcap;
    struct ds_hcap *hcap;       /* pageable copies of captures not yet ended (ops_ghcopy.c) */
    uint32_t nhcap;
    struct ds_trace trace;      /* ops being traced (trace.h) */
};

/* Set up empty tables, with `areas` (which outlive t) to set up and free what the
 * handlers keep; the device is opened later, by ds__tenant_open. */
void ds__tenant_init(struct ds_tenant *t, const struct ds_backend_ops *ops,
                     const struct ds_backend_config *cfg, const struct ds_tenant_areas *areas);

/* Open the device for this tenant and read its view.  Deferred to the handshake so that
 * a connection that never says hello (a liveness probe) costs no device context.
 * Returns 0 or DS_E*. */
int ds__tenant_open(struct ds_tenant *t);

/* Free every object of the tenant, then the backend. */
void ds__tenant_fini(struct ds_tenant *t);

/* Take the tenant's shared host arena (a memfd, common/ds_arena.h); fd is consumed.
 * It is mapped at the tenant's hello (ds__tenant_map_arena).
 * Returns 0 or DS_EINVAL for one of the wrong size. */
int ds__tenant_arena(struct ds_tenant *t, int fd);

/* Map the arena taken before, at `base` (the tenant's own address for it) when that
 * range is free here, else anywhere.  At the same address a pointer into page-locked
 * memory means the same on both sides, and the device reaches it at that address too,
 * as natively under unified addressing.  Returns 0 or DS_ENOMEM. */
int ds__tenant_map_arena(struct ds_tenant *t, uint64_t base);

/* Undo one host mapping: its device range, then the backend's mapping, then the
 * mapping at the tenant's address if one was made; managed memory leaves the account. */
void ds__tenant_host_unmap(struct ds_tenant *t, const struct ds_memtab_entry *map);

/* At a kernel boundary, before work on stream s (the gate is open: a closed one held
 * the launch before its handler ran, held.h): when the control process has asked for
 * another binding since the last one, move the tenant's work there (backend bind) and
 * report it in the control block; and, while the policy uses gates, make the GPU wait
 * on the gate too, so that work already submitted stops at the next kernel when the gate
 * closes.  Two atomic loads when nothing changed and no policy gates.  Every kernel and
 * graph launch goes through here. */
void ds__tenant_kernel_boundary(struct ds_tenant *t, struct ds_bstream *s);

/* Once the device is open: make the tenant's gate word and stamps ones the device can
 * use (backend shm_map), so that neither its first kernel nor a capture pays for it. */
void ds__tenant_map_control(struct ds_tenant *t);

/* After a kernel or graph launched on stream s: count it in the control block and have
 * the device stamp its completion there (backend stamp), so that the control process
 * sees what is in flight.  A stamp is a driver call, as costly as the launch itself, so
 * a tenant that launches fast gets one every DS_STAMP_EVERY launches, or DS_STAMP_NS
 * after the last one, whichever comes first (a burst's first launch has one, so its
 * progress shows), and ds__tenant_stamp_tail stamps the last launch when the tenant
 * pauses.  A launch into a capturing stream (capturing != 0) runs later, as a graph, and
 * is not counted. */
#define DS_STAMP_EVERY 16
#define DS_STAMP_NS (200 * 1000u)
void ds__tenant_launched(struct ds_tenant *t, struct ds_bstream *s, int capturing);

/* The tenant has nothing more to submit for now: stamp its last launch if it has none. */
void ds__tenant_stamp_tail(struct ds_tenant *t);

/* Backend stream s is about to be destroyed: the last launch's stamp cannot wait for a
 * later pause to go on it (a later one goes on the legacy stream, which waits for it). */
void ds__tenant_stream_gone(struct ds_tenant *t, struct ds_bstream *s);

/* For a synchronising call's handler (one whose reply is a ds_void_res): its reply is
 * to wait until the device passes the point `at` names, as of now.  Returns
 * CUDA_SUCCESS, or the error to reply with at once. */
CUresult ds__tenant_await(struct ds_tenant *t, const struct ds_fence_at *at);

/* The same for the work submitted so far to backend stream s. */
CUresult ds__tenant_await_stream(struct ds_tenant *t, struct ds_bstream *s);

/* The active context behind handle h, or NULL. */
struct ds_vctx *ds__tenant_ctx(struct ds_tenant *t, uint64_t h);

/* Resolve a tenant stream value to the backend stream (NULL for the NULL, legacy and
 * per-thread default streams).  Returns 0 or DS_EHANDLE. */
int ds__tenant_stream(struct ds_tenant *t, uint64_t h, struct ds_bstream **out);

/* 1 when tenant stream h is being captured into a graph: it began a capture, or joined
 * one by waiting for an event recorded in it (a fork of the capture), which only the
 * backend knows: asked only while one of the tenant's captures is in progress, so that
 * a launch outside captures pays nothing for it.  Inline: the trace (trace.c), which
 * tenant.c calls, asks it too. */
static inline int ds__tenant_capturing(struct ds_tenant *t, uint64_t h)
{
    struct ds_vstream *s = ds_handles_get(&t->h, h, DS_H_STREAM);
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    uint64_t id;

    if (s == NULL || s->capturing)
        return s != NULL;
    if (t->captures == 0)
        return 0;
    return t->ops->capture_info(t->be, s->real, &status, &id) != 0 ||
           status != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Stream s begins (on 1) or ends (0) a capture of its own. */
void ds__tenant_set_capturing(struct ds_tenant *t, struct ds_vstream *s, int on);

/* 0 when [addr, addr+len) lies inside one allocation of this tenant, or in contiguous
 * accessible VMM mappings of one reservation, else DS_ERANGE. */
int ds__tenant_range(const struct ds_tenant *t, uint64_t addr, uint64_t len);

/* Free every stream, event, module and allocation that belongs to context h. */
void ds__tenant_drop_ctx(struct ds_tenant *t, uint64_t h);

/* Give event e (its backend event made) a handle, into *out; e is taken over, and freed
 * with its backend event when no handle is left.  Returns CUDA_SUCCESS or
 * CUDA_ERROR_OUT_OF_MEMORY. */
CUresult ds__tenant_publish_event(struct ds_tenant *t, struct ds_vevent *e, ds_handle *out);

#endif
