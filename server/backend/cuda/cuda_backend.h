/*
 * The cuda backend's insides, shared by its files: the driver's function table, the
 * objects behind the backend's opaque types, and the helpers more than one file uses.
 * Not for anything outside server/cuda*.c: the rest of the server sees only backend.h.
 */
#ifndef DS_CUDA_BACKEND_H
#define DS_CUDA_BACKEND_H

#include "backend.h"

#include <pthread.h>
#include <stdint.h>

/* Every driver function used here: the prototype we call it through, as cuda.h names it,
 * and the base name it is looked up by.  Lookups ask for CUDA_VERSION, the newest variant:
 * cuda.h maps most base names to that variant itself (cuMemAlloc is cuMemAlloc_v2), but
 * not all (cuCtxSynchronize stays the old one and cuCtxSynchronize_v2 is separate), so the
 * prototype is always named explicitly. */
#define CU_FNS(X) \
    X(cuInit, cuInit) \
    X(cuDriverGetVersion, cuDriverGetVersion) \
    X(cuDeviceGet, cuDeviceGet) \
    X(cuDeviceGetName, cuDeviceGetName) \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute) \
    X(cuDeviceTotalMem, cuDeviceTotalMem) \
    X(cuDeviceGetUuid, cuDeviceGetUuid) \
    X(cuDeviceGetDevResource, cuDeviceGetDevResource) \
    X(cuDevResourceGenerateDesc, cuDevResourceGenerateDesc) \
    X(cuGreenCtxCreate, cuGreenCtxCreate) \
    X(cuGreenCtxDestroy, cuGreenCtxDestroy) \
    X(cuCtxFromGreenCtx, cuCtxFromGreenCtx) \
    X(cuGreenCtxStreamCreate, cuGreenCtxStreamCreate) \
    X(cuDevSmResourceSplitByCount, cuDevSmResourceSplitByCount) \
    X(cuCtxSetCurrent, cuCtxSetCurrent) \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain) \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease) \
    X(cuCtxGetLimit, cuCtxGetLimit) \
    X(cuGetExportTable, cuGetExportTable) \
    X(cuStreamBeginCapture, cuStreamBeginCapture) \
    X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode) \
    X(cuStreamEndCapture, cuStreamEndCapture) \
    X(cuStreamGetCaptureInfo, cuStreamGetCaptureInfo) \
    X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags) \
    X(cuGraphLaunch, cuGraphLaunch) \
    X(cuGraphDestroy, cuGraphDestroy) \
    X(cuGraphGetNodes, cuGraphGetNodes) \
    X(cuGraphExecDestroy, cuGraphExecDestroy) \
    X(cuGraphCreate, cuGraphCreate) \
    X(cuGraphAddEmptyNode, cuGraphAddEmptyNode) \
    X(cuGraphAddKernelNode, cuGraphAddKernelNode) \
    X(cuGraphKernelNodeSetAttribute, cuGraphKernelNodeSetAttribute) \
    X(cuGraphAddMemsetNode, cuGraphAddMemsetNode) \
    X(cuGraphAddMemcpyNode, cuGraphAddMemcpyNode) \
    X(cuGraphAddEventRecordNode, cuGraphAddEventRecordNode) \
    X(cuGraphAddEventWaitNode, cuGraphAddEventWaitNode) \
    X(cuGraphEventRecordNodeSetEvent, cuGraphEventRecordNodeSetEvent) \
    X(cuGraphEventWaitNodeSetEvent, cuGraphEventWaitNodeSetEvent) \
    X(cuGraphExecEventRecordNodeSetEvent, cuGraphExecEventRecordNodeSetEvent) \
    X(cuGraphExecEventWaitNodeSetEvent, cuGraphExecEventWaitNodeSetEvent) \
    X(cuGraphDestroyNode, cuGraphDestroyNode) \
    X(cuGraphAddDependencies, cuGraphAddDependencies) \
    X(cuGraphRemoveDependencies, cuGraphRemoveDependencies) \
    X(cuGraphKernelNodeSetParams, cuGraphKernelNodeSetParams) \
    X(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams) \
    X(cuGraphAddChildGraphNode, cuGraphAddChildGraphNode) \
    X(cuGraphAddNode, cuGraphAddNode) \
    X(cuGraphConditionalHandleCreate, cuGraphConditionalHandleCreate) \
    X(cuGraphExecUpdate, cuGraphExecUpdate) \
    X(cuGraphNodeSetEnabled, cuGraphNodeSetEnabled) \
    X(cuGraphExecChildGraphNodeSetParams, cuGraphExecChildGraphNodeSetParams) \
    X(cuGraphMemsetNodeSetParams, cuGraphMemsetNodeSetParams) \
    X(cuGraphExecMemsetNodeSetParams, cuGraphExecMemsetNodeSetParams) \
    X(cuGraphMemcpyNodeSetParams, cuGraphMemcpyNodeSetParams) \
    X(cuGraphExecMemcpyNodeSetParams, cuGraphExecMemcpyNodeSetParams) \
    X(cuCtxSetLimit, cuCtxSetLimit) \
    X(cuMemAlloc, cuMemAlloc) \
    X(cuMemAllocPitch, cuMemAllocPitch) \
    X(cuMemFree, cuMemFree) \
    X(cuMemGetInfo, cuMemGetInfo) \
    X(cuMemHostRegister, cuMemHostRegister) \
    X(cuMemHostUnregister, cuMemHostUnregister) \
    X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer) \
    X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync) \
    X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync) \
    X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync) \
    X(cuMemcpy3DAsync, cuMemcpy3DAsync) \
    X(cuMemsetD2D8Async, cuMemsetD2D8Async) \
    X(cuMemsetD2D16Async, cuMemsetD2D16Async) \
    X(cuMemsetD2D32Async, cuMemsetD2D32Async) \
    X(cuStreamDestroy, cuStreamDestroy) \
    X(cuStreamQuery, cuStreamQuery) \
    X(cuStreamSynchronize, cuStreamSynchronize) \
    X(cuStreamWaitEvent, cuStreamWaitEvent) \
    X(cuStreamWaitValue32, cuStreamWaitValue32) \
    X(cuStreamWriteValue32, cuStreamWriteValue32) \
    X(cuEventCreate, cuEventCreate) \
    X(cuEventDestroy, cuEventDestroy) \
    X(cuEventRecord, cuEventRecord) \
    X(cuEventQuery, cuEventQuery) \
    X(cuEventSynchronize, cuEventSynchronize) \
    X(cuEventElapsedTime, cuEventElapsedTime) \
    X(cuLibraryLoadData, cuLibraryLoadData) \
    X(cuLinkCreate, cuLinkCreate) \
    X(cuLinkAddData, cuLinkAddData) \
    X(cuLinkComplete, cuLinkComplete) \
    X(cuLinkDestroy, cuLinkDestroy) \
    X(cuLibraryUnload, cuLibraryUnload) \
    X(cuLibraryGetKernel, cuLibraryGetKernel) \
    X(cuLibraryGetGlobal, cuLibraryGetGlobal) \
    X(cuLibraryGetKernelCount, cuLibraryGetKernelCount) \
    X(cuLibraryEnumerateKernels, cuLibraryEnumerateKernels) \
    X(cuKernelGetName, cuKernelGetName) \
    X(cuKernelGetParamInfo, cuKernelGetParamInfo) \
    X(cuKernelGetAttribute, cuKernelGetAttribute) \
    X(cuKernelSetAttribute, cuKernelSetAttribute) \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) \
    X(cuOccupancyAvailableDynamicSMemPerBlock, cuOccupancyAvailableDynamicSMemPerBlock) \
    X(cuOccupancyMaxActiveClusters, cuOccupancyMaxActiveClusters) \
    X(cuLaunchKernel, cuLaunchKernel) \
    X(cuLaunchKernelEx, cuLaunchKernelEx) \
    X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity) \
    X(cuMemAddressReserve, cuMemAddressReserve) \
    X(cuMemAddressFree, cuMemAddressFree) \
    X(cuMemCreate, cuMemCreate) \
    X(cuMemRelease, cuMemRelease) \
    X(cuMemGetAllocationPropertiesFromHandle, cuMemGetAllocationPropertiesFromHandle) \
    X(cuMemMap, cuMemMap) \
    X(cuMemUnmap, cuMemUnmap) \
    X(cuMemSetAccess, cuMemSetAccess) \
    X(cuTensorMapEncodeTiled, cuTensorMapEncodeTiled) \
    X(cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2col) \
    X(cuTensorMapReplaceAddress, cuTensorMapReplaceAddress) \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle) \
    X(cuIpcOpenMemHandle, cuIpcOpenMemHandle) \
    X(cuIpcCloseMemHandle, cuIpcCloseMemHandle) \
    X(cuIpcGetEventHandle, cuIpcGetEventHandle) \
    X(cuIpcOpenEventHandle, cuIpcOpenEventHandle) \
    X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool) \
    X(cuMemPoolCreate, cuMemPoolCreate) \
    X(cuMemPoolDestroy, cuMemPoolDestroy) \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync) \
    X(cuMemFreeAsync, cuMemFreeAsync) \
    X(cuMemPoolSetAttribute, cuMemPoolSetAttribute) \
    X(cuMemPoolGetAttribute, cuMemPoolGetAttribute) \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo) \
    X(cuArray3DCreate, cuArray3DCreate) \
    X(cuArrayDestroy, cuArrayDestroy) \
    X(cuMipmappedArrayCreate, cuMipmappedArrayCreate) \
    X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy) \
    X(cuMipmappedArrayGetLevel, cuMipmappedArrayGetLevel) \
    X(cuTexObjectCreate, cuTexObjectCreate) \
    X(cuTexObjectDestroy, cuTexObjectDestroy) \
    X(cuSurfObjectCreate, cuSurfObjectCreate) \
    X(cuSurfObjectDestroy, cuSurfObjectDestroy) \
    X(cuStreamBatchMemOp, cuStreamBatchMemOp) \
    X(cuGraphAddBatchMemOpNode, cuGraphAddBatchMemOpNode) \
    X(cuGraphBatchMemOpNodeSetParams, cuGraphBatchMemOpNodeSetParams) \
    X(cuGraphExecBatchMemOpNodeSetParams, cuGraphExecBatchMemOpNodeSetParams) \
    X(cuDeviceGetLuid, cuDeviceGetLuid) \
    X(cuDeviceGetTexture1DLinearMaxWidth, cuDeviceGetTexture1DLinearMaxWidth) \
    X(cuOccupancyMaxPotentialClusterSize, cuOccupancyMaxPotentialClusterSize)

