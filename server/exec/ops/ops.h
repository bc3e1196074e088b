/*
 * Handlers for every procedure in common/ds_procs.h, one per procedure, grouped by area
 * in this folder (ops_ctx.c, ops_mem.c, ops_stream.c, ops_event.c, ops_module.c,
 * ops_vmm.c, ops_tensormap.c, ops_ipc.c, ops_pool.c, ops_hostreg.c, ops_array.c,
 * ops_share.c and the rest), graphs in graph/ (ops_graph.c, ops_gdesc.c, ops_gnode.c,
 * ops_gset.c, ops_gcond.c, ops_gstage.c, ops_gmem.c, ops_gcapture.c, ops_ghcopy.c), and hello in
 * executor.c.  A handler validates all of its arguments against the tenant's own
 * objects, acts, fills the success arm of the result, and returns the CUresult that goes
 * into the reply (for batched procedures, the one held for the next synchronous call).
 * What each area keeps for a tenant goes with it through ops_areas.c.
 */
#ifndef DS_OPS_H
#define DS_OPS_H

#include "ds_procs.h"
#include "tenant.h"

#define DS_OPS_DECL_S(n, P, A, R) CUresult ds__ops_##n(struct ds_tenant *t, const A *a, R *r);
#define DS_OPS_DECL_B(n, P, A) CUresult ds__ops_##n(struct ds_tenant *t, const A *a);
DS_PROCS(DS_OPS_DECL_S, DS_OPS_DECL_B)

/* After DS_MEMCPY_DTOH_STRIPED's reply said CUDA_SUCCESS: send the copy's chunks over the
 * data connections (ops_striped.c).  Returns 0, or DS_E* (logged): the session is to
 * end. */
int ds__ops_dtoh_striped_send(struct ds_tenant *t, const ds_striped_args *a);
#undef DS_OPS_DECL_S
#undef DS_OPS_DECL_B

/* Launch checks shared by launches and kernel graph nodes (ops_module.c): 1 when a
 * grid and block shape exceed what the device allows; the launch attributes n given as
 * CUlaunchAttributes in out (n entries), or the CUresult that refuses them. */
int ds__ops_bad_shape(const struct ds_tenant *t, const unsigned grid[3], const unsigned block[3]);
CUresult ds__ops_launch_attrs(struct ds_tenant *t, const ds_launch_attr *attrs, unsigned n,
                              CUlaunchAttribute *out);

/* Bytes from the first to the last byte a fill of height rows of width elements of
 * elem_size bytes, pitch apart, touches; 0 on overflow or a bad shape (ops_mem.c). */
uint64_t ds__ops_memset_extent(uint64_t width, unsigned elem_size, uint64_t pitch,
                               uint64_t height);

/* Destroy graph g (its handle already removed): its nodes' handles, its backend graph,
 * and g itself (graph/ops_gnode.c). */
void ds__ops_graph_free(struct ds_tenant *t, struct ds_vgraph *g);
/* An instantiated graph e of built graph g takes a ref on each event g's nodes use
 * (CUDA_ERROR_OUT_OF_MEMORY when it cannot); ds__ops_gexec_free drops them with e. */
CUresult ds__ops_gexec_pin_events(struct ds_tenant *t, const struct ds_vgraph *g,
                                  struct ds_vgraph *e);
CUresult ds__ops_gexec_pin(struct ds_vgraph *e, struct ds_vevent *v);
void ds__ops_gexec_free(struct ds_tenant *t, struct ds_vgraph *e);

/* What a node's description points into: a kernel's launch attributes, a batch memory
 * operation node's operations. */
struct ds_gnode_scratch {
    CUlaunchAttribute attrs[DS_LAUNCH_ATTRS_MAX];
    struct ds_memop_desc memops[DS_MEMOPS_MAX];
};

/* The backend's description of node p, every input checked (ops_gdesc.c); sc holds what
 * it points to for as long as d is used.  A node the tenant runs itself is an empty node
 * to the backend. */
