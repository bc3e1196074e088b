/*
 * What an executor needs from a device, whatever the device is.  Two implementations:
 * sim (sim.c, a software model for machines without a GPU) and cuda (the real driver
 * with green contexts).  The executor validates every tenant input before
 * calling in here, so a backend may trust its arguments: addresses lie inside live
 * allocations, handles are its own.
 *
 * A NULL stream means the tenant's legacy default stream, with CUDA's semantics: it
 * waits for all blocking streams and they wait for it.  Calls return 0 or DS_E*.
 */
#ifndef DS_BACKEND_H
#define DS_BACKEND_H

#include <cuda.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define DS_ATTR_COUNT CU_DEVICE_ATTRIBUTE_MAX
#define DS_IPC_BLOB 64 /* what a backend's IPC export says, for another executor */

struct ds_shm;
struct ds_shm_stamp;
struct ds_backend;
struct ds_bstream;
struct ds_bevent;
struct ds_bmodule;
struct ds_bfunc;
struct ds_bgraph;
struct ds_bgexec;
struct ds_bnode;
struct ds_bcond;
struct ds_bpmem;
struct ds_bfence;
struct ds_bpool;
struct ds_barray;
struct ds_bmipmap;

/* A kernel's parameter buffer as the driver lays it out: n parameters, each at
 * offset[i] with size[i] bytes, in a buffer of `bytes`.  Arrays owned by the caller of
 * module_get_function, freed with free(). */
struct ds_param_layout {
    uint32_t n;
    uint32_t *offset, *size;
    uint32_t bytes;
};

/* A tensor map as cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col and
 * cuTensorMapEncodeIm2colWide describe it.  The executor checks only its shape: rank in
 * the encoder's range, enums within cuda.h's, and as many array entries as the rank asks
 * for (the rest are 0).  Whether the values make a valid map is for the backend to say,
 * as the driver says it: these are the one input a backend judges itself. */
#define DS_TENSORMAP_RANK 5

enum ds_tensormap_kind {
    DS_TENSORMAP_KIND_TILED,
    DS_TENSORMAP_KIND_IM2COL,
    DS_TENSORMAP_KIND_IM2COL_WIDE
};

struct ds_tensormap_desc {
    enum ds_tensormap_kind kind;
    CUtensorMapDataType dtype;
    unsigned rank;
    uint64_t addr; /* any address: the driver does not ask whose memory it is */
    uint64_t dim[DS_TENSORMAP_RANK];
    uint64_t stride[DS_TENSORMAP_RANK - 1];
    uint32_t box[DS_TENSORMAP_RANK];         /* tiled */
    uint32_t elem_stride[DS_TENSORMAP_RANK];
    /* The pixel box's corners: im2col, rank - 2 offsets each; im2col wide, [0]. */
    int lower[DS_TENSORMAP_RANK - 2], upper[DS_TENSORMAP_RANK - 2];
    uint32_t channels, pixels;               /* im2col, im2col wide */
    CUtensorMapIm2ColWideMode mode;          /* im2col wide */
    CUtensorMapInterleave interleave;
    CUtensorMapSwizzle swizzle;
    CUtensorMapL2promotion l2;
    CUtensorMapFloatOOBfill oob;
};

/* One launch as the tenant asked for it. */
struct ds_launch {
    unsigned grid[3], block[3];
    unsigned shared_mem;
    const void *params; /* param_bytes bytes, laid out as the function's layout says */
    size_t param_bytes;
    const CUlaunchAttribute *attrs; /* checked by the executor; no handles among them */
    unsigned nattrs;
};

/* A strided copy inside device memory: depth slices of height rows of width bytes.  Row
 * y of slice z of a side starts at that side's first byte + (z * rows + y) * pitch; the
 * executor has checked that every row of both sides lies in the tenant's memory. */
struct ds_copy3d {
    uint64_t dst, src;             /* first byte of each side */
    uint64_t dst_pitch, src_pitch; /* bytes from one row to the next */
    uint64_t dst_rows, src_rows;   /* rows from one slice to the next */
    uint64_t width, height, depth;
};

