/*
 * The sim's stream memory operations, and its device queries.  The parked streams their
 * waits make are sim_work.c's.
 */
#include "sim_core.h"

#include "detshare.h"
#include "ds_error.h"

#include <stdlib.h>
#include <string.h>

static struct sim_work memop_item(const struct ds_memop_desc *op)
{
    struct sim_work w = { .kind = W_MEMOP, .memop = *op };

    if (op->kind == CU_STREAM_MEM_OP_WAIT_VALUE_32 || op->kind == CU_STREAM_MEM_OP_WRITE_VALUE_32)
        w.elem = 4;
    else if (op->kind == CU_STREAM_MEM_OP_WAIT_VALUE_64 ||
             op->kind == CU_STREAM_MEM_OP_WRITE_VALUE_64)
        w.elem = 8;
    return w;
}

int ds__sim_memops(struct ds_backend *b, struct ds_bstream *s, const struct ds_memop_desc *ops,
                   unsigned n)
{
    int rc = 0;

    for (unsigned i = 0; i < n && rc == 0; i++) {
        struct sim_work w = memop_item(&ops[i]);

        rc = ds__sim_work_run(b, s, &w);
    }
    return rc;
}

/* A graph runs the node's items as the stream operations run: a wait that does not hold
 * parks the launching stream behind it. */
int ds__sim_memop_list(const struct ds_memop_desc *ops, unsigned n, struct sim_work **out)
{
    struct sim_work **tail = out;

    *out = NULL;
    for (unsigned i = 0; i < n; i++) {
        if ((*tail = malloc(sizeof(**tail))) == NULL) {
            ds__sim_free_work(*out);
            *out = NULL;
            return DS_ENOMEM;
        }
        **tail = memop_item(&ops[i]);
        tail = &(*tail)->next;
    }
    return 0;
}

/* An H100's answers on Linux (docs/sim-device.md): no LUID (a Windows notion), 2^28
 * elements of a 1-D linear texture, and no native atomics with the host over PCIe. */
int ds__sim_dev_query(struct ds_backend *b, const struct ds_devq *q, uint64_t *values)
{
    (void)b;
    switch (q->kind) {
    case DS_DEVQ_TEX1D_LINEAR_WIDTH:
        values[0] = 1ull << 28;
        return 0;
    case DS_DEVQ_HOST_ATOMIC_CAPS:
        memset(values, 0, q->n * sizeof(*values));
        return 0;
    default:
        return DS_ENOTSUP;
    }
}