CUresult ds__ops_gnode_describe(struct ds_tenant *t, const ds_node_params *p,
                                struct ds_gnode_desc *d, struct ds_gnode_scratch *sc);
/* Whether node p runs in the tenant's process (ops_gdesc.c): a host node, or a copy node
 * with a side in memory only the tenant reaches.  A graph with one runs in stages. */
int ds__gnode_in_tenant(const ds_node_params *p);

/* A batch memory operation node's description from its n operations ops (ops_streammem.c):
 * each checked as cuStreamBatchMemOp's are (a word of the tenant's own memory, aligned to
 * its size), into out (DS_MEMOPS_MAX entries). */
CUresult ds__ops_memop_node(struct ds_tenant *t, const ds_memop *ops, unsigned n,
                            struct ds_gnode_desc *d, struct ds_memop_desc *out);

/* Looking up built graphs and their nodes (ops_gdesc.c).  ds__gnode_built: built graph
 * h (else the CUresult that refuses); ds__gnode_editable: the same, when the tenant may
 * change it; ds__gnode_child_of: one a child graph node may copy.  ds__gnode_of: node h
 * when it belongs to graph `graph` (any graph when 0), or NULL.  ds__gnode_event_of: the
 * event node parameters p record or wait on, or NULL. */
CUresult ds__gnode_built(struct ds_tenant *t, uint64_t h, struct ds_vgraph **out);
CUresult ds__gnode_editable(struct ds_tenant *t, uint64_t h, struct ds_vgraph **out);
CUresult ds__gnode_child_of(struct ds_tenant *t, uint64_t h, struct ds_vgraph **out);
struct ds_vnode *ds__gnode_of(struct ds_tenant *t, uint64_t h, uint64_t graph);
struct ds_vevent *ds__gnode_event_of(struct ds_tenant *t, const ds_node_params *p);

/* Building graphs node by node (ops_gnode.c).  ds__gnode_add: add node p (no
 * conditional node) after deps to graph gh, its handle in *out.  ds__gnode_add_described:
 * add node p, described to the backend as d, after deps to graph g (handle gh), its
 * handle in *out.  ds__gnode_append_handle: h appended to the array *v of *n handles; 0,
 * or -1 out of memory.  ds__gnode_copy_params: a deep copy of p into *out (whose old
 * contents are not freed), 0 or DS_ENOMEM; ds__gnode_free_params frees what such a copy
 * holds. */
CUresult ds__gnode_add(struct ds_tenant *t, uint64_t gh, const ds_node_params *p,
                       const uint64_t *deps, uint32_t ndeps, ds_handle *out);
CUresult ds__gnode_add_described(struct ds_tenant *t, struct ds_vgraph *g, uint64_t gh,
                                 const ds_node_params *p, const struct ds_gnode_desc *d,
                                 const uint64_t *deps, uint32_t ndeps, ds_handle *out);
int ds__gnode_append_handle(uint64_t **v, uint32_t *n, uint64_t h);
int ds__gnode_copy_params(const ds_node_params *p, ds_node_params *out);
void ds__gnode_free_params(ds_node_params *p);
/* Add conditional node p after deps to graph gh (ops_gcond.c); its body graphs get
 * handles, which the tenant reads back with the node's parameters. */
CUresult ds__gcond_add(struct ds_tenant *t, uint64_t gh, const ds_node_params *p,
                       const uint64_t *deps, uint32_t ndeps, ds_handle *out);

/* Capture into a graph (ops_gcapture.c): end stream s's capture (handle sh), its work
 * since the last dependency change a node of its graph, whose handle goes into r. */
CUresult ds__ops_capture_end_into(struct ds_tenant *t, struct ds_vstream *s, uint64_t sh,
                                  ds_handle_res *r);
/* Add captured graph `child` (a handle of the tenant's, embedded) as a child graph node of
 * built graph gh after its nodes deps (ops_gnode.c); the node's handle in *out.  On
 * failure child is gone, or still the caller's when its handle still names it. */
CUresult ds__ops_gnode_add_captured(struct ds_tenant *t, uint64_t gh, uint64_t child,
                                    const uint64_t *deps, uint32_t ndeps, ds_handle *out);