/* A CUDA array's shape as cuArray3DCreate takes it (height 0: 1-D; depth 0: 1-D or
 * 2-D), its format one the executor serves (ds_array_elem) and its flags without
 * SPARSE or DEFERRED_MAPPING. */
struct ds_array_shape {
    uint64_t width, height, depth;
    CUarray_format format;
    unsigned channels;
    unsigned flags;
    unsigned elem; /* bytes of one element (ds_array_elem) */
};

/* One side of a copy that involves an array: the array (x in bytes, y and z in its rows
 * and slices), or device memory when array is NULL, laid out as a ds_copy3d side.  The
 * executor has checked that the box lies inside the array or the tenant's memory. */
struct ds_array_loc {
    struct ds_barray *array;
    uint64_t ptr;
    uint64_t x, y, z;
    uint64_t pitch, rows;
};

struct ds_array_copy {
    struct ds_array_loc dst, src;
    uint64_t width, height, depth; /* width in bytes */
};

/* A texture or surface object's resource, its handles the backend's own and its memory
 * checked to lie in the tenant's. */
struct ds_tex_resource {
    CUresourcetype type;
    struct ds_barray *array;   /* CU_RESOURCE_TYPE_ARRAY */
    struct ds_bmipmap *mipmap; /* CU_RESOURCE_TYPE_MIPMAPPED_ARRAY */
    uint64_t ptr;              /* LINEAR, PITCH2D */
    CUarray_format format;
    unsigned channels;
    uint64_t size;                 /* LINEAR */
    uint64_t width, height, pitch; /* PITCH2D */
    unsigned flags;
};

/* One node of a graph built node by node, its inputs checked by the executor: kernel
 * shapes and parameters as launches are, ranges inside the tenant's memory, events its
 * own.  The backend copies what it keeps. */
enum ds_gnode_kind {
    DS_GNODE_EMPTY,
    DS_GNODE_KERNEL,
    DS_GNODE_MEMSET,
    DS_GNODE_MEMCPY,
    DS_GNODE_EVENT_RECORD,
    DS_GNODE_EVENT_WAIT,
    DS_GNODE_CHILD,
    DS_GNODE_COND,
    DS_GNODE_MEMOP
};

struct ds_gnode_desc {
    enum ds_gnode_kind kind;
    struct ds_bfunc *f;  /* DS_GNODE_KERNEL, with l */
    struct ds_launch l;
    uint64_t dst, src, n; /* DS_GNODE_MEMCPY: n bytes; DS_GNODE_MEMSET: at dst, */
    uint64_t pitch, width, height; /* height rows of width elements, pitch apart */
    uint32_t value;
    unsigned elem_size;
    struct ds_bevent *event; /* DS_GNODE_EVENT_*: lives as long as the node */
    struct ds_bgraph *child; /* DS_GNODE_CHILD: a built graph the node runs a copy of */
    struct ds_bcond *cond;   /* DS_GNODE_COND: a handle of the node's graph, */
    int cond_type;           /* CUgraphConditionalNodeType, */
    unsigned nbodies;        /* and its body graphs, which graph_add_node makes into */
    struct ds_bgraph **bodies; /* bodies[]: graph_destroy frees each, before or after the node */
    const struct ds_memop_desc *memops; /* DS_GNODE_MEMOP: nmemops stream memory operations, */
    unsigned nmemops;                   /* checked as the memops call's are, run in order */
};

/* Where a fence stands: at the work submitted so far to one stream (NULL: the legacy
 * stream), at an event's last record, or at all of the tenant's work. */
enum ds_fence_kind { DS_FENCE_STREAM, DS_FENCE_EVENT, DS_FENCE_ALL };

struct ds_fence_at {
    enum ds_fence_kind kind;
    struct ds_bstream *stream; /* DS_FENCE_STREAM */
    struct ds_bevent *event;   /* DS_FENCE_EVENT */
};

/* JIT options whose value is a number (client/api/link.c sends no others). */
struct ds_jit_options {
    CUjit_option *opt;
    void **val;
    unsigned n;
};

/* One input of a JIT link. */
struct ds_link_in {
    CUjitInputType type;
    const char *name;
    const void *data;
    size_t len;
    struct ds_jit_options options; /* for this input only */
};

