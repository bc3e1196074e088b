/*
 * CUDA IPC: memory and events shared with another tenant of the same user, as
 * torch.multiprocessing shares CUDA tensors.  A handle is 64 bytes that the executor
 * issued and that the tenant hands on by any means; the executor checks every byte of one
 * before opening it (server/exec/ops_ipc.c).  The client checks only the caller's
 * pointers, and notes opened memory as device memory, for cuMemcpy and pointer
 * attributes, until its last reference is closed.  Every call is synchronous, as in CUDA.
 */
#include "cuda_api.h"
#include "ipc.h"

#include "ctx.h"
#include "ds_memtab.h"
#include "mem.h"
#include "rpc.h"

#include <pthread.h>
#include <string.h>

_Static_assert(sizeof(CUipcMemHandle) == DS_IPC_HANDLE_SIZE, "a handle travels whole");
_Static_assert(sizeof(CUipcEventHandle) == DS_IPC_HANDLE_SIZE, "a handle travels whole");

/* The tenant's interprocess events, by handle (each a range of one). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ds_memtab ipc_events;

void ds__ipc_event_note(CUevent e, int ipc)
{
    struct ds_memtab_entry x = { .base = (uint64_t)(uintptr_t)e, .size = 1 };

    pthread_mutex_lock(&lock);
    if (ipc)
        ds_memtab_insert(&ipc_events, &x);
    else
        ds_memtab_remove(&ipc_events, x.base, NULL);
    pthread_mutex_unlock(&lock);
}

static int is_ipc(CUevent e)
{
    int found;

    pthread_mutex_lock(&lock);
    found = ds_memtab_find(&ipc_events, (uint64_t)(uintptr_t)e, 0) != NULL;
    pthread_mutex_unlock(&lock);
    return found;
}

/* A query is synchronous and served in order: once it is answered, the record is done. */
CUresult ds__ipc_event_recorded(CUevent e)
{
    ds_handle h = (ds_handle)(uintptr_t)e;
    ds_void_res r;
    CUresult rc;

    if (!is_ipc(e))
        return CUDA_SUCCESS;
    rc = ds_rpc_event_query(&h, &r);
    return rc == CUDA_ERROR_NOT_READY ? CUDA_SUCCESS : rc;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    ds_dptr p = dptr;
    ds_ipc_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (pHandle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_ipc_mem_export(&p, &r);
    if (rc == CUDA_SUCCESS)
        memcpy(pHandle->reserved, r.ds_ipc_handle_res_u.handle.bytes, sizeof(pHandle->reserved));
    return rc;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    ds_ipc_mem_open_args a = { .flags = Flags };
    ds_range_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (pdptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    memcpy(a.handle.bytes, handle.reserved, sizeof(a.handle.bytes));
    rc = ds_rpc_ipc_mem_open(&a, &r);
    if (rc == CUDA_SUCCESS) {
        *pdptr = r.ds_range_res_u.range.base;
        ds__mem_remember(r.ds_range_res_u.range.base, r.ds_range_res_u.range.size);
    }
    return rc;
}

/* The same call under its CUDA 4.1 name. */
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    ds_dptr p = dptr;
    ds_hyper_res r;
    CUresult rc;

    DS_NEED_INIT();
    rc = ds_rpc_ipc_mem_close(&p, &r);
    if (rc == CUDA_SUCCESS && r.ds_hyper_res_u.value == 0)
        ds__mem_forget(dptr, 1);
    return rc;
}

CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    ds_handle h = (ds_handle)(uintptr_t)event;
    ds_ipc_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (pHandle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (event == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    rc = ds_rpc_ipc_event_export(&h, &r);
    if (rc == CUDA_SUCCESS)
        memcpy(pHandle->reserved, r.ds_ipc_handle_res_u.handle.bytes, sizeof(pHandle->reserved));
    return rc;
}

CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    ds_ipc_event_open_args a;
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (phEvent == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = ds__ctx_current(&a.ctx)) != CUDA_SUCCESS)
        return rc;
    memcpy(a.handle.bytes, handle.reserved, sizeof(a.handle.bytes));
    rc = ds_rpc_ipc_event_open(&a, &r);
    if (rc == CUDA_SUCCESS) {
        *phEvent = (CUevent)(uintptr_t)r.ds_handle_res_u.handle;
        ds__ipc_event_note(*phEvent, 1);
    }
    return rc;
}