/* Graph memory (ops_gmem.c).  ds__ops_gmem_new: size bytes of device memory for a memory
 * allocation node, counted in the tenant's account, one reference held (CUDA_SUCCESS, or
 * the CUresult that refuses it).  ds__ops_gmem_of: the graph memory whose first byte is
 * ptr, or NULL.  ds__ops_gmem_release drops a reference, and frees the memory with the
 * last. */
CUresult ds__ops_gmem_new(struct ds_tenant *t, uint64_t size, struct ds_gmem **out);
struct ds_gmem *ds__ops_gmem_of(struct ds_tenant *t, uint64_t ptr);
void ds__ops_gmem_release(struct ds_tenant *t, struct ds_gmem *m);
/* Stream-ordered allocation in a capture: ds__ops_gmem_capture makes size bytes of graph
 * memory for capturing stream `stream`, its address in *ptr; ds__ops_gmem_captured hands
 * the stream's to g, the graph its capture made, or releases them when g is NULL or they
 * cannot be handed (CUDA_ERROR_OUT_OF_MEMORY); ds__ops_gmem_drop_captures releases every
 * capture's. */
CUresult ds__ops_gmem_capture(struct ds_tenant *t, uint64_t stream, uint64_t size,
                              uint64_t *ptr);
CUresult ds__ops_gmem_captured(struct ds_tenant *t, uint64_t stream, struct ds_vgraph *g);
void ds__ops_gmem_drop_captures(struct ds_tenant *t);

/* Captured copies of the tenant's pageable memory (ops_ghcopy.c).  ds__ops_ghcopy_capture
 * is the backend's id of s's capture (0: none), read before it ends;
 * ds__ops_ghcopy_captured hands the copies capture `id` took to its graph g, or releases
 * them when g is NULL or they cannot be handed (CUDA_ERROR_OUT_OF_MEMORY);
 * ds__ops_ghcopy_drop_captures releases every capture's.  ds__ops_ghcopy_stage makes x
 * (its ctx, graph and flags set) the staged instance of captured graph g that has such
 * copies (g->nhcopies > 0); on failure the caller frees x. */
uint64_t ds__ops_ghcopy_capture(struct ds_tenant *t, struct ds_vstream *s);
/* The stream whose cuStreamBeginCapture began backend capture `id` (its handle in
 * *handle), or NULL. */
struct ds_vstream *ds__ops_ghcopy_origin(struct ds_tenant *t, uint64_t id, uint64_t *handle);
/* The copies to the device (to_device) or to the host that capture `id` took, in capture
 * order, as memcpy nodes of built graph gh after deps (ndeps), each holding its staging
 * memory; their handles appended to *out (*nout, the caller's to free).  Copies not made
 * into nodes stay the capture's. */
CUresult ds__ops_ghcopy_nodes(struct ds_tenant *t, uint64_t id, int to_device, uint64_t gh,
                              const uint64_t *deps, uint32_t ndeps, uint64_t **out,
                              uint32_t *nout);
CUresult ds__ops_ghcopy_captured(struct ds_tenant *t, uint64_t id, struct ds_vgraph *g);
void ds__ops_ghcopy_drop_captures(struct ds_tenant *t);
CUresult ds__ops_ghcopy_stage(struct ds_tenant *t, const struct ds_vgraph *g,
                              struct ds_vgraph *x);

/* Staged graphs (ops_gstage.c).  ds__ops_gstage_needed: 1 when built graph g has nodes
 * that run in the tenant's process (host nodes, copies of the tenant's own memory), so
 * that an instantiated graph of it runs in stages.  ds__ops_gstage_make instantiates g (flags: the tenant's) into e's
 * stages.  ds__ops_gstage_set gives node n new parameters p (described as d) in staged
 * e.  ds__ops_gstage_free frees e's stages. */
int ds__ops_gstage_needed(struct ds_tenant *t, const struct ds_vgraph *g);
CUresult ds__ops_gstage_make(struct ds_tenant *t, const struct ds_vgraph *g, uint64_t flags,
                             struct ds_vgraph *e);
