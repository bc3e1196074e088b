/*
 * The cuda backend's insides, shared by its files: the driver's function table, the
 * objects behind the backend's opaque types, and the helpers more than one file uses.
 * Not for anything outside server/cuda*.c: the rest of the server sees only backend.h.
 */
#ifndef DS_CUDA_BACKEND_H
#define DS_CUDA_BACKEND_H

#include "backend.h"
#include "backend_list.h"

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
    int captures;              /* streams that began a capture (capturing set) */
    uint64_t identity;         /* the CONTEXT_IDENTITY value (kind 0), once asked */
    int identity_known;
    unsigned spin_us;          /* a synchronisation polls this long before blocking */
    const volatile sig_atomic_t *stop; /* the config's: the executor is to stop */
    struct ds_bfence *spare_fences; /* done with, kept for reuse (cuda_fence.c) */
    struct ds_cuda_waker *waker;    /* made at the first fence armed (cuda_waker.c) */
    struct ds_cuda_nvml *nvml;      /* the driver's NVML, at the first facts asked */
    int nvml_failed;                /* it could not be loaded: not tried again */
};

/* The backend's operations (backend_ops.h), by area: cuda.c the device, memory, streams
 * and events; cuda_module.c and cuda_link.c modules and kernels; cuda_pctx.c prepare and
 * bind; cuda_graph.c capture and graphs; cuda_gate.c gates and stamps; cuda_fence.c
 * fences; cuda_memop.c stream memory operations; cuda_devquery.c device queries; cuda_nvml.c
 * the device's facts for NVML;
 * cuda_vmm.c, cuda_tensormap.c, cuda_ipc.c, cuda_pool.c and cuda_array.c their
 * namesakes. */
#define CUDA_PROTO(ret, op, args) ret ds__cuda_##op args;
DS_BACKEND_OPS(CUDA_PROTO)
#undef CUDA_PROTO

/* cuda_gate.c: giving the control block's pages back. */
void ds__cuda_shm_unmap(struct ds_backend *b);

/* cuda_nvml.c: letting the driver's NVML go at close. */
void ds__cuda_nvml_fini(struct ds_backend *b);

/* cuda_fence.c: freeing the spare fences at close. */
void ds__cuda_fence_fini(struct ds_backend *b);

/* cuda_waker.c: eventfd efd is written once the device passes what is in stream s now
 * (started at the first call); stop ends the thread. */
int ds__cuda_waker_add(struct ds_backend *b, CUstream s, int efd);
void ds__cuda_waker_stop(struct ds_backend *b);

/* cuda_pctx.c: split the device into SM groups; free the pool. */
int ds__cuda_pctx_init(struct ds_backend *b);
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

/* Whether s's work goes into a graph: it began a capture, or joined one by waiting for an
 * event recorded in it, which only the driver knows (asked only while a capture is in
 * progress, so work outside captures pays nothing for it). */
int ds__cuda_capturing(struct ds_backend *b, struct ds_bstream *s);

/* Before new work on s: the legacy default stream's ordering rules.  Returns 0 or DS_E*. */
int ds__cuda_order(struct ds_backend *b, struct ds_bstream *s);

/* The driver's form of n checked operations: an array the caller frees, or NULL. */
CUstreamBatchMemOpParams *ds__cuda_memop_params(const struct ds_memop_desc *ops, unsigned n);

#endif