/* A JIT link (cuLinkCreate to cuLinkComplete).  The logs are buffers of the sizes given
 * (NULL when 0) that the backend leaves NUL-terminated; it sets wall_ms, and on success
 * image, a malloc'd copy of the linked cubin the caller frees. */
struct ds_link_job {
    const struct ds_link_in *in;
    size_t n;
    struct ds_jit_options options;
    char *info_log, *error_log;
    size_t info_size, error_size;
    float wall_ms;
    void *image;
    size_t image_len;
};

/* One stream memory operation: kind is a CUstreamBatchMemOpType (wait or write of 32 or
 * 64 bits, barrier or flush of remote writes), flags its CUstreamWaitValue_flags or
 * CUstreamWriteValue_flags, value the word compared or written. */
struct ds_memop_desc {
    CUstreamBatchMemOpType kind;
    unsigned flags;
    uint64_t addr;
    uint64_t value;
};

/* A device query (rpcgen's ds_devq_kind): its numbers a and b, and for a capability
 * query n CUatomicOperation values in ops, one answer each. */
struct ds_devq {
    int kind;
    int a;
    unsigned b;
    const int *ops;
    unsigned n;
};

/* The tenant's immutable view of its device. */
struct ds_device_view {
    char name[256];
    unsigned char uuid[16];
    uint64_t total_mem;
    int attrs[DS_ATTR_COUNT];
    int driver_version;
};

struct ds_backend_config {
    int gpu;              /* device ordinal on the host */
    int sim_sms;          /* sim: SM count */
    struct ds_shm *shm;   /* sim: device memory accounting shared by all tenants */
    int slot;             /* this tenant's slot in shm */
    unsigned spin_us;     /* cuda: a synchronisation polls this long before blocking */
    const volatile sig_atomic_t *stop; /* set when the executor is to stop: waits that can
                                        * take seconds give up; NULL: never */
};

/* launch's answer for a kernel that escaped its partition (positive: no error). */
#define DS_LAUNCH_ESCAPED 1

struct ds_backend_ops {
    const char *name;
    int (*open)(const struct ds_backend_config *cfg, struct ds_backend **out);
    void (*close)(struct ds_backend *b); /* frees everything, waits for nothing */
    void (*describe)(struct ds_backend *b, struct ds_device_view *out);

    /* Make size bytes of the tenant's shared host arena at host (page-aligned, mapped in
     * this process) reachable by the device; *addr is the device address.  host_unmap
     * undoes it. */
    int (*host_map)(struct ds_backend *b, void *host, uint64_t size, uint64_t *addr);
    void (*host_unmap)(struct ds_backend *b, uint64_t addr, void *host);
    /* capture_mode: the tenant thread's CUstreamCaptureMode, which decides whether an
     * allocation is allowed while a stream is being captured. */
    int (*dev_alloc)(struct ds_backend *b, uint64_t size, int capture_mode, uint64_t *addr);
    /* cuMemAllocPitch: height rows of at least width bytes, the pitch the device's own
     * choice (*pitch), freed with dev_free.  elem_size (4, 8 or 16) is the tenant's. */
    int (*dev_alloc_pitch)(struct ds_backend *b, uint64_t width, uint64_t height,
                           unsigned elem_size, int capture_mode, uint64_t *addr,
                           uint64_t *pitch);
    int (*dev_free)(struct ds_backend *b, uint64_t addr);
    void (*dev_info)(struct ds_backend *b, uint64_t *free_bytes, uint64_t *total);
    int (*memcpy_htod)(struct ds_backend *b, uint64_t dst, const void *src, size_t n,
                       struct ds_bstream *s);
    /* Completes before it returns: the bytes are in dst. */
    int (*memcpy_dtoh)(struct ds_backend *b, void *dst, uint64_t src, size_t n,
                       struct ds_bstream *s);
    /* In stream order, like CUDA's: dst is the tenant's shared arena, which outlives the
     * copy (memcpy_htod may likewise be given arena memory as its source). */
    int (*memcpy_dtoh_async)(struct ds_backend *b, void *dst, uint64_t src, size_t n,
                             struct ds_bstream *s);
    int (*memcpy_dtod)(struct ds_backend *b, uint64_t dst, uint64_t src, size_t n,
                       struct ds_bstream *s);
    int (*memset)(struct ds_backend *b, uint64_t dst, uint64_t pitch, uint32_t value,
                  unsigned elem_size, uint64_t width, uint64_t height, struct ds_bstream *s);
    int (*memcpy_3d)(struct ds_backend *b, const struct ds_copy3d *c, struct ds_bstream *s);