CUresult ds__ops_gstage_set(struct ds_tenant *t, struct ds_vgraph *e, uint64_t n,
                            const ds_node_params *p, const struct ds_gnode_desc *d);
/* The stage of staged e that holds device node n, its index there in *i; NULL when n is
 * no device node of e. */
struct ds_gstage *ds__ops_gstage_find(struct ds_vgraph *e, uint64_t n, uint32_t *i);
void ds__ops_gstage_free(struct ds_tenant *t, struct ds_vgraph *e);

/* Events (ops_event.c).  ds__ops_event_free: the tenant's event is gone (destroyed, or
 * its context): freed now, or when the last graph using it lets go of it
 * (ds__ops_event_release). */
void ds__ops_event_free(struct ds_tenant *t, struct ds_vevent *e);
void ds__ops_event_release(struct ds_tenant *t, struct ds_vevent *e);

/* Unmap, free and release everything the tenant reserved, mapped and created with the
 * VMM calls; the backend must still be open. */
void ds__ops_vmm_fini(struct ds_tenant *t);

/* Memory pools (ops_pool.c).  ds__ops_pool_free_now: cuMemFree of a pool's allocation
 * (a DS_RANGE_POOL entry of t->mem), which CUDA allows:
 * it goes back to its pool after all work submitted so far (a synchronising call's
 * CUresult).  ds__ops_pool_fini frees every pool allocation and pool of the tenant; the
 * backend must still be open. */
CUresult ds__ops_pool_free_now(struct ds_tenant *t, uint64_t ptr);
void ds__ops_pool_fini(struct ds_tenant *t);

/* IPC (ops_ipc.c).  Allocation `base` or event e is going: its export, if any, is
 * withdrawn first.  ds__ops_ipc_close closes the other tenants' memory opened in context
 * ctx (all: in any), whatever references remain; the backend must still be open. */
void ds__ops_ipc_mem_gone(struct ds_tenant *t, uint64_t base);
void ds__ops_ipc_event_gone(struct ds_tenant *t, struct ds_vevent *e);
void ds__ops_ipc_close(struct ds_tenant *t, uint64_t ctx, int all);

/* Destroy the stream that carries the tenant's event shadows (ops_ipc.c); the backend
 * must still be open. */
void ds__ops_shadows_fini(struct ds_tenant *t);

/* Destroy the texture and surface objects, mipmapped arrays and arrays of context ctx
 * (all: of every context), giving their memory back to the account (ops_array.c). */
void ds__ops_array_drop(struct ds_tenant *t, uint64_t ctx, int all);

/* Each area's part in the tenant's lifetime (struct ds_tenant_area), listed in order in
 * ds__ops_areas (ops_areas.c): the pools' reclaim set up (ops_pool.c); the objects of
 * context ctx, of every context when all != 0, freed: graphs and their instances
 * (ops_graph.c), modules (ops_module.c), streams (ops_stream.c), events (ops_event.c)
 * and allocations (ops_mem.c). */
void ds__ops_pool_init(struct ds_tenant *t);
void ds__ops_graph_drop(struct ds_tenant *t, uint64_t ctx, int all);
void ds__ops_module_drop(struct ds_tenant *t, uint64_t ctx, int all);
void ds__ops_stream_drop(struct ds_tenant *t, uint64_t ctx, int all);
void ds__ops_event_drop(struct ds_tenant *t, uint64_t ctx, int all);
void ds__ops_mem_drop(struct ds_tenant *t, uint64_t ctx, int all);
extern const struct ds_tenant_areas ds__ops_areas;

/* Create the tenant's primary context, inactive until retained, so that its handle is
 * known from the handshake on (cudart asks for it before retaining it).  0 or DS_E*. */
int ds__ops_make_primary(struct ds_tenant *t);

/* Open the device if it is not (ds__tenant_open), then, with primary, make the primary
 * context, below room held for the tenant's memory (ops_hello.c).  0 or DS_E*. */
int ds__ops_open_device(struct ds_tenant *t, int primary);

#endif
