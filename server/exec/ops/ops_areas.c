/*
 * What each area of the handlers keeps for a tenant, and how it goes (struct
 * ds_tenant_area): the one list tenant.c walks, so that it names no area itself.
 *
 * The order is the teardown's: at the tenant's end, VMM mappings and reservations, pools
 * the in-band copy buffers and the trace's events (fini); then, for one context or for all: arrays and
 * texture objects, graph instances and graphs, modules, streams, memory opened from
 * other tenants, events, and device allocations last.
 */
#include "ops.h"

#include "bulk.h"
#include "trace.h"

static const struct ds_tenant_area areas[] = {
    { .fini = ds__ops_vmm_fini },
    { .init = ds__ops_pool_init, .fini = ds__ops_pool_fini },
    { .fini = ds__bulk_fini },
    { .fini = ds__trace_fini },
    { .fini = ds__ops_shadows_fini },
    { .drop = ds__ops_array_drop },
    { .drop = ds__ops_graph_drop },
    { .drop = ds__ops_module_drop },
    { .drop = ds__ops_stream_drop },
    { .drop = ds__ops_ipc_close },
    { .drop = ds__ops_event_drop },
    { .drop = ds__ops_mem_drop },
};

const struct ds_tenant_areas ds__ops_areas = { areas, sizeof(areas) / sizeof(areas[0]) };
