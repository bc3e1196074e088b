#include "ops.h"
#include "shm.h"

#include "ds_error.h"
#include "ds_image.h"
#include "ds_log.h"
#include "ds_clock.h"

#include <stdlib.h>
#include <string.h>

CUresult ds__ops_module_load(struct ds_tenant *t, const ds_module_load_args *a, ds_handle_res *r)
{
    struct ds_vmodule *m;
    enum ds_image_kind kind;
    size_t size;
    int rc;

    /* A library loaded while no context is current goes with the primary, retained or
     * not (client/api/module.c). */
    if (ds__tenant_ctx(t, a->ctx) == NULL && (a->ctx != t->primary || t->primary == 0))
        return CUDA_ERROR_INVALID_CONTEXT;
    /* The bytes must be one whole image of a known kind, with nothing read past them. */
    if (ds_image_identify(a->image.image_val, a->image.image_len, &kind, NULL, &size) != 0 ||
        size > a->image.image_len)
        return CUDA_ERROR_INVALID_IMAGE;
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->ctx = a->ctx;
    rc = t->ops->module_load(t->be, a->image.image_val, size, &m->real);
    if (rc != 0) {
        free(m);
        return rc == DS_EINVAL ? CUDA_ERROR_INVALID_IMAGE : ds_error_to_cu(rc);
    }
    r->ds_handle_res_u.handle = ds_handles_add(&t->h, DS_H_MODULE, m);
    if (r->ds_handle_res_u.handle == 0) {
        t->ops->module_unload(t->be, m->real);
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

/* Unload module h: its functions go, and its globals stop being valid addresses. */
static void unload(struct ds_tenant *t, uint64_t h)
{
    struct ds_vmodule *m = ds_handles_remove(&t->h, h, DS_H_MODULE);
    uint32_t cur = 0;
    uint64_t fh;

    if (m == NULL)
        return;
    while ((fh = ds_handles_next(&t->h, DS_H_FUNC, &cur)) != 0) {
        struct ds_vfunc *f = ds_handles_get(&t->h, fh, DS_H_FUNC);

        if (f->module == h) {
            ds_handles_remove(&t->h, fh, DS_H_FUNC);
            free(f->layout.offset);
            free(f->layout.size);
            free(f->name);
            free(f);
        }
    }
    for (size_t i = t->mem.n; i-- > 0;)
        if (t->mem.v[i].kind == DS_RANGE_GLOBAL && t->mem.v[i].owner == h)
            ds_memtab_remove(&t->mem, t->mem.v[i].base, NULL);
    t->ops->module_unload(t->be, m->real);
    free(m);
}

CUresult ds__ops_module_unload(struct ds_tenant *t, const ds_handle *h, ds_void_res *r)
{
    (void)r;
    if (ds_handles_get(&t->h, *h, DS_H_MODULE) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    unload(t, *h);
    return CUDA_SUCCESS;
}

/* The function of module h named `name`, if the tenant already asked for it. */
static uint64_t known_function(struct ds_tenant *t, uint64_t module, const char *name)
{
    uint32_t cur = 0;
    uint64_t fh;

    while ((fh = ds_handles_next(&t->h, DS_H_FUNC, &cur)) != 0) {
        struct ds_vfunc *f = ds_handles_get(&t->h, fh, DS_H_FUNC);

        if (f->module == module && strcmp(f->name, name) == 0)
            return fh;
    }
    return 0;
}

static CUresult describe(struct ds_tenant *t, struct ds_vfunc *f, uint64_t h,
                         ds_function *out)
{
    int *v = calloc(CU_FUNC_ATTRIBUTE_MAX, sizeof(int));

    if (v == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    out->attrs.attrs_val = v;
    out->attrs.attrs_len = CU_FUNC_ATTRIBUTE_MAX;
    for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX; a++)
        if (t->ops->func_get_attribute(t->be, f->real, a, &v[a]) == 0)
            out->attrs_known |= 1ull << a;
    out->handle = h;
    out->param_bytes = f->layout.bytes;
    out->params.params_len = f->layout.n;
    out->params.params_val = calloc(f->layout.n ? f->layout.n : 1, sizeof(ds_param));
    if (out->params.params_val == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < f->layout.n; i++) {
        out->params.params_val[i].offset = f->layout.offset[i];
        out->params.params_val[i].size = f->layout.size[i];
    }
    return CUDA_SUCCESS;
}

static struct ds_vfunc *new_function(struct ds_tenant *t, struct ds_vmodule *m, uint64_t mh,
                                     const char *name, int *rc)
{
    struct ds_vfunc *f = calloc(1, sizeof(*f));

    *rc = DS_ENOMEM;
    if (f == NULL || (f->name = strdup(name)) == NULL) {
        free(f);
        return NULL;
    }
    f->module = mh;
    *rc = t->ops->module_get_function(t->be, m->real, name, &f->real, &f->layout);
    if (*rc != 0) {
        free(f->name);
        free(f);
        return NULL;
    }
    return f;
}

CUresult ds__ops_module_get_function(struct ds_tenant *t, const ds_symbol_args *a,
                                     ds_function_res *r)
{
    struct ds_vmodule *m = ds_handles_get(&t->h, a->module, DS_H_MODULE);
    struct ds_vfunc *f;
    uint64_t h;
    int rc;

    if (m == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    h = known_function(t, a->module, a->name);
    if (h != 0)
        return describe(t, ds_handles_get(&t->h, h, DS_H_FUNC), h, &r->ds_function_res_u.fn);
    f = new_function(t, m, a->module, a->name, &rc);
    if (f == NULL)
        return rc == DS_ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_NOT_FOUND;
    h = ds_handles_add(&t->h, DS_H_FUNC, f);
    if (h == 0) {
        free(f->layout.offset);
        free(f->layout.size);
        free(f->name);
        free(f);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return describe(t, f, h, &r->ds_function_res_u.fn);
}

CUresult ds__ops_module_kernels(struct ds_tenant *t, const ds_handle *a, ds_names_res *r)
{
    struct ds_vmodule *m = ds_handles_get(&t->h, *a, DS_H_MODULE);
    const char **names;
    uint32_t n;
    int rc;

    if (m == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    rc = t->ops->module_kernels(t->be, m->real, &names, &n);
    if (rc != 0)
        return (CUresult)ds_error_to_cu(rc);
    /* The reply owns copies: xdr_free releases them after sending. */
    r->ds_names_res_u.names.names_val = calloc(n ? n : 1, sizeof(char *));
    for (uint32_t i = 0; r->ds_names_res_u.names.names_val != NULL && i < n; i++) {
        if ((r->ds_names_res_u.names.names_val[i] = strdup(names[i])) == NULL)
            break;
        r->ds_names_res_u.names.names_len = i + 1;
    }
    free(names);
    return r->ds_names_res_u.names.names_len == n ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult ds__ops_module_get_global(struct ds_tenant *t, const ds_symbol_args *a,
                                   ds_global_res *r)
{
    struct ds_vmodule *m = ds_handles_get(&t->h, a->module, DS_H_MODULE);
    struct ds_memtab_entry e = { .owner = a->module, .kind = DS_RANGE_GLOBAL };
    const struct ds_memtab_entry *old;
    int rc;

    if (m == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    rc = t->ops->module_get_global(t->be, m->real, a->name, &e.base, &e.size);
    if (rc != 0)
        return rc == DS_ENOTSUP ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_FOUND;
    /* The global's bytes become a range the tenant may copy to and from. */
    old = ds_memtab_find(&t->mem, e.base, e.size);
    if (old == NULL && e.size > 0 && ds_memtab_insert(&t->mem, &e) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r->ds_global_res_u.global.ptr = e.base;
    r->ds_global_res_u.global.size = e.size;
    return CUDA_SUCCESS;
}

static struct ds_vfunc *function(struct ds_tenant *t, ds_handle h)
{
    return ds_handles_get(&t->h, h, DS_H_FUNC);
}

CUresult ds__ops_func_get_attribute(struct ds_tenant *t, const ds_func_attr_args *a,
                                    ds_int_res *r)
{
    struct ds_vfunc *f = function(t, a->fn);

    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->attr < 0 || a->attr >= CU_FUNC_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    return ds_error_to_cu(t->ops->func_get_attribute(t->be, f->real, a->attr,
                                                     &r->ds_int_res_u.value));
}

CUresult ds__ops_func_set_attribute(struct ds_tenant *t, const ds_func_attr_args *a,
                                    ds_void_res *r)
{
    struct ds_vfunc *f = function(t, a->fn);

    (void)r;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a->attr < 0 || a->attr >= CU_FUNC_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    return ds_error_to_cu(t->ops->func_set_attribute(t->be, f->real, a->attr, a->value));
}

CUresult ds__ops_occupancy(struct ds_tenant *t, const ds_occupancy_args *a, ds_int_res *r)
{
    struct ds_vfunc *f = function(t, a->fn);

    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    ds_debug("occupancy query %d of %s: block %d (%ux%ux%u), blocks %d, smem %llu, cluster "
             "%ux%ux%u", (int)a->query, f->name, a->block_size, a->block[0], a->block[1],
             a->block[2], a->num_blocks, (unsigned long long)a->dynamic_smem, a->cluster[0],
             a->cluster[1], a->cluster[2]);
    if (a->block_size <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->query == DS_OCC_DYNAMIC_SMEM) {
        size_t smem = 0;
        int rc;

        if (a->num_blocks <= 0)
            return CUDA_ERROR_INVALID_VALUE;
        rc = t->ops->occupancy_smem(t->be, f->real, a->num_blocks, a->block_size, &smem);
        r->ds_int_res_u.value = (int)smem;
        return ds_error_to_cu(rc);
    }
    if (a->query == DS_OCC_CLUSTERS || a->query == DS_OCC_CLUSTER_SIZE) {
        struct ds_launch l = { .shared_mem = (unsigned)a->dynamic_smem };

        if (a->dynamic_smem > UINT32_MAX)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(l.grid, a->grid, sizeof(l.grid));
        memcpy(l.block, a->block, sizeof(l.block));
        if (a->query == DS_OCC_CLUSTER_SIZE)
            return ds_error_to_cu(t->ops->occupancy_cluster_size(t->be, f->real, &l,
                                                                 &r->ds_int_res_u.value));
        return ds_error_to_cu(t->ops->occupancy_clusters(t->be, f->real, &l, a->cluster,
                                                         &r->ds_int_res_u.value));
    }
    if (a->query != DS_OCC_BLOCKS)
        return CUDA_ERROR_INVALID_VALUE;
    return ds_error_to_cu(t->ops->occupancy(t->be, f->real, a->block_size, a->dynamic_smem,
                                            a->flags, &r->ds_int_res_u.value));
}

/* Launches are checked against what the device allows and what the kernel takes, but
 * never altered: the same shape and bytes reach the device. */
int ds__ops_bad_shape(const struct ds_tenant *t, const unsigned grid[3], const unsigned block[3])
{
    const int *at = t->view.attrs;
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];

    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || threads == 0)
        return 1;
    if (grid[0] > (unsigned)at[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] ||
        grid[1] > (unsigned)at[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] ||
        grid[2] > (unsigned)at[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z])
        return 1;
    if (block[0] > (unsigned)at[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] ||
        block[1] > (unsigned)at[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] ||
        block[2] > (unsigned)at[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z])
        return 1;
    return threads > (uint64_t)at[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
}

/* Launch attributes travel as the tenant gave them when they are plain values.  The
 * access-policy window names device memory, which must be the tenant's; attributes that
 * carry event or graph-node handles are not served yet. */
CUresult ds__ops_launch_attrs(struct ds_tenant *t, const ds_launch_attr *attrs, unsigned n,
                              CUlaunchAttribute *out)
{
    for (unsigned i = 0; i < n; i++) {
        const ds_launch_attr *in = &attrs[i];

        memset(&out[i], 0, sizeof(out[i]));
        out[i].id = (CUlaunchAttributeID)in->id;
        memcpy(&out[i].value, in->value, sizeof(in->value));
        switch (in->id) {
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
        case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
        case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
            break;
        case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
            const CUaccessPolicyWindow *w = &out[i].value.accessPolicyWindow;

            if (ds__tenant_range(t, (uint64_t)(uintptr_t)w->base_ptr, w->num_bytes) != 0)
                return CUDA_ERROR_INVALID_VALUE;
            break;
        }
        default:
            ds_warn("launch attribute %d is not served yet", in->id);
            return CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    return CUDA_SUCCESS;
}

/* The backend's part of a launch (the driver's, on a GPU), timed when asked, against
 * which the executor's whole time serving a launch shows its own cost; a kernel that
 * escaped the tenant's partition is counted for status and the policy. */
static CUresult backend_launch(struct ds_tenant *t, struct ds_vfunc *f,
                               const struct ds_launch *l, uint64_t stream, struct ds_bstream *s)
{
    uint64_t t0 = t->timing ? ds_now_ns() : 0;
    struct ds_trace_mark m;
    int rc;

    ds__trace_begin(t, stream, s, &m);
    rc = t->ops->launch(t->be, f->real, l, s);
    ds__trace_end(t, s, &m, rc < 0 ? rc : 0, DS_TRACE_KERNEL, f->name, 0);
    if (t->timing)
        t->launch_backend_ns += ds_now_ns() - t0;
    if (rc == DS_LAUNCH_ESCAPED) {
        atomic_fetch_add(&t->shm->slots[t->slot].escapes, 1);
        rc = 0;
    }
    return ds_error_to_cu(rc);
}

CUresult ds__ops_launch(struct ds_tenant *t, const ds_launch_args *a)
{
    struct ds_vfunc *f = function(t, a->fn);
    CUlaunchAttribute attrs[DS_LAUNCH_ATTRS_MAX];
    struct ds_launch l;
    struct ds_bstream *s;
    CUresult rc;

    if (f == NULL || ds__tenant_stream(t, a->stream, &s) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ds__ops_bad_shape(t, a->grid, a->block))
        return CUDA_ERROR_INVALID_VALUE;
    if (a->params.params_len != f->layout.bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ops_launch_attrs(t, a->attrs.attrs_val, a->attrs.attrs_len, attrs)) !=
        CUDA_SUCCESS)
        return rc;
    l.attrs = attrs;
    l.nattrs = a->attrs.attrs_len;
    memcpy(l.grid, a->grid, sizeof(l.grid));
    memcpy(l.block, a->block, sizeof(l.block));
    l.shared_mem = a->shared_mem;
    l.params = a->params.params_val;
    l.param_bytes = a->params.params_len;
    ds__tenant_kernel_boundary(t, s);
    rc = backend_launch(t, f, &l, a->stream, s);
    if (rc == CUDA_SUCCESS)
        ds__tenant_launched(t, s, ds__tenant_capturing(t, a->stream));
    return rc;
}

void ds__ops_module_drop(struct ds_tenant *t, uint64_t ctx, int all)
{
    uint32_t cur = 0;
    uint64_t h;

    while ((h = ds_handles_next(&t->h, DS_H_MODULE, &cur)) != 0) {
        struct ds_vmodule *m = ds_handles_get(&t->h, h, DS_H_MODULE);

        if (all || m->ctx == ctx)
            unload(t, h);
    }
}