/* Functions of drivers newer than the backend needs (CUDA 12.8): NULL where the driver
 * lacks them, and what uses them is then not supported, rather than the whole backend. */
#define CU_FNS_OPTIONAL(X) \
    X(cuTensorMapEncodeIm2colWide, cuTensorMapEncodeIm2colWide) \
    X(cuDeviceGetHostAtomicCapabilities, cuDeviceGetHostAtomicCapabilities)

struct driver {
    void *dl;
#define CU_FIELD(proto, base) __typeof__(proto) *proto;
    CU_FNS(CU_FIELD)
    CU_FNS_OPTIONAL(CU_FIELD)
#undef CU_FIELD
};

/* A stream's real streams on pCtxs it ran on before (cuda_pctx.c): moving back to one
 * reuses it, as making a stream costs tens of microseconds on the move's path. */
#define DS_PARKED_MAX 3

struct ds_parked {
    CUstream s; /* NULL: a free slot */
    CUevent tail;
    uint64_t mask;
};

struct ds_bstream {
    CUstream s;
    int blocking;       /* a tenant stream created without CU_STREAM_NON_BLOCKING */
    uint64_t seq;       /* pieces of work submitted */
    CUevent tail;       /* recorded on demand after the last piece of work */
    uint64_t tail_seq;  /* seq at which tail was last recorded */
    uint64_t legacy_seen;  /* blocking: legacy seq this stream already waits for */
    uint64_t legacy_given; /* blocking: own seq the legacy stream already waits for */
    int capturing;         /* its work goes into a graph, not to the device */
    int prio;
    struct ds_parked parked[DS_PARKED_MAX]; /* oldest first */
    struct ds_bstream *prev, *next;
};

