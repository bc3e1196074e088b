/*
 * What an executor needs from a device, whatever the device is: the operations listed
 * in backend_ops.h, which make struct ds_backend_ops.  Two implementations: sim (sim/, a
 * software model for machines without a GPU) and cuda (cuda/, the real driver with
 * green contexts); registry.h chooses one.  The executor validates every tenant input
 * before calling in here, so a backend may trust its arguments: addresses lie inside
 * live allocations, handles are its own.
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

#include "backend_ops.h"
#include "ds_groups.h"

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
struct ds_devfacts;
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
#define DS_BACKEND_MEMBER(ret, op, args) ret(*op) args;
    DS_BACKEND_OPS(DS_BACKEND_MEMBER)
#undef DS_BACKEND_MEMBER
};

/* What each backend gives the registry (registry.h), which alone chooses one. */
extern const struct ds_backend_ops ds_sim_backend;
extern const struct ds_backend_ops ds_cuda_backend;

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