    int (*stream_create)(struct ds_backend *b, unsigned flags, int priority,
                         struct ds_bstream **out);
    void (*stream_destroy)(struct ds_backend *b, struct ds_bstream *s);
    int (*stream_query)(struct ds_backend *b, struct ds_bstream *s);
    int (*stream_wait_event)(struct ds_backend *b, struct ds_bstream *s, struct ds_bevent *e);

    int (*event_create)(struct ds_backend *b, unsigned flags, struct ds_bevent **out);
    void (*event_destroy)(struct ds_backend *b, struct ds_bevent *e);
    int (*event_record)(struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s);
    int (*event_query)(struct ds_backend *b, struct ds_bevent *e);
    int (*event_elapsed)(struct ds_backend *b, struct ds_bevent *start, struct ds_bevent *end,
                         float *ms);


    /* Fences: how a synchronising call waits without holding the executor, which goes on
     * serving the tenant's other threads meanwhile.  fence_create marks the point `at`
     * names as of now; *out is NULL when the device is already past it (nothing to wait
     * for), and a capturing stream is refused as its synchronisation would be.
     * fence_query returns 0 once the device passed the point, DS_ENOTREADY before, or the
     * error the work ended with.  fence_arm asks to be told when it passes: the backend
     * either writes 1 to eventfd efd from then on (possibly from another thread, and
     * possibly more than once), or sets *wake_ns to the ds_now_ns() time at which to
     * query again.  fence_destroy may come at any time, armed or not. */
    int (*fence_create)(struct ds_backend *b, const struct ds_fence_at *at,
                        struct ds_bfence **out);
    int (*fence_query)(struct ds_backend *b, struct ds_bfence *f);
    int (*fence_arm)(struct ds_backend *b, struct ds_bfence *f, int efd, uint64_t *wake_ns);
    void (*fence_destroy)(struct ds_backend *b, struct ds_bfence *f);
    /* The error that ended the tenant's device context for good, as a CUresult, or 0.
     * A kernel's fault (an illegal address, a device-side assert, ...) is sticky: every
     * later call of that context fails with it.  Under MPS a fault ends the context of
     * every client on the GPU, and the MPS server admits no new client until all of them
     * have exited.  With probe != 0 the backend also asks the device (without waiting),
     * for a context that has made no call since a neighbour's fault. */
    int (*fault)(struct ds_backend *b, int probe);
    /* A CUlimit of the tenant's context: set it when set != 0, then read it back. */
    int (*limit)(struct ds_backend *b, int limit, int set, uint64_t *value);
    /* The undocumented CONTEXT_IDENTITY number of the legacy stream (query 0, the only
     * one asked: docs/export-tables.md, 4.9). */
    int (*ctx_query)(struct ds_backend *b, unsigned query, uint64_t *value);