struct ds_bevent {
    CUevent e;
};

/* A graph keeps the nodes handed out of it, which go with it. */
/* A conditional node's body graph is the driver's, which destroys it with the node
 * (borrowed). */
struct ds_bgraph {
    CUgraph g;
    int borrowed;
    struct ds_bnode *nodes;
    struct ds_bcond *conds;
};

struct ds_bcond {
    CUgraphConditionalHandle h;
    struct ds_bcond *next;
};

struct ds_bgexec {
    CUgraphExec e;
};

struct ds_bnode {
    CUgraphNode n;
    struct ds_bnode *next;
};

/* Libraries, not modules: a library is not tied to a context, so its kernels run on
 * whichever green context the tenant is bound to now or later. */
struct ds_bfunc {
    CUkernel k;
    struct ds_bfunc *next;
};

/* A module owns the functions handed out of it. */
struct ds_bmodule {
    CUlibrary lib;
    struct ds_bfunc *funcs;
};

/* Green contexts over sets of SM groups, made on first use and kept (cuda_pctx.c). */
#define DS_PCTX_MAX 32

struct ds_pctx_pool {
    pthread_mutex_t lock; /* cached[] and ncached: the binder thread adds to them too */
    struct ds_sm_groups sm;
    CUdevResource groups[64]; /* one split of the device, so any subset can be combined */
    struct {
        uint64_t mask;
        CUgreenCtx g;
    } cached[DS_PCTX_MAX];
    int ncached;
    uint64_t bound_mask; /* 0: the whole device */
    CUgreenCtx bound;    /* where new streams go */
};

