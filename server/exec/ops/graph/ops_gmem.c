/*
 * Graph memory: what memory allocation nodes allocate.  The executor allocates a node's
 * memory when the node is added, so that its address is known (as CUDA's is) and every
 * node after it can be checked against it, and keeps it until the node and every
 * instance of its graph are gone.  It counts in the tenant's device memory from the
 * start, where CUDA maps it only while a launch has it allocated: a tenant's quota is
 * never exceeded by a launch.  A memory free node, and cuMemFree of graph memory, free
 * nothing here: the memory stays the node's.  cuMemAllocAsync on a capturing stream makes
 * graph memory the same way, which the captured graph holds.
 */
#include "ops.h"

#include "ds_error.h"

#include <stdlib.h>

CUresult ds__ops_gmem_new(struct ds_tenant *t, uint64_t size, struct ds_gmem **out)
{
    struct ds_memtab_entry e = { .size = size, .kind = DS_RANGE_GRAPH };
    struct ds_gmem *m;
    int rc;

    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((m = calloc(1, sizeof(*m))) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (ds__account_take(&t->acct, DS_MEM_DEVICE, size) != 0) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rc = t->ops->dev_alloc(t->be, size, CU_STREAM_CAPTURE_MODE_RELAXED, &e.base);
    e.owner = (uint64_t)(uintptr_t)m;
    if (rc == 0 && (rc = ds_memtab_insert(&t->mem, &e)) != 0)
        t->ops->dev_free(t->be, e.base);
    if (rc != 0) {
        ds__account_give(&t->acct, DS_MEM_DEVICE, size);
        free(m);
        return ds_error_to_cu(rc);
    }
    *m = (struct ds_gmem){ .base = e.base, .size = size, .refs = 1 };
    t->graph_mem += size;
    if (t->graph_mem > t->graph_mem_high)
        t->graph_mem_high = t->graph_mem;
    *out = m;
    return CUDA_SUCCESS;
}

struct ds_gmem *ds__ops_gmem_of(struct ds_tenant *t, uint64_t ptr)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&t->mem, ptr, 0);

    if (e == NULL || e->base != ptr || e->kind != DS_RANGE_GRAPH)
        return NULL;
    return (struct ds_gmem *)(uintptr_t)e->owner;
}

void ds__ops_gmem_release(struct ds_tenant *t, struct ds_gmem *m)
{
    if (--m->refs > 0)
        return;
    ds_memtab_remove(&t->mem, m->base, NULL);
    t->ops->dev_free(t->be, m->base);
    ds__account_give(&t->acct, DS_MEM_DEVICE, m->size);
    t->graph_mem -= m->size;
    free(m);
}

/* Used and reserved memory are one here: graph memory is allocated once and kept. */
CUresult ds__ops_graph_mem_attr(struct ds_tenant *t, const ds_graph_mem_attr_args *a,
                                ds_hyper_res *r)
{
    int high = a->attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH ||
               a->attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH;

    if (!high && a->attr != CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT &&
        a->attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->set) {
        /* Only a high watermark can be set, and only back to 0: to what is used now. */
        if (!high || a->value != 0)
            return CUDA_ERROR_INVALID_VALUE;
        t->graph_mem_high = t->graph_mem;
    }
    r->ds_hyper_res_u.value = high ? t->graph_mem_high : t->graph_mem;
    return CUDA_SUCCESS;
}

CUresult ds__ops_gmem_capture(struct ds_tenant *t, uint64_t stream, uint64_t size,
                              uint64_t *ptr)
{
    struct ds_gcap *grown = realloc(t->gcap, (t->ngcap + 1) * sizeof(*grown));
    struct ds_gmem *m;
    CUresult rc;

    if (grown == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    t->gcap = grown;
    if ((rc = ds__ops_gmem_new(t, size, &m)) != CUDA_SUCCESS)
        return rc;
    t->gcap[t->ngcap++] = (struct ds_gcap){ .stream = stream, .m = m };
    *ptr = m->base;
    return CUDA_SUCCESS;
}

CUresult ds__ops_gmem_captured(struct ds_tenant *t, uint64_t stream, struct ds_vgraph *g)
{
    CUresult rc = CUDA_SUCCESS;

    for (uint32_t i = t->ngcap; i-- > 0;) {
        struct ds_gmem **grown;

        if (t->gcap[i].stream != stream)
            continue;
        grown = g != NULL && rc == CUDA_SUCCESS
                    ? realloc(g->gmems, (g->ngmems + 1) * sizeof(*grown))
                    : NULL;
        if (grown == NULL) {
            rc = g != NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
            ds__ops_gmem_release(t, t->gcap[i].m);
        } else {
            g->gmems = grown;
            g->gmems[g->ngmems++] = t->gcap[i].m;
        }
        t->gcap[i] = t->gcap[--t->ngcap];
    }
    return rc;
}

void ds__ops_gmem_drop_captures(struct ds_tenant *t)
{
    for (uint32_t i = 0; i < t->ngcap; i++)
        ds__ops_gmem_release(t, t->gcap[i].m);
    free(t->gcap);
    t->gcap = NULL;
    t->ngcap = 0;
}