    /* Modules.  The image is a fatbin container, an ELF cubin or PTX text, already
     * identified and bounded by the executor.  A module serves every pCtx. */
    int (*module_load)(struct ds_backend *b, const void *image, size_t len,
                       struct ds_bmodule **out);
    void (*module_unload)(struct ds_backend *b, struct ds_bmodule *m);
    /* Link job's inputs into one cubin (struct ds_link_job).  Returns 0, or the error the
     * device's linker gave (its logs filled all the same). */
    int (*link)(struct ds_backend *b, struct ds_link_job *job);
    /* The function belongs to m and goes with it. */
    int (*module_get_function)(struct ds_backend *b, struct ds_bmodule *m, const char *name,
                               struct ds_bfunc **out, struct ds_param_layout *layout);
    int (*module_get_global)(struct ds_backend *b, struct ds_bmodule *m, const char *name,
                             uint64_t *addr, uint64_t *size);
    /* The names of m's kernels: *names is an array of *n pointers the caller frees with
     * free(); the names themselves belong to m. */
    int (*module_kernels)(struct ds_backend *b, struct ds_bmodule *m, const char ***names,
                          uint32_t *n);
    int (*func_get_attribute)(struct ds_backend *b, struct ds_bfunc *f, int attr, int *value);
    int (*func_set_attribute)(struct ds_backend *b, struct ds_bfunc *f, int attr, int value);
    int (*occupancy)(struct ds_backend *b, struct ds_bfunc *f, int block_size,
                     size_t dynamic_smem, unsigned flags, int *blocks);
    int (*occupancy_smem)(struct ds_backend *b, struct ds_bfunc *f, int num_blocks,
                          int block_size, size_t *smem);
    /* l: shape and shared memory of the launch (no parameters); cluster: its cluster. */
    int (*occupancy_clusters)(struct ds_backend *b, struct ds_bfunc *f, const struct ds_launch *l,
                              const unsigned cluster[3], int *clusters);
    /* cuOccupancyMaxPotentialClusterSize: the most blocks a cluster of launch l (shape
     * and shared memory) could have. */
    int (*occupancy_cluster_size)(struct ds_backend *b, struct ds_bfunc *f,
                                  const struct ds_launch *l, int *size);
    /* Physical contexts.  Run this tenant's work, from its next piece on, on the SMs of
     * `groups` (bit i: SM group i of ds_sm_groups; 0: the whole device), with no memory
     * copied and every stream's order kept; work already submitted finishes where it
     * is.  The tenant's view of the device never changes.  Returns 0, DS_EBUSY when it
     * cannot happen now (a stream is being captured, or prepare has not made what the
     * move needs yet: try again at a later kernel boundary) or DS_EINVAL for groups the
     * device does not have. */
    int (*bind)(struct ds_backend *b, uint64_t groups);
    /* Get ready to bind to `groups` soon (make what bind needs), from another thread
     * than the one that serves the tenant.  Returns 1 when it made something now, 0
     * when all was ready already, or DS_E*. */
    int (*prepare)(struct ds_backend *b, uint64_t groups);
    /* Make the device itself hold stream s's next work while the 32-bit word at `word`
     * (memory this process shares with the control process) is not 0.  Returns 0 or
     * DS_E*; a backend whose work cannot run ahead of submission does nothing. */
    int (*gate)(struct ds_backend *b, struct ds_bstream *s, const volatile unsigned *word);
    /* A progress stamp (shm.h): have the device write `seq` into *st (memory this process
     * shares with the control process) once the work submitted so far to s is done,
     * without waiting for it here.  Returns 0, DS_EBUSY when s is being captured (its
     * work does not run now: nothing is written), or DS_E*. */
    int (*stamp)(struct ds_backend *b, struct ds_bstream *s, struct ds_shm_stamp *st,
                 uint32_t seq);

    /* The launch's shape and parameters are the executor's checked copy of the
     * tenant's; the backend passes them to the device unchanged.  Returns 0,
     * DS_LAUNCH_ESCAPED when the kernel was launched on the whole device instead of the
     * tenant's SM groups because its thread-block clusters do not fit there (the
     * executor counts these partition escapes), or DS_E*. */
    int (*launch)(struct ds_backend *b, struct ds_bfunc *f, const struct ds_launch *l,
                  struct ds_bstream *s);