/* A slot's gate and stamps span at most this many pages of the control block. */
#define DS_CUDA_SHM_PAGES 3

struct ds_backend {
    struct driver cu;
    CUdevice dev;
    CUgreenCtx green; /* the whole device */
    CUcontext ctx; /* the green context as a CUcontext, current in this executor */
    struct ds_pctx_pool pc;
    CUstream spill;       /* whole device, for kernels a partition cannot hold */
    CUevent spill_done;
    /* Pages of the control block registered for the device: the gate word's and the
     * progress stamps' (cuda_gate.c). */
    struct {
        uintptr_t page;
        CUdeviceptr dev;
    } shm_pages[DS_CUDA_SHM_PAGES];
    int nshm_pages;
    struct ds_bstream legacy;
    struct ds_bstream streams; /* list head */
    uint64_t identity;         /* the CONTEXT_IDENTITY value (kind 0), once asked */
    int identity_known;
    unsigned spin_us;          /* a synchronisation polls this long before blocking */
    const volatile sig_atomic_t *stop; /* the config's: the executor is to stop */
    struct ds_bfence *spare_fences; /* done with, kept for reuse (cuda_fence.c) */
    struct ds_cuda_waker *waker;    /* made at the first fence armed (cuda_waker.c) */
};

/* Shared by cuda.c (the device, memory, streams, events), cuda_module.c (modules and
 * kernels), cuda_graph.c (capture and graphs), cuda_vmm.c (virtual memory),
 * cuda_tensormap.c (tensor maps), cuda_ipc.c (IPC) and cuda_pool.c (memory pools). */

/* cuda_array.c: backend.h's array_*, mipmap_*, tex_* and surf_* operations. */
int ds__cuda_array_create(struct ds_backend *b, const struct ds_array_shape *d,
                          struct ds_barray **out);
