/*
 * CUDA IPC on the real GPU: each tenant's executor is a process of its own (an MPS
 * client), so the driver's IPC works between them as between any two processes.  The
 * blob of an export is the driver's own 64-byte handle; it travels through the server's
 * registry (server/ipcreg.h), never through the tenant, which sees only the handle the
 * registry made.  Memory is exported, opened and closed by the driver in the context the
 * executor keeps current; what the driver answers is what the tenant gets.
 */
#include "cuda_backend.h"

#include "ds_error.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(CUipcMemHandle) == DS_IPC_BLOB, "a driver handle is a blob");
_Static_assert(sizeof(CUipcEventHandle) == DS_IPC_BLOB, "a driver handle is a blob");

int ds__cuda_ipc_mem_export(struct ds_backend *b, uint64_t addr, uint64_t size,
                            unsigned char blob[DS_IPC_BLOB])
{
    CUipcMemHandle h;
    CUresult r = b->cu.cuIpcGetMemHandle(&h, addr);

    (void)size;
    if (r == CUDA_SUCCESS)
        memcpy(blob, &h, sizeof(h));
    return ds__cuda_err(r);
}

int ds__cuda_ipc_mem_open(struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],
                          uint64_t size, unsigned flags, uint64_t *addr)
{
    CUipcMemHandle h;
    CUdeviceptr p = 0;
    CUresult r;

    (void)size;
    memcpy(&h, blob, sizeof(h));
    r = b->cu.cuIpcOpenMemHandle(&p, h, flags);
    *addr = p;
    return ds__cuda_err(r);
}

void ds__cuda_ipc_mem_close(struct ds_backend *b, uint64_t addr)
{
    b->cu.cuIpcCloseMemHandle(addr);
}

int ds__cuda_ipc_event_export(struct ds_backend *b, struct ds_bevent *e,
                              unsigned char blob[DS_IPC_BLOB])
{
    CUipcEventHandle h;
    CUresult r = b->cu.cuIpcGetEventHandle(&h, e->e);

    if (r == CUDA_SUCCESS)
        memcpy(blob, &h, sizeof(h));
    return ds__cuda_err(r);
}

int ds__cuda_ipc_event_open(struct ds_backend *b, const unsigned char blob[DS_IPC_BLOB],
                            struct ds_bevent **out)
{
    struct ds_bevent *e = calloc(1, sizeof(*e));
    CUipcEventHandle h;
    CUresult r;

    if (e == NULL)
        return DS_ENOMEM;
    memcpy(&h, blob, sizeof(h));
    r = b->cu.cuIpcOpenEventHandle(&e->e, h);
    if (r != CUDA_SUCCESS) {
        free(e);
        return ds__cuda_err(r);
    }
    *out = e;
    return 0;
}