    /* Stream capture: work submitted to a capturing stream is recorded, not run, until
     * capture_end makes it a graph.  s is never the legacy stream (the executor refuses). */
    int (*capture_begin)(struct ds_backend *b, struct ds_bstream *s, int mode);
    int (*capture_end)(struct ds_backend *b, struct ds_bstream *s, struct ds_bgraph **out);
    int (*capture_info)(struct ds_backend *b, struct ds_bstream *s, int *status, uint64_t *id);
    int (*graph_instantiate)(struct ds_backend *b, struct ds_bgraph *g, uint64_t flags,
                             struct ds_bgexec **out);
    int (*graph_launch)(struct ds_backend *b, struct ds_bgexec *e, struct ds_bstream *s);
    void (*graph_destroy)(struct ds_backend *b, struct ds_bgraph *g);
    int (*graph_node_count)(struct ds_backend *b, struct ds_bgraph *g, uint64_t *n);
    void (*graph_exec_destroy)(struct ds_backend *b, struct ds_bgexec *e);
    /* Graphs built node by node.  graph_create makes an empty graph (flags: cuGraphCreate's);
     * graph_add_node adds node d to g after deps (ndeps nodes of g); graph_node_destroy
     * takes node n out of g with its edges; graph_edge adds (add != 0) or removes the
     * edge from -> to of g, which the executor has checked exists or not; graph_node_set
     * gives node n of g the description d (of the node's kind: kernel, memset, memcpy,
     * event, or in e only child graph), in g itself when e is NULL, else in e, an
     * instantiated graph of g, from its next launch on.  A child graph node runs a copy
     * of d->child made when it is added or set; a new one in e must have the old one's
     * shape.  A graph with a cycle fails to instantiate.  Nodes go with their graph. */
    int (*graph_create)(struct ds_backend *b, unsigned flags, struct ds_bgraph **out);
    int (*graph_add_node)(struct ds_backend *b, struct ds_bgraph *g,
                          const struct ds_gnode_desc *d, struct ds_bnode *const *deps,
                          size_t ndeps, struct ds_bnode **out);
    void (*graph_node_destroy)(struct ds_backend *b, struct ds_bgraph *g, struct ds_bnode *n);
    int (*graph_edge)(struct ds_backend *b, struct ds_bgraph *g, struct ds_bnode *from,
                      struct ds_bnode *to, int add);
    int (*graph_node_set)(struct ds_backend *b, struct ds_bgraph *g, struct ds_bgexec *e,
                          struct ds_bnode *n, const struct ds_gnode_desc *d);
    /* A conditional handle of g, with its default value and CU_GRAPH_COND_* flags; the
     * number a kernel names it by in *value.  It goes with g. */
    int (*graph_cond_create)(struct ds_backend *b, struct ds_bgraph *g, unsigned dflt,
                             unsigned flags, struct ds_bcond **out, uint64_t *value);
    /* cuGraphExecUpdate: e runs g's work from its next launch on when g has the shape of
     * the graph e was made from; *result is the CUgraphExecUpdateResult (e unchanged
     * unless CU_GRAPH_EXEC_UPDATE_SUCCESS).  Nodes of e keep their identity. */
    int (*graph_exec_update)(struct ds_backend *b, struct ds_bgexec *e, struct ds_bgraph *g,
                             int *result);
    /* Node n of e's graph runs (on != 0) or is skipped at e's next launches. */
    int (*graph_node_enable)(struct ds_backend *b, struct ds_bgexec *e, struct ds_bnode *n,
                             int on);

    /* Virtual memory management (cuMemCreate and friends).  A reservation is device
     * address space with nothing behind it; a physical allocation (ds_bpmem) is device
     * memory with no address; vmm_map puts part of one at an address inside a
     * reservation and vmm_unmap takes it away again.  prop is the tenant's request, with
     * its location the tenant's device (id 0), already checked; the executor checks
     * every size, address and offset against vmm_granularity's minimum and against the
     * tenant's reservations and mappings, so a backend may trust them. */
    int (*vmm_granularity)(struct ds_backend *b, const CUmemAllocationProp *prop,
                           int recommended, uint64_t *out);
    /* hint: an address the tenant would like (0: none), taken when it is free. */
    int (*vmm_reserve)(struct ds_backend *b, uint64_t size, uint64_t align, uint64_t hint,
                       uint64_t *addr);
    void (*vmm_free)(struct ds_backend *b, uint64_t addr, uint64_t size);
    /* Sets prop->allocFlags.compressionType to what the allocation really got. */
    int (*vmm_create)(struct ds_backend *b, uint64_t size, CUmemAllocationProp *prop,
                      struct ds_bpmem **out);
    void (*vmm_release)(struct ds_backend *b, struct ds_bpmem *m); /* never while mapped */
    int (*vmm_map)(struct ds_backend *b, uint64_t addr, uint64_t size, struct ds_bpmem *m,
                   uint64_t offset);
    void (*vmm_unmap)(struct ds_backend *b, uint64_t addr, uint64_t size); /* one vmm_map */
    /* CUmemAccess_flags for the tenant's device over mapped [addr, addr+size). */
    int (*vmm_set_access)(struct ds_backend *b, uint64_t addr, uint64_t size, unsigned flags);