void ds__cuda_array_destroy(struct ds_backend *b, struct ds_barray *a);
int ds__cuda_mipmap_create(struct ds_backend *b, const struct ds_array_shape *d,
                           unsigned levels, struct ds_bmipmap **out);
void ds__cuda_mipmap_destroy(struct ds_backend *b, struct ds_bmipmap *m);
int ds__cuda_mipmap_level(struct ds_backend *b, struct ds_bmipmap *m, unsigned level,
                          struct ds_barray **out);
int ds__cuda_array_copy(struct ds_backend *b, const struct ds_array_copy *c,
                        struct ds_bstream *s);
int ds__cuda_array_write(struct ds_backend *b, const struct ds_array_loc *dst, const void *src,
                         uint64_t width, uint64_t height, uint64_t depth, struct ds_bstream *s);
int ds__cuda_array_read(struct ds_backend *b, void *dst, const struct ds_array_loc *src,
                        uint64_t width, uint64_t height, uint64_t depth, struct ds_bstream *s);
int ds__cuda_tex_create(struct ds_backend *b, const struct ds_tex_resource *r,
                        const CUDA_TEXTURE_DESC *desc, const CUDA_RESOURCE_VIEW_DESC *view,
                        uint64_t *out);
void ds__cuda_tex_destroy(struct ds_backend *b, uint64_t obj);
int ds__cuda_surf_create(struct ds_backend *b, const struct ds_tex_resource *r, uint64_t *out);
void ds__cuda_surf_destroy(struct ds_backend *b, uint64_t obj);

/* cuda_gate.c: backend.h's gate and stamp, and giving the control block's pages back. */
int ds__cuda_gate(struct ds_backend *b, struct ds_bstream *s, const volatile unsigned *word);
int ds__cuda_stamp(struct ds_backend *b, struct ds_bstream *s, struct ds_shm_stamp *st,
                   uint32_t seq);
void ds__cuda_shm_unmap(struct ds_backend *b);

/* cuda_fence.c: backend.h's fences, and freeing the spares at close. */
int ds__cuda_fence_create(struct ds_backend *b, const struct ds_fence_at *at,
                          struct ds_bfence **out);
int ds__cuda_fence_query(struct ds_backend *b, struct ds_bfence *f);
int ds__cuda_fence_arm(struct ds_backend *b, struct ds_bfence *f, int efd, uint64_t *wake_ns);
void ds__cuda_fence_destroy(struct ds_backend *b, struct ds_bfence *f);
void ds__cuda_fence_fini(struct ds_backend *b);

/* cuda_waker.c: eventfd efd is written once the device passes what is in stream s now
 * (started at the first call); stop ends the thread. */
int ds__cuda_waker_add(struct ds_backend *b, CUstream s, int efd);
void ds__cuda_waker_stop(struct ds_backend *b);

/* cuda_pctx.c: split the device into SM groups; bind (backend.h); free the pool. */
int ds__cuda_pctx_init(struct ds_backend *b);
int ds__cuda_bind(struct ds_backend *b, uint64_t groups);
int ds__cuda_prepare(struct ds_backend *b, uint64_t groups);
void ds__cuda_pctx_fini(struct ds_backend *b);

/* The device's SM groups, as ds_cuda_probe reports them; sms receives the whole device's
 * SM resource. */
CUresult ds__cuda_sm_groups(struct driver *cu, CUdevice dev, CUdevResource *sms,
                            struct ds_sm_groups *out);

/* Set a stream up on green context g (non-blocking, as green-context streams are). */
int ds__cuda_stream_init(struct ds_backend *b, struct ds_bstream *s, int blocking, int prio);
void ds__cuda_unpark_all(struct ds_backend *b, struct ds_bstream *s);

/* Record s's tail event after its last work, unless it already is. */
int ds__cuda_record_tail(struct ds_backend *b, struct ds_bstream *s);

