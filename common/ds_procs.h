/*
 * The one list of procedures served by an executor.  It generates the server's dispatch
 * table (server/exec/executor.c), the client's typed call stubs (client/transport/rpc.h) and the name
 * table used in logs and tests.  Procedure numbers come from the rpcgen header, so a
 * number that disagrees with rpcgen/detshare.x fails to compile.
 *
 *   S(name, PROC, argument type, result type)   synchronous: the client waits for a reply
 *   B(name, PROC, argument type)                batched: no reply; an error is held and
 *                                               returned by the tenant's next S call
 */
#ifndef DS_PROCS_H
#define DS_PROCS_H

#include "detshare.h"

#define DS_PROCS(S, B)                                                      \
    S(hello, DS_HELLO, ds_hello_args, ds_hello_res)                         \
    S(primary_retain, DS_PRIMARY_RETAIN, int, ds_handle_res)                \
    S(primary_release, DS_PRIMARY_RELEASE, int, ds_void_res)                \
    S(primary_get_state, DS_PRIMARY_GET_STATE, int, ds_pstate_res)          \
    S(primary_set_flags, DS_PRIMARY_SET_FLAGS, ds_pflags_args, ds_void_res) \
    S(primary_reset, DS_PRIMARY_RESET, int, ds_void_res)                    \
    S(ctx_create, DS_CTX_CREATE, ds_ctx_create_args, ds_handle_res)         \
    S(ctx_destroy, DS_CTX_DESTROY, ds_handle, ds_void_res)                  \
    S(ctx_synchronize, DS_CTX_SYNCHRONIZE, ds_handle, ds_void_res)          \
    S(ctx_get_info, DS_CTX_GET_INFO, ds_handle, ds_ctx_info_res)            \
    S(ctx_limit, DS_CTX_LIMIT, ds_limit_args, ds_hyper_res)                 \
    S(ctx_query, DS_CTX_QUERY, ds_ctx_query_args, ds_hyper_res)             \
    S(mem_alloc, DS_MEM_ALLOC, ds_alloc_args, ds_alloc_res)                 \
    S(mem_free, DS_MEM_FREE, ds_dptr, ds_void_res)                          \
    S(mem_get_info, DS_MEM_GET_INFO, ds_handle, ds_meminfo_res)                \
    S(mem_get_range, DS_MEM_GET_RANGE, ds_dptr, ds_range_res)               \
    S(memcpy_htod, DS_MEMCPY_HTOD, ds_htod_args, ds_void_res)               \
    B(memcpy_htod_async, DS_MEMCPY_HTOD_ASYNC, ds_htod_args)                \
    S(memcpy_dtoh, DS_MEMCPY_DTOH, ds_dtoh_args, ds_bytes_res)              \
    B(memcpy_htod_striped, DS_MEMCPY_HTOD_STRIPED, ds_striped_args)         \
    S(memcpy_dtoh_striped, DS_MEMCPY_DTOH_STRIPED, ds_striped_args, ds_void_res) \
    S(memcpy_dtod, DS_MEMCPY_DTOD, ds_dtod_args, ds_void_res)               \
    B(memcpy_dtod_async, DS_MEMCPY_DTOD_ASYNC, ds_dtod_args)                \
    S(memset, DS_MEMSET, ds_memset_args, ds_void_res)                       \
    B(memset_async, DS_MEMSET_ASYNC, ds_memset_args)                        \
    S(host_map, DS_HOST_MAP, ds_host_map_args, ds_alloc_res)                \
    S(host_unmap, DS_HOST_UNMAP, ds_host_map_args, ds_void_res)             \
    B(memcpy_htod_arena, DS_MEMCPY_HTOD_ARENA, ds_arena_copy_args)          \
    B(memcpy_dtoh_arena, DS_MEMCPY_DTOH_ARENA, ds_arena_copy_args)          \
    S(mem_alloc_pitch, DS_MEM_ALLOC_PITCH, ds_alloc_pitch_args, ds_alloc_pitch_res) \
    S(memcpy_3d, DS_MEMCPY_3D, ds_copy3d_args, ds_void_res)                 \
    B(memcpy_3d_async, DS_MEMCPY_3D_ASYNC, ds_copy3d_args)                  \
    S(stream_create, DS_STREAM_CREATE, ds_stream_create_args, ds_handle_res) \
    S(stream_destroy, DS_STREAM_DESTROY, ds_handle, ds_void_res)            \
    S(stream_synchronize, DS_STREAM_SYNCHRONIZE, ds_handle, ds_void_res)    \
    S(stream_query, DS_STREAM_QUERY, ds_handle, ds_void_res)                \
    B(stream_wait_event, DS_STREAM_WAIT_EVENT, ds_wait_event_args)          \
    S(stream_get_info, DS_STREAM_GET_INFO, ds_handle, ds_stream_info_res)   \
    S(event_create, DS_EVENT_CREATE, ds_event_create_args, ds_handle_res)   \
    S(event_destroy, DS_EVENT_DESTROY, ds_handle, ds_void_res)              \
    B(event_record, DS_EVENT_RECORD, ds_record_args)                        \
    S(event_query, DS_EVENT_QUERY, ds_handle, ds_void_res)                  \
    S(event_synchronize, DS_EVENT_SYNCHRONIZE, ds_handle, ds_void_res)      \
    S(event_elapsed, DS_EVENT_ELAPSED, ds_elapsed_args, ds_elapsed_res)          \
    S(module_load, DS_MODULE_LOAD, ds_module_load_args, ds_handle_res)        \
    S(module_unload, DS_MODULE_UNLOAD, ds_handle, ds_void_res)                \
    S(module_get_function, DS_MODULE_GET_FUNCTION, ds_symbol_args, ds_function_res) \
    S(module_get_global, DS_MODULE_GET_GLOBAL, ds_symbol_args, ds_global_res) \
    S(func_get_attribute, DS_FUNC_GET_ATTRIBUTE, ds_func_attr_args, ds_int_res) \
    S(func_set_attribute, DS_FUNC_SET_ATTRIBUTE, ds_func_attr_args, ds_void_res) \
    S(occupancy, DS_OCCUPANCY, ds_occupancy_args, ds_int_res)                 \
    S(module_kernels, DS_MODULE_KERNELS, ds_handle, ds_names_res)             \
    B(launch, DS_LAUNCH, ds_launch_args)                                      \
    S(capture_begin, DS_CAPTURE_BEGIN, ds_capture_args, ds_void_res)          \
    S(capture_end, DS_CAPTURE_END, ds_handle, ds_handle_res)                  \
    S(capture_info, DS_CAPTURE_INFO, ds_handle, ds_capture_info_res)          \
    S(graph_instantiate, DS_GRAPH_INSTANTIATE, ds_instantiate_args, ds_handle_res) \
    B(graph_launch, DS_GRAPH_LAUNCH, ds_graph_launch_args)                    \
    S(graph_destroy, DS_GRAPH_DESTROY, ds_handle, ds_void_res)                \
    S(graph_exec_destroy, DS_GRAPH_EXEC_DESTROY, ds_handle, ds_void_res)      \
    S(graph_node_count, DS_GRAPH_NODE_COUNT, ds_handle, ds_hyper_res)         \
    S(graph_create, DS_GRAPH_CREATE, ds_graph_create_args, ds_handle_res)     \
    S(graph_add_node, DS_GRAPH_ADD_NODE, ds_graph_add_args, ds_handle_res)    \
    S(graph_edges, DS_GRAPH_EDGES, ds_graph_edges_args, ds_void_res)          \
    S(graph_node_destroy, DS_GRAPH_NODE_DESTROY, ds_handle, ds_void_res)      \
    S(graph_query, DS_GRAPH_QUERY, ds_graph_query_args, ds_graph_query_res)   \
    S(graph_node_info, DS_GRAPH_NODE_INFO, ds_handle, ds_node_info_res)       \
    S(graph_node_set, DS_GRAPH_NODE_SET, ds_node_set_args, ds_void_res)       \
    S(graph_clone, DS_GRAPH_CLONE, ds_handle, ds_handle_res)                  \
    S(vmm_granularity, DS_VMM_GRANULARITY, ds_vmm_granularity_args, ds_hyper_res) \
    S(vmm_reserve, DS_VMM_RESERVE, ds_vmm_reserve_args, ds_alloc_res)         \
    S(vmm_address_free, DS_VMM_ADDRESS_FREE, ds_range, ds_void_res)           \
    S(vmm_create, DS_VMM_CREATE, ds_vmm_create_args, ds_handle_res)           \
    S(vmm_release, DS_VMM_RELEASE, ds_handle, ds_void_res)                    \
    S(vmm_map, DS_VMM_MAP, ds_vmm_map_args, ds_void_res)                      \
    S(vmm_unmap, DS_VMM_UNMAP, ds_range, ds_void_res)                         \
    S(vmm_set_access, DS_VMM_SET_ACCESS, ds_vmm_set_access_args, ds_void_res) \
    S(vmm_get_access, DS_VMM_GET_ACCESS, ds_vmm_get_access_args, ds_hyper_res) \
    S(vmm_get_prop, DS_VMM_GET_PROP, ds_handle, ds_vmm_prop_res)              \
    S(vmm_retain, DS_VMM_RETAIN, ds_dptr, ds_handle_res)                      \
    S(tensormap_tiled, DS_TENSORMAP_TILED, ds_tensormap_tiled_args, ds_tensormap_res) \
    S(tensormap_im2col, DS_TENSORMAP_IM2COL, ds_tensormap_im2col_args, ds_tensormap_res) \
    S(tensormap_im2col_wide, DS_TENSORMAP_IM2COL_WIDE, ds_tensormap_im2col_wide_args, \
      ds_tensormap_res)                                                       \
    S(tensormap_replace, DS_TENSORMAP_REPLACE, ds_tensormap_replace_args, ds_tensormap_res) \
    S(ipc_mem_export, DS_IPC_MEM_EXPORT, ds_dptr, ds_ipc_handle_res)          \
    S(ipc_mem_open, DS_IPC_MEM_OPEN, ds_ipc_mem_open_args, ds_range_res)      \
    S(ipc_mem_close, DS_IPC_MEM_CLOSE, ds_dptr, ds_hyper_res)                 \
    S(ipc_event_export, DS_IPC_EVENT_EXPORT, ds_handle, ds_ipc_handle_res)    \
    S(ipc_event_open, DS_IPC_EVENT_OPEN, ds_ipc_event_open_args, ds_handle_res) \
    S(peer_export, DS_PEER_EXPORT, ds_dptr, ds_peer_token_res)                \
    S(peer_open, DS_PEER_OPEN, ds_peer_open_args, ds_range_res)               \
    S(peer_event_export, DS_PEER_EVENT_EXPORT, ds_handle, ds_peer_token_res)  \
    S(peer_event_open, DS_PEER_EVENT_OPEN, ds_peer_open_args, ds_handle_res)  \
    S(pool_default, DS_POOL_DEFAULT, int, ds_handle_res)                      \
    S(pool_current, DS_POOL_CURRENT, int, ds_handle_res)                      \
    S(pool_set_current, DS_POOL_SET_CURRENT, ds_pool_set_args, ds_void_res)   \
    S(pool_create, DS_POOL_CREATE, ds_pool_props, ds_handle_res)              \
    S(pool_destroy, DS_POOL_DESTROY, ds_handle, ds_void_res)                  \
    S(pool_attr, DS_POOL_ATTR, ds_pool_attr_args, ds_hyper_res)               \
    S(pool_trim, DS_POOL_TRIM, ds_pool_trim_args, ds_void_res)                \
    S(pool_set_access, DS_POOL_SET_ACCESS, ds_pool_set_access_args, ds_void_res) \
    S(pool_get_access, DS_POOL_GET_ACCESS, ds_pool_get_access_args, ds_hyper_res) \
    S(mem_alloc_async, DS_MEM_ALLOC_ASYNC, ds_alloc_async_args, ds_pool_alloc_res) \
    B(mem_free_async, DS_MEM_FREE_ASYNC, ds_free_async_args)                  \
    S(host_register, DS_HOST_REGISTER, ds_host_register_args, ds_alloc_res)    \
    S(mem_alloc_managed, DS_MEM_ALLOC_MANAGED, ds_host_register_args, ds_alloc_res) \
    S(link, DS_LINK, ds_link_args, ds_link_res)                               \
    S(array_create, DS_ARRAY_CREATE, ds_array_create_args, ds_handle_res)     \
    S(array_destroy, DS_ARRAY_DESTROY, ds_array_ref, ds_void_res)             \
    S(array_info, DS_ARRAY_INFO, ds_array_ref, ds_array_info_res)             \
    S(mipmap_level, DS_MIPMAP_LEVEL, ds_mipmap_level_args, ds_handle_res)     \
    S(array_copy, DS_ARRAY_COPY, ds_array_copy_args, ds_void_res)             \
    B(array_copy_async, DS_ARRAY_COPY_ASYNC, ds_array_copy_args)              \
    S(array_write, DS_ARRAY_WRITE, ds_array_write_args, ds_void_res)          \
    B(array_write_async, DS_ARRAY_WRITE_ASYNC, ds_array_write_args)           \
    S(array_read, DS_ARRAY_READ, ds_array_read_args, ds_bytes_res)            \
    S(tex_create, DS_TEX_CREATE, ds_tex_create_args, ds_hyper_res)            \
    S(tex_destroy, DS_TEX_DESTROY, ds_handle, ds_void_res)                    \
    S(surf_create, DS_SURF_CREATE, ds_surf_create_args, ds_hyper_res)         \
    S(surf_destroy, DS_SURF_DESTROY, ds_handle, ds_void_res)                  \
    S(graph_exec_info, DS_GRAPH_EXEC_INFO, ds_handle, ds_gexec_info_res)      \
    S(graph_launch_stage, DS_GRAPH_LAUNCH_STAGE, ds_stage_args, ds_stage_res) \
    S(graph_find_in_clone, DS_GRAPH_FIND_IN_CLONE, ds_find_in_clone_args, ds_handle_res) \
    S(graph_cond_create, DS_GRAPH_COND_CREATE, ds_cond_create_args, ds_hyper_res) \
    S(graph_exec_update, DS_GRAPH_EXEC_UPDATE, ds_exec_update_args, ds_exec_update_res) \
    S(graph_node_enable, DS_GRAPH_NODE_ENABLE, ds_node_enable_args, ds_int_res) \
    S(graph_mem_attr, DS_GRAPH_MEM_ATTR, ds_graph_mem_attr_args, ds_hyper_res) \
    B(stream_memop, DS_STREAM_MEMOP, ds_memop_args)                           \
    S(dev_query, DS_DEV_QUERY, ds_devq_args, ds_devq_res)                    \
    S(ctx_set_flags, DS_CTX_SET_FLAGS, ds_ctx_flags_args, ds_void_res)       \
    B(ctx_event, DS_CTX_EVENT, ds_ctx_event_args)                             \
    S(capture_to_graph, DS_CAPTURE_TO_GRAPH, ds_capture_to_graph_args, ds_void_res) \
    S(capture_deps, DS_CAPTURE_DEPS, ds_capture_deps_args, ds_void_res)     \
    S(capture_host_copy, DS_CAPTURE_HOST_COPY, ds_capture_copy_args, ds_int_res) \
    S(capture_host_fn, DS_CAPTURE_HOST_FN, ds_capture_host_fn_args, ds_int_res) \
    S(capture_graph, DS_CAPTURE_GRAPH, ds_handle, ds_capture_graph_res) \
    S(tenant_share, DS_TENANT_SHARE, int, ds_share_res)                       \
    S(device_facts, DS_DEVICE_FACTS, int, ds_facts_res)

/* Highest procedure number the tables indexed by number hold: the end of the last range
 * in detshare.x (the tenant's share of the device, 320-329). */
#define DS_PROC_MAX 329

/* Name of procedure `proc` ("mem_alloc"), or NULL when the list has no such number. */
const char *ds_proc_name(unsigned long proc);

/* 1 when `proc` is batched (no reply), 0 when synchronous, -1 when unknown. */
int ds_proc_batched(unsigned long proc);

#endif
