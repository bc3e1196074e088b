/*
 * Gates on the device (DESIGN.md, "Preemption and gates"): before a kernel, the stream
 * waits on the GPU itself (cuStreamWaitValue32) for the tenant's gate word in the
 * control block to read 0.  The control process closes the gate by writing 1, with no
 * executor involved, and the GPU holds the tenant's next kernel, even one submitted long
 * before.  The word's page of this process's mapping is registered for the device once.
 */
#include "cuda_backend.h"

#include "ds_error.h"
#include "ds_log.h"

#include <unistd.h>

static int map_word(struct ds_backend *b, const volatile unsigned *word, CUdeviceptr *out)
{
    uintptr_t page = (uintptr_t)word & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
    CUdeviceptr d = 0;
    CUresult r;

    if (b->gate_page != page) {
        if (b->gate_page != 0)
            b->cu.cuMemHostUnregister((void *)b->gate_page);
        b->gate_page = 0;
        r = b->cu.cuMemHostRegister((void *)page, (size_t)sysconf(_SC_PAGESIZE),
                                    CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
        if (r == CUDA_SUCCESS)
            r = b->cu.cuMemHostGetDevicePointer(&d, (void *)page, 0);
        if (r != CUDA_SUCCESS) {
            ds_warn("cannot map the gate for the device (CUresult %d): gates hold only "
                    "work not yet submitted", r);
            return ds__cuda_err(r);
        }
        b->gate_page = page;
        b->gate_dev = d;
    }
    *out = b->gate_dev + ((uintptr_t)word - page);
    return 0;
}

int ds__cuda_gate(struct ds_backend *b, struct ds_bstream *s, const volatile unsigned *word)
{
    CUdeviceptr d = 0;
    int rc;

    s = ds__cuda_real(b, s);
    /* A capture would record the wait into the graph. */
    if (s->capturing)
        return 0;
    rc = map_word(b, word, &d);
    if (rc == 0)
        rc = ds__cuda_err(b->cu.cuStreamWaitValue32(s->s, d, 0, CU_STREAM_WAIT_VALUE_EQ));
    return rc;
}