/* 0 for CUDA_SUCCESS, else the driver's CUresult as a DS_ECU code. */
int ds__cuda_err(CUresult r);
/* The CUresult that ended this process's contexts for good (a "sticky" error any driver
 * call reported through ds__cuda_err), or 0. */
int ds__cuda_sticky(void);

/* The real stream behind s (NULL: the tenant's legacy stream). */
struct ds_bstream *ds__cuda_real(struct ds_backend *b, struct ds_bstream *s);

/* Before new work on s: the legacy default stream's ordering rules.  Returns 0 or DS_E*. */
int ds__cuda_order(struct ds_backend *b, struct ds_bstream *s);

/* The backend operations of the other files, as backend.h describes them. */
/* The driver's form of n checked operations: an array the caller frees, or NULL. */
CUstreamBatchMemOpParams *ds__cuda_memop_params(const struct ds_memop_desc *ops, unsigned n);
int ds__cuda_memops(struct ds_backend *b, struct ds_bstream *s, const struct ds_memop_desc *ops,
                    unsigned n);
int ds__cuda_dev_query(struct ds_backend *b, const struct ds_devq *q, uint64_t *values);
int ds__cuda_graph_create(struct ds_backend *b, unsigned flags, struct ds_bgraph **out);
int ds__cuda_graph_add_node(struct ds_backend *b, struct ds_bgraph *g,
                            const struct ds_gnode_desc *d, struct ds_bnode *const *deps,
                            size_t ndeps, struct ds_bnode **out);
void ds__cuda_graph_node_destroy(struct ds_backend *b, struct ds_bgraph *g, struct ds_bnode *n);
int ds__cuda_graph_edge(struct ds_backend *b, struct ds_bgraph *g, struct ds_bnode *from,
                        struct ds_bnode *to, int add);
int ds__cuda_graph_node_set(struct ds_backend *b, struct ds_bgraph *g, struct ds_bgexec *e,
                            struct ds_bnode *n, const struct ds_gnode_desc *d);
int ds__cuda_graph_cond_create(struct ds_backend *b, struct ds_bgraph *g, unsigned dflt,
                               unsigned flags, struct ds_bcond **out, uint64_t *value);
int ds__cuda_graph_exec_update(struct ds_backend *b, struct ds_bgexec *e, struct ds_bgraph *g,
                               int *result);
int ds__cuda_graph_node_enable(struct ds_backend *b, struct ds_bgexec *e, struct ds_bnode *n,
                               int on);
int ds__cuda_module_load(struct ds_backend *b, const void *image, size_t len,
                         struct ds_bmodule **out);
int ds__cuda_vmm_granularity(struct ds_backend *b, const CUmemAllocationProp *prop,
                             int recommended, uint64_t *out);
int ds__cuda_vmm_reserve(struct ds_backend *b, uint64_t size, uint64_t align, uint64_t hint,
                         uint64_t *addr);
void ds__cuda_vmm_free(struct ds_backend *b, uint64_t addr, uint64_t size);
int ds__cuda_vmm_create(struct ds_backend *b, uint64_t size, CUmemAllocationProp *prop,
                        struct ds_bpmem **out);
void ds__cuda_vmm_release(struct ds_backend *b, struct ds_bpmem *m);
int ds__cuda_vmm_map(struct ds_backend *b, uint64_t addr, uint64_t size, struct ds_bpmem *m,
                     uint64_t offset);
void ds__cuda_vmm_unmap(struct ds_backend *b, uint64_t addr, uint64_t size);
int ds__cuda_vmm_set_access(struct ds_backend *b, uint64_t addr, uint64_t size,
                            unsigned flags);
int ds__cuda_tensormap_encode(struct ds_backend *b, const struct ds_tensormap_desc *d,
                              CUtensorMap *out);
int ds__cuda_tensormap_replace(struct ds_backend *b, CUtensorMap *map, uint64_t addr);
int ds__cuda_ipc_mem_export(struct ds_backend *b, uint64_t addr, uint64_t size,
                            unsigned char blob[DS_IPC_BLOB]);