    /* Tensor maps: *out encoded from d, or DS_EINVAL (or the driver's own CUresult) when
     * d is not a map the device can use; and a map of the tenant's (any 128 bytes) with
     * its address replaced, in place. */
    int (*tensormap_encode)(struct ds_backend *b, const struct ds_tensormap_desc *d,
                            CUtensorMap *out);
    int (*tensormap_replace)(struct ds_backend *b, CUtensorMap *map, uint64_t addr);

    /* CUDA IPC between executors (server/ipcreg.h keeps the exports).  ipc_mem_export
     * makes the dev_alloc allocation [addr, addr+size), whole, reachable by other
     * executors until dev_free, and writes what opening it takes to blob; ipc_mem_open
     * maps one that another executor exported (its blob and size, from the registry;
     * flags: CUipcMem_flags) at *addr, until ipc_mem_close.  Mappings opened elsewhere
     * outlive the exporter's dev_free on the sim; on a GPU they do what the driver does.
     * ipc_event_export and ipc_event_open do the same for an event created with
     * CU_EVENT_INTERPROCESS (the executor exports no event it opened); an opened event
     * orders work across executors and goes with event_destroy.  An open returns
     * DS_EHANDLE when the export is gone, or the driver's own error. */
    int (*ipc_mem_export)(struct ds_backend *b, uint64_t addr, uint64_t size,
                          unsigned char blob[DS_IPC_BLOB]);
    int (*ipc_mem_open)(struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],
                        uint64_t size, unsigned flags, uint64_t *addr);
    void (*ipc_mem_close)(struct ds_backend *b, uint64_t addr);
    int (*ipc_event_export)(struct ds_backend *b, struct ds_bevent *e,
                            unsigned char blob[DS_IPC_BLOB]);
    int (*ipc_event_open)(struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],
                          struct ds_bevent **out);

    /* Memory pools and the stream-ordered allocator (cuMemAllocAsync, cuMemPool*).
     * pool_default gives the device's default pool, pool_create a new one from checked
     * properties (device memory of the tenant's device, handle types none); either is let
     * go with pool_destroy, which the executor calls only once none of the pool's
     * allocations is live, and which frees the memory the pool keeps (the default pool
     * itself stays the device's).  pool_alloc makes size bytes usable by work submitted
     * to s after it, at *addr; pool_free gives an allocation of p back once the work
     * submitted to s before it is done (NULL s: the legacy stream).  pool_attr reads, or
     * sets (set != 0) then reads, a CUmemPool_attribute whose value and settability the
     * executor has checked; pool_trim releases what the pool keeps beyond keep bytes, as
     * far as it safely can.  pool_alloc returns DS_ENOMEM when the device is full. */
    int (*pool_default)(struct ds_backend *b, struct ds_bpool **out);
    int (*pool_create)(struct ds_backend *b, uint64_t max_size, unsigned usage,
                       struct ds_bpool **out);
    void (*pool_destroy)(struct ds_backend *b, struct ds_bpool *p);
    int (*pool_alloc)(struct ds_backend *b, struct ds_bpool *p, uint64_t size,
                      struct ds_bstream *s, uint64_t *addr);
    int (*pool_free)(struct ds_backend *b, struct ds_bpool *p, uint64_t addr,
                     struct ds_bstream *s);
    int (*pool_attr)(struct ds_backend *b, struct ds_bpool *p, int attr, int set,
                     uint64_t *value);
    int (*pool_trim)(struct ds_backend *b, struct ds_bpool *p, uint64_t keep);

    /* CUDA arrays and mipmapped arrays (shapes checked by the executor: levels is no more
     * than the shape has).  A level's array belongs to its mipmapped array and goes with
     * it.  array_copy runs c in stream order; array_write copies the packed box at src
     * (the executor's buffer, free to go once the call returns) into dst in stream
     * order; array_read copies src's box, packed, to dst and completes before it
     * returns.  The executor refuses these on a capturing stream. */
    int (*array_create)(struct ds_backend *b, const struct ds_array_shape *d,
                        struct ds_barray **out);
    void (*array_destroy)(struct ds_backend *b, struct ds_barray *a);
    int (*mipmap_create)(struct ds_backend *b, const struct ds_array_shape *d, unsigned levels,
                         struct ds_bmipmap **out);
    void (*mipmap_destroy)(struct ds_backend *b, struct ds_bmipmap *m);
    int (*mipmap_level)(struct ds_backend *b, struct ds_bmipmap *m, unsigned level,
                        struct ds_barray **out);
    int (*array_copy)(struct ds_backend *b, const struct ds_array_copy *c, struct ds_bstream *s);
    int (*array_write)(struct ds_backend *b, const struct ds_array_loc *dst, const void *src,
                       uint64_t width, uint64_t height, uint64_t depth, struct ds_bstream *s);
    int (*array_read)(struct ds_backend *b, void *dst, const struct ds_array_loc *src,
                      uint64_t width, uint64_t height, uint64_t depth, struct ds_bstream *s);
    /* Texture and surface objects: *out is the value kernels receive.  The descriptors
     * are the tenant's, enums checked to lie in cuda.h's ranges (view: NULL for none);
     * whether they make an object the device can use is the backend's to say, as the
     * driver says it.  A destroyed value is one tex_create or surf_create gave. */
    int (*tex_create)(struct ds_backend *b, const struct ds_tex_resource *r,
                      const CUDA_TEXTURE_DESC *desc, const CUDA_RESOURCE_VIEW_DESC *view,
                      uint64_t *out);
    void (*tex_destroy)(struct ds_backend *b, uint64_t obj);
    int (*surf_create)(struct ds_backend *b, const struct ds_tex_resource *r, uint64_t *out);
    void (*surf_destroy)(struct ds_backend *b, uint64_t obj);
    /* Stream memory operations (cuStreamBatchMemOp and the wait and write value calls):
     * n operations, in order, on s.  Each address is a word of the tenant's own memory,
     * aligned to its size, that the executor checked; op and flags are cuda.h's values,
     * checked too. */
    int (*memops)(struct ds_backend *b, struct ds_bstream *s, const struct ds_memop_desc *ops,
                  unsigned n);
    /* A device query the tenant's view cannot answer (struct ds_devq): the answers in
     * values[0..n), n as the query says.  Returns 0, DS_ENOTSUP or the driver's CUresult
     * as DS_ECU. */
    int (*dev_query)(struct ds_backend *b, const struct ds_devq *q, uint64_t *values);
};

extern const struct ds_backend_ops ds_sim_backend;
extern const struct ds_backend_ops ds_cuda_backend;

/* How a device's SMs are handed out: in `count` aligned groups of `size` SMs (an H100's
 * 132 SMs: 16 groups of 8, and 4 SMs no partition uses).  The same group index names
 * the same SMs in every executor, MPS clients included. */
struct ds_sm_groups {
    unsigned sms;   /* the whole device */
    unsigned size;  /* SMs per group */
    unsigned count; /* at most 64 */
};

/* The sim's groups: the H100's granularity of 8 SMs. */
void ds_sim_sm_groups(int sms, struct ds_sm_groups *out);

/* Whether GPU `gpu` can be served by the cuda backend: 0 with its SM groups in *groups
 * and its memory in *memory (0 when the driver did not say), or a DS_E* code with the
 * reason in why.  Runs the check in a short-lived child
 * process, so that the caller never initialises CUDA itself (CUDA does not survive a
 * fork after cuInit). */
int ds_cuda_probe(int gpu, struct ds_sm_groups *groups, uint64_t *memory, char *why,
                  size_t len);

#endif
