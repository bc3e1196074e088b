/*
 * The one list of a device backend's operations (backend.h says what a backend is).  Each
 * entry is X(return type, name, (parameters)); the list makes struct ds_backend_ops, each
 * backend's prototypes (ds__<backend>_<name>) and each backend's table, so that an
 * operation a backend lacks is a link error rather than a NULL pointer called at run
 * time.  A backend that cannot do an operation says so in its own function
 * (DS_ENOTSUP).  Add an operation here, then in every backend.
 */
#ifndef DS_BACKEND_OPS_H
#define DS_BACKEND_OPS_H

#define DS_BACKEND_OPS(X)                                                                      \
    X(int, open, (const struct ds_backend_config *cfg, struct ds_backend **out))               \
    /* frees everything, waits for nothing */                                                  \
    X(void, close, (struct ds_backend *b))                                                     \
    X(void, describe, (struct ds_backend *b, struct ds_device_view *out))                      \
                                                                                               \
    /* Make size bytes of the tenant's shared host arena at host (page-aligned, mapped in      \
     * this process) reachable by the device; *addr is the device address.  host_unmap         \
     * undoes it. */                                                                           \
    X(int, host_map, (struct ds_backend *b, void *host, uint64_t size, uint64_t *addr))        \
    X(void, host_unmap, (struct ds_backend *b, uint64_t addr, void *host))                     \
    /* capture_mode: the tenant thread's CUstreamCaptureMode, which decides whether an         \
     * allocation is allowed while a stream is being captured. */                              \
    X(int, dev_alloc, (struct ds_backend *b, uint64_t size, int capture_mode,                  \
                       uint64_t *addr))                                                        \
    /* cuMemAllocPitch: height rows of at least width bytes, the pitch the device's own        \
     * choice (*pitch), freed with dev_free.  elem_size (4, 8 or 16) is the tenant's. */       \
    X(int, dev_alloc_pitch, (struct ds_backend *b, uint64_t width, uint64_t height,            \
                             unsigned elem_size, int capture_mode, uint64_t *addr,             \
                             uint64_t *pitch))                                                 \
    X(int, dev_free, (struct ds_backend *b, uint64_t addr))                                    \
    X(void, dev_info, (struct ds_backend *b, uint64_t *free_bytes, uint64_t *total))           \
    X(int, memcpy_htod, (struct ds_backend *b, uint64_t dst, const void *src, size_t n,        \
                         struct ds_bstream *s))                                                \
    /* Completes before it returns: the bytes are in dst. */                                   \
    X(int, memcpy_dtoh, (struct ds_backend *b, void *dst, uint64_t src, size_t n,              \
                         struct ds_bstream *s))                                                \
    /* In stream order, like CUDA's: dst is the tenant's shared arena, which outlives the      \
     * copy (memcpy_htod may likewise be given arena memory as its source). */                 \
    X(int, memcpy_dtoh_async, (struct ds_backend *b, void *dst, uint64_t src, size_t n,        \
                               struct ds_bstream *s))                                          \
    X(int, memcpy_dtod, (struct ds_backend *b, uint64_t dst, uint64_t src, size_t n,           \
                         struct ds_bstream *s))                                                \
    X(int, memset, (struct ds_backend *b, uint64_t dst, uint64_t pitch, uint32_t value,        \
                    unsigned elem_size, uint64_t width, uint64_t height,                       \
                    struct ds_bstream *s))                                                     \
    X(int, memcpy_3d, (struct ds_backend *b, const struct ds_copy3d *c,                        \
                       struct ds_bstream *s))                                                  \
                                                                                               \
    X(int, stream_create, (struct ds_backend *b, unsigned flags, int priority,                 \
                           struct ds_bstream **out))                                           \
    X(void, stream_destroy, (struct ds_backend *b, struct ds_bstream *s))                      \
    X(int, stream_query, (struct ds_backend *b, struct ds_bstream *s))                         \
    X(int, stream_wait_event, (struct ds_backend *b, struct ds_bstream *s,                     \
                               struct ds_bevent *e))                                           \
                                                                                               \
    X(int, event_create, (struct ds_backend *b, unsigned flags, struct ds_bevent **out))       \
    X(void, event_destroy, (struct ds_backend *b, struct ds_bevent *e))                        \
    X(int, event_record, (struct ds_backend *b, struct ds_bevent *e, struct ds_bstream *s))    \
    X(int, event_query, (struct ds_backend *b, struct ds_bevent *e))                           \
    X(int, event_elapsed, (struct ds_backend *b, struct ds_bevent *start,                      \
                           struct ds_bevent *end, float *ms))                                  \
                                                                                               \
    /* Fences: how a synchronising call waits without holding the executor, which goes on      \
     * serving the tenant's other threads meanwhile.  fence_create marks the point `at`        \
     * names as of now; *out is NULL when the device is already past it (nothing to wait       \
     * for), and a capturing stream is refused as its synchronisation would be.                \
     * fence_query returns 0 once the device passed the point, DS_ENOTREADY before, or the     \
     * error the work ended with.  fence_arm asks to be told when it passes: the backend       \
     * either writes 1 to eventfd efd from then on (possibly from another thread, and          \
     * possibly more than once), or sets *wake_ns to the ds_now_ns() time at which to          \
     * query again.  fence_destroy may come at any time, armed or not. */                      \
    X(int, fence_create, (struct ds_backend *b, const struct ds_fence_at *at,                  \
                          struct ds_bfence **out))                                             \
    X(int, fence_query, (struct ds_backend *b, struct ds_bfence *f))                           \
    X(int, fence_arm, (struct ds_backend *b, struct ds_bfence *f, int efd,                     \
                       uint64_t *wake_ns))                                                     \
    X(void, fence_destroy, (struct ds_backend *b, struct ds_bfence *f))                        \
    /* The error that ended the tenant's device context for good, as a CUresult, or 0.         \
     * A kernel's fault (an illegal address, a device-side assert, ...) is sticky: every       \
     * later call of that context fails with it.  Under MPS a fault ends the context of        \
     * every client on the GPU, and the MPS server admits no new client until all of them      \
     * have exited.  With probe != 0 the backend also asks the device (without waiting),       \
     * for a context that has made no call since a neighbour's fault. */                       \
    X(int, fault, (struct ds_backend *b, int probe))                                           \
    /* A CUlimit of the tenant's context: set it when set != 0, then read it back. */          \
    X(int, limit, (struct ds_backend *b, int limit, int set, uint64_t *value))                 \
    /* The undocumented CONTEXT_IDENTITY number of the legacy stream (query 0, the only   \
     * one asked: docs/export-tables.md, 4.9). */                                             \
    X(int, ctx_query, (struct ds_backend *b, unsigned query, uint64_t *value))                 \
                                                                                               \
    /* Modules.  The image is a fatbin container, an ELF cubin or PTX text, already            \
     * identified and bounded by the executor.  A module serves every pCtx. */                 \
    X(int, module_load, (struct ds_backend *b, const void *image, size_t len,                  \
                         struct ds_bmodule **out))                                             \
    X(void, module_unload, (struct ds_backend *b, struct ds_bmodule *m))                       \
    /* Link job's inputs into one cubin (struct ds_link_job).  Returns 0, or the error the     \
     * device's linker gave (its logs filled all the same). */                                 \
    X(int, link, (struct ds_backend *b, struct ds_link_job *job))                              \
    /* The function belongs to m and goes with it. */                                          \
    X(int, module_get_function, (struct ds_backend *b, struct ds_bmodule *m,                   \
                                 const char *name, struct ds_bfunc **out,                      \
                                 struct ds_param_layout *layout))                              \
    X(int, module_get_global, (struct ds_backend *b, struct ds_bmodule *m, const char *name,   \
                               uint64_t *addr, uint64_t *size))                                \
    /* The names of m's kernels: *names is an array of *n pointers the caller frees with       \
     * free(); the names themselves belong to m. */                                            \
    X(int, module_kernels, (struct ds_backend *b, struct ds_bmodule *m, const char ***names,   \
                            uint32_t *n))                                                      \
    X(int, func_get_attribute, (struct ds_backend *b, struct ds_bfunc *f, int attr,            \
                                int *value))                                                   \
    X(int, func_set_attribute, (struct ds_backend *b, struct ds_bfunc *f, int attr,            \
                                int value))                                                    \
    X(int, occupancy, (struct ds_backend *b, struct ds_bfunc *f, int block_size,               \
                       size_t dynamic_smem, unsigned flags, int *blocks))                      \
    X(int, occupancy_smem, (struct ds_backend *b, struct ds_bfunc *f, int num_blocks,          \
                            int block_size, size_t *smem))                                     \
    /* l: shape and shared memory of the launch (no parameters); cluster: its cluster. */      \
    X(int, occupancy_clusters, (struct ds_backend *b, struct ds_bfunc *f,                      \
                                const struct ds_launch *l, const unsigned cluster[3],          \
                                int *clusters))                                                \
    /* cuOccupancyMaxPotentialClusterSize: the most blocks a cluster of launch l (shape        \
     * and shared memory) could have. */                                                       \
    X(int, occupancy_cluster_size, (struct ds_backend *b, struct ds_bfunc *f,                  \
                                    const struct ds_launch *l, int *size))                     \
    /* Physical contexts.  Run this tenant's work, from its next piece on, on the SMs of       \
     * `groups` (bit i: SM group i of ds_sm_groups; 0: the whole device), with no memory       \
     * copied and every stream's order kept; work already submitted finishes where it          \
     * is.  The tenant's view of the device never changes.  Returns 0, DS_EBUSY when it        \
     * cannot happen now (a stream is being captured, or prepare has not made what the         \
     * move needs yet: try again at a later kernel boundary) or DS_EINVAL for groups the       \
     * device does not have. */                                                                \
    X(int, bind, (struct ds_backend *b, uint64_t groups))                                      \
    /* Get ready to bind to `groups` soon (make what bind needs), from another thread          \
     * than the one that serves the tenant.  Returns 1 when it made something now, 0           \
     * when all was ready already, or DS_E*. */                                                \
    X(int, prepare, (struct ds_backend *b, uint64_t groups))                                   \
    /* Make the device itself hold stream s's next work while the 32-bit word at `word`        \
     * (memory this process shares with the control process) is not 0.  Returns 0 or           \
     * DS_E*; a backend whose work cannot run ahead of submission does nothing. */             \
    X(int, gate, (struct ds_backend *b, struct ds_bstream *s, const volatile unsigned *word))  \
    /* A progress stamp (shm.h): have the device write `seq` into *st (memory this process     \
     * shares with the control process) once the work submitted so far to s is done,           \
     * without waiting for it here.  Returns 0, DS_EBUSY when s is being captured (its         \
     * work does not run now: nothing is written), or DS_E*. */                                \
    X(int, stamp, (struct ds_backend *b, struct ds_bstream *s, struct ds_shm_stamp *st,        \
                   uint32_t seq))                                                              \
    /* Make the word at `word` (memory this process shares with the control process) one     \
     * gates and stamps can use, before any does: registering it costs the first kernel        \
     * behind it about a millisecond, and during a capture it would end the capture.           \
     * Returns 0 or DS_E*. */                                                                  \
    X(int, shm_map, (struct ds_backend *b, const volatile void *word))                         \
                                                                                               \
    /* The launch's shape and parameters are the executor's checked copy of the                \
     * tenant's; the backend passes them to the device unchanged.  Returns 0,                  \
     * DS_LAUNCH_ESCAPED when the kernel was launched on the whole device instead of the       \
     * tenant's SM groups because its thread-block clusters do not fit there (the              \
     * executor counts these partition escapes), or DS_E*. */                                  \
    X(int, launch, (struct ds_backend *b, struct ds_bfunc *f, const struct ds_launch *l,       \
                    struct ds_bstream *s))                                                     \
                                                                                               \
    /* Stream capture: work submitted to a capturing stream is recorded, not run, until        \
     * capture_end makes it a graph.  s is never the legacy stream (the executor refuses). */  \
    X(int, capture_begin, (struct ds_backend *b, struct ds_bstream *s, int mode))              \
    X(int, capture_end, (struct ds_backend *b, struct ds_bstream *s, struct ds_bgraph **out))  \
    X(int, capture_info, (struct ds_backend *b, struct ds_bstream *s, int *status,             \
                          uint64_t *id))                                                       \
    X(int, graph_instantiate, (struct ds_backend *b, struct ds_bgraph *g, uint64_t flags,      \
                               struct ds_bgexec **out))                                        \
    X(int, graph_launch, (struct ds_backend *b, struct ds_bgexec *e, struct ds_bstream *s))    \
    X(void, graph_destroy, (struct ds_backend *b, struct ds_bgraph *g))                        \
    X(int, graph_node_count, (struct ds_backend *b, struct ds_bgraph *g, uint64_t *n))         \
    X(void, graph_exec_destroy, (struct ds_backend *b, struct ds_bgexec *e))                   \
    /* Graphs built node by node.  graph_create makes an empty graph (flags: cuGraphCreate's); \
     * graph_add_node adds node d to g after deps (ndeps nodes of g); graph_node_destroy       \
     * takes node n out of g with its edges; graph_edge adds (add != 0) or removes the         \
     * edge from -> to of g, which the executor has checked exists or not; graph_node_set      \
     * gives node n of g the description d (of the node's kind: kernel, memset, memcpy,        \
     * event, or in e only child graph), in g itself when e is NULL, else in e, an             \
     * instantiated graph of g, from its next launch on.  A child graph node runs a copy       \
     * of d->child made when it is added or set; a new one in e must have the old one's        \
     * shape.  A graph with a cycle fails to instantiate.  Nodes go with their graph. */       \
    X(int, graph_create, (struct ds_backend *b, unsigned flags, struct ds_bgraph **out))       \
    X(int, graph_add_node, (struct ds_backend *b, struct ds_bgraph *g,                         \
                            const struct ds_gnode_desc *d, struct ds_bnode *const *deps,       \
                            size_t ndeps, struct ds_bnode **out))                              \
    X(void, graph_node_destroy, (struct ds_backend *b, struct ds_bgraph *g,                    \
                                 struct ds_bnode *n))                                          \
    X(int, graph_edge, (struct ds_backend *b, struct ds_bgraph *g, struct ds_bnode *from,      \
                        struct ds_bnode *to, int add))                                         \
    X(int, graph_node_set, (struct ds_backend *b, struct ds_bgraph *g, struct ds_bgexec *e,    \
                            struct ds_bnode *n, const struct ds_gnode_desc *d))                \
    /* A conditional handle of g, with its default value and CU_GRAPH_COND_* flags; the        \
     * number a kernel names it by in *value.  It goes with g. */                              \
    X(int, graph_cond_create, (struct ds_backend *b, struct ds_bgraph *g, unsigned dflt,       \
                               unsigned flags, struct ds_bcond **out, uint64_t *value))        \
    /* cuGraphExecUpdate: e runs g's work from its next launch on when g has the shape of      \
     * the graph e was made from; *result is the CUgraphExecUpdateResult (e unchanged          \
     * unless CU_GRAPH_EXEC_UPDATE_SUCCESS).  Nodes of e keep their identity. */               \
    X(int, graph_exec_update, (struct ds_backend *b, struct ds_bgexec *e,                      \
                               struct ds_bgraph *g, int *result))                              \
    /* Node n of e's graph runs (on != 0) or is skipped at e's next launches. */               \
    X(int, graph_node_enable, (struct ds_backend *b, struct ds_bgexec *e, struct ds_bnode *n,  \
                               int on))                                                        \
                                                                                               \
    /* Virtual memory management (cuMemCreate and friends).  A reservation is device           \
     * address space with nothing behind it; a physical allocation (ds_bpmem) is device        \
     * memory with no address; vmm_map puts part of one at an address inside a                 \
     * reservation and vmm_unmap takes it away again.  prop is the tenant's request, with      \
     * its location the tenant's device (id 0), already checked; the executor checks           \
     * every size, address and offset against vmm_granularity's minimum and against the        \
     * tenant's reservations and mappings, so a backend may trust them. */                     \
    X(int, vmm_granularity, (struct ds_backend *b, const CUmemAllocationProp *prop,            \
                             int recommended, uint64_t *out))                                  \
    /* hint: an address the tenant would like (0: none), taken when it is free. */             \
    X(int, vmm_reserve, (struct ds_backend *b, uint64_t size, uint64_t align, uint64_t hint,   \
                         uint64_t *addr))                                                      \
    X(void, vmm_free, (struct ds_backend *b, uint64_t addr, uint64_t size))                    \
    /* Sets prop->allocFlags.compressionType to what the allocation really got. */             \
    X(int, vmm_create, (struct ds_backend *b, uint64_t size, CUmemAllocationProp *prop,        \
                        struct ds_bpmem **out))                                                \
    /* never while mapped */                                                                   \
    X(void, vmm_release, (struct ds_backend *b, struct ds_bpmem *m))                           \
    X(int, vmm_map, (struct ds_backend *b, uint64_t addr, uint64_t size, struct ds_bpmem *m,   \
                     uint64_t offset))                                                         \
    /* one vmm_map */                                                                          \
    X(void, vmm_unmap, (struct ds_backend *b, uint64_t addr, uint64_t size))                   \
    /* CUmemAccess_flags for the tenant's device over mapped [addr, addr+size). */             \
    X(int, vmm_set_access, (struct ds_backend *b, uint64_t addr, uint64_t size,                \
                            unsigned flags))                                                   \
                                                                                               \
    /* Tensor maps: *out encoded from d, or DS_EINVAL (or the driver's own CUresult) when      \
     * d is not a map the device can use; and a map of the tenant's (any 128 bytes) with       \
     * its address replaced, in place. */                                                      \
    X(int, tensormap_encode, (struct ds_backend *b, const struct ds_tensormap_desc *d,         \
                              CUtensorMap *out))                                               \
    X(int, tensormap_replace, (struct ds_backend *b, CUtensorMap *map, uint64_t addr))         \
                                                                                               \
    /* CUDA IPC between executors (server/ipcreg.h keeps the exports).  ipc_mem_export         \
     * makes the dev_alloc allocation [addr, addr+size), whole, reachable by other             \
     * executors until dev_free, and writes what opening it takes to blob; ipc_mem_open        \
     * maps one that another executor exported (its blob and size, from the registry;          \
     * flags: CUipcMem_flags) at *addr, until ipc_mem_close.  Mappings opened elsewhere        \
     * outlive the exporter's dev_free on the sim; on a GPU they do what the driver does.      \
     * ipc_event_export and ipc_event_open do the same for an event created with               \
     * CU_EVENT_INTERPROCESS (the executor exports no event it opened); an opened event        \
     * orders work across executors and goes with event_destroy.  An open returns              \
     * DS_EHANDLE when the export is gone, or the driver's own error. */                       \
    X(int, ipc_mem_export, (struct ds_backend *b, uint64_t addr, uint64_t size,                \
                            unsigned char blob[DS_IPC_BLOB]))                                  \
    X(int, ipc_mem_open, (struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],         \
                          uint64_t size, unsigned flags, uint64_t *addr))                      \
    X(void, ipc_mem_close, (struct ds_backend *b, uint64_t addr))                              \
    X(int, ipc_event_export, (struct ds_backend *b, struct ds_bevent *e,                       \
                              unsigned char blob[DS_IPC_BLOB]))                                \
    X(int, ipc_event_open, (struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],       \
                            struct ds_bevent **out))                                           \
                                                                                               \
    /* Memory pools and the stream-ordered allocator (cuMemAllocAsync, cuMemPool*).            \
     * pool_default gives the device's default pool, pool_create a new one from checked        \
     * properties (device memory of the tenant's device, handle types none); either is let     \
     * go with pool_destroy, which the executor calls only once none of the pool's             \
     * allocations is live, and which frees the memory the pool keeps (the default pool        \
     * itself stays the device's).  pool_alloc makes size bytes usable by work submitted       \
     * to s after it, at *addr; pool_free gives an allocation of p back once the work          \
     * submitted to s before it is done (NULL s: the legacy stream).  pool_attr reads, or      \
     * sets (set != 0) then reads, a CUmemPool_attribute whose value and settability the       \
     * executor has checked; pool_trim releases what the pool keeps beyond keep bytes, as      \
     * far as it safely can.  pool_alloc returns DS_ENOMEM when the device is full. */         \
    X(int, pool_default, (struct ds_backend *b, struct ds_bpool **out))                        \
    X(int, pool_create, (struct ds_backend *b, uint64_t max_size, unsigned usage,              \
                         struct ds_bpool **out))                                               \
    X(void, pool_destroy, (struct ds_backend *b, struct ds_bpool *p))                          \
    X(int, pool_alloc, (struct ds_backend *b, struct ds_bpool *p, uint64_t size,               \
                        struct ds_bstream *s, uint64_t *addr))                                 \
    X(int, pool_free, (struct ds_backend *b, struct ds_bpool *p, uint64_t addr,                \
                       struct ds_bstream *s))                                                  \
    X(int, pool_attr, (struct ds_backend *b, struct ds_bpool *p, int attr, int set,            \
                       uint64_t *value))                                                       \
    X(int, pool_trim, (struct ds_backend *b, struct ds_bpool *p, uint64_t keep))               \
                                                                                               \
    /* CUDA arrays and mipmapped arrays (shapes checked by the executor: levels is no more     \
     * than the shape has).  A level's array belongs to its mipmapped array and goes with      \
     * it.  array_copy runs c in stream order; array_write copies the packed box at src        \
     * (the executor's buffer, free to go once the call returns) into dst in stream            \
     * order; array_read copies src's box, packed, to dst and completes before it              \
     * returns.  The executor refuses these on a capturing stream. */                          \
    X(int, array_create, (struct ds_backend *b, const struct ds_array_shape *d,                \
                          struct ds_barray **out))                                             \
    X(void, array_destroy, (struct ds_backend *b, struct ds_barray *a))                        \
    X(int, mipmap_create, (struct ds_backend *b, const struct ds_array_shape *d,               \
                           unsigned levels, struct ds_bmipmap **out))                          \
    X(void, mipmap_destroy, (struct ds_backend *b, struct ds_bmipmap *m))                      \
    X(int, mipmap_level, (struct ds_backend *b, struct ds_bmipmap *m, unsigned level,          \
                          struct ds_barray **out))                                             \
    X(int, array_copy, (struct ds_backend *b, const struct ds_array_copy *c,                   \
                        struct ds_bstream *s))                                                 \
    X(int, array_write, (struct ds_backend *b, const struct ds_array_loc *dst,                 \
                         const void *src, uint64_t width, uint64_t height, uint64_t depth,     \
                         struct ds_bstream *s))                                                \
    X(int, array_read, (struct ds_backend *b, void *dst, const struct ds_array_loc *src,       \
                        uint64_t width, uint64_t height, uint64_t depth,                       \
                        struct ds_bstream *s))                                                 \
    /* Texture and surface objects: *out is the value kernels receive.  The descriptors        \
     * are the tenant's, enums checked to lie in cuda.h's ranges (view: NULL for none);        \
     * whether they make an object the device can use is the backend's to say, as the          \
     * driver says it.  A destroyed value is one tex_create or surf_create gave. */            \
    X(int, tex_create, (struct ds_backend *b, const struct ds_tex_resource *r,                 \
                        const CUDA_TEXTURE_DESC *desc, const CUDA_RESOURCE_VIEW_DESC *view,    \
                        uint64_t *out))                                                        \
    X(void, tex_destroy, (struct ds_backend *b, uint64_t obj))                                 \
    X(int, surf_create, (struct ds_backend *b, const struct ds_tex_resource *r,                \
                         uint64_t *out))                                                       \
    X(void, surf_destroy, (struct ds_backend *b, uint64_t obj))                                \
    /* Stream memory operations (cuStreamBatchMemOp and the wait and write value calls):       \
     * n operations, in order, on s.  Each address is a word of the tenant's own memory,       \
     * aligned to its size, that the executor checked; op and flags are cuda.h's values,       \
     * checked too. */                                                                         \
    X(int, memops, (struct ds_backend *b, struct ds_bstream *s,                                \
                    const struct ds_memop_desc *ops, unsigned n))                              \
    /* A device query the tenant's view cannot answer (struct ds_devq): the answers in         \
     * values[0..n), n as the query says.  Returns 0, DS_ENOTSUP or the driver's CUresult      \
     * as DS_ECU. */                                                                           \
    X(int, dev_query, (struct ds_backend *b, const struct ds_devq *q, uint64_t *values))      \
    /* What NVML says of the device (common/ds_devfacts.h) into *out, zeroed by the caller:   \
     * what the backend cannot read stays unserved. */                                         \
    X(void, device_facts, (struct ds_backend *b, struct ds_devfacts *out))

#endif