int ds__cuda_ipc_mem_open(struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],
                          uint64_t size, unsigned flags, uint64_t *addr);
void ds__cuda_ipc_mem_close(struct ds_backend *b, uint64_t addr);
int ds__cuda_ipc_event_export(struct ds_backend *b, struct ds_bevent *e,
                              unsigned char blob[DS_IPC_BLOB]);
int ds__cuda_ipc_event_open(struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],
                            struct ds_bevent **out);
int ds__cuda_pool_default(struct ds_backend *b, struct ds_bpool **out);
int ds__cuda_pool_create(struct ds_backend *b, uint64_t max_size, unsigned usage,
                         struct ds_bpool **out);
void ds__cuda_pool_destroy(struct ds_backend *b, struct ds_bpool *p);
int ds__cuda_pool_alloc(struct ds_backend *b, struct ds_bpool *p, uint64_t size,
                        struct ds_bstream *s, uint64_t *addr);
int ds__cuda_pool_free(struct ds_backend *b, struct ds_bpool *p, uint64_t addr,
                       struct ds_bstream *s);
int ds__cuda_pool_attr(struct ds_backend *b, struct ds_bpool *p, int attr, int set,
                       uint64_t *value);
int ds__cuda_pool_trim(struct ds_backend *b, struct ds_bpool *p, uint64_t keep);
void ds__cuda_module_unload(struct ds_backend *b, struct ds_bmodule *m);
int ds__cuda_module_get_function(struct ds_backend *b, struct ds_bmodule *m, const char *name,
                                 struct ds_bfunc **out, struct ds_param_layout *layout);
int ds__cuda_module_get_global(struct ds_backend *b, struct ds_bmodule *m, const char *name,
                               uint64_t *addr, uint64_t *size);
int ds__cuda_link(struct ds_backend *b, struct ds_link_job *job);
int ds__cuda_module_kernels(struct ds_backend *b, struct ds_bmodule *m, const char ***names,
                            uint32_t *n);
int ds__cuda_func_get_attribute(struct ds_backend *b, struct ds_bfunc *f, int attr, int *value);
int ds__cuda_func_set_attribute(struct ds_backend *b, struct ds_bfunc *f, int attr, int value);
int ds__cuda_occupancy(struct ds_backend *b, struct ds_bfunc *f, int block_size,
                       size_t dynamic_smem, unsigned flags, int *blocks);
int ds__cuda_occupancy_smem(struct ds_backend *b, struct ds_bfunc *f, int num_blocks,
                            int block_size, size_t *smem);
int ds__cuda_occupancy_clusters(struct ds_backend *b, struct ds_bfunc *f,
                                const struct ds_launch *l, const unsigned cluster[3],
                                int *clusters);
int ds__cuda_occupancy_cluster_size(struct ds_backend *b, struct ds_bfunc *f,
                                    const struct ds_launch *l, int *size);
int ds__cuda_launch(struct ds_backend *b, struct ds_bfunc *f, const struct ds_launch *l,
                    struct ds_bstream *s);
int ds__cuda_capture_begin(struct ds_backend *b, struct ds_bstream *s, int mode);
int ds__cuda_capture_end(struct ds_backend *b, struct ds_bstream *s, struct ds_bgraph **out);
int ds__cuda_capture_info(struct ds_backend *b, struct ds_bstream *s, int *status, uint64_t *id);
int ds__cuda_graph_instantiate(struct ds_backend *b, struct ds_bgraph *g, uint64_t flags,
                               struct ds_bgexec **out);
int ds__cuda_graph_launch(struct ds_backend *b, struct ds_bgexec *e, struct ds_bstream *s);
int ds__cuda_graph_node_count(struct ds_backend *b, struct ds_bgraph *g, uint64_t *n);
void ds__cuda_graph_destroy(struct ds_backend *b, struct ds_bgraph *g);
void ds__cuda_graph_exec_destroy(struct ds_backend *b, struct ds_bgexec *e);

#endif
