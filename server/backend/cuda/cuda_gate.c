/*
 * Gates and progress stamps on the device (docs/design.md, "Gates and progress stamps").
 * Before a kernel, the stream waits on the GPU itself (cuStreamWaitValue32) for the
 * tenant's gate word in the control block to read 0: the control process closes the gate
 * by writing 1, with no executor involved, and the GPU holds the tenant's next kernel,
 * even one submitted long before.  After a launch, the stream writes the launch's number
 * into the tenant's stamps (cuStreamWriteValue32) when it gets there, which tells the
 * control process what has completed without anyone synchronising.  The pages holding
 * those words are registered for the device once each.
 */
#include "cuda_backend.h"

#include "ds_error.h"
#include "ds_log.h"
#include "shm.h"

#include <unistd.h>

static int register_page(struct ds_backend *b, uintptr_t page, CUdeviceptr *dev)
{
    CUresult r;

    if (b->nshm_pages == DS_CUDA_SHM_PAGES)
        return DS_ENOMEM;
    r = b->cu.cuMemHostRegister((void *)page, (size_t)sysconf(_SC_PAGESIZE),
                                CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
    if (r == CUDA_SUCCESS && (r = b->cu.cuMemHostGetDevicePointer(dev, (void *)page, 0)) !=
                                 CUDA_SUCCESS)
        b->cu.cuMemHostUnregister((void *)page);
    if (r != CUDA_SUCCESS) {
        ds_warn("cannot map the control block for the device (CUresult %d): gates hold "
                "only work not yet submitted, and completions are not stamped", r);
        return ds__cuda_err(r);
    }
    b->shm_pages[b->nshm_pages].page = page;
    b->shm_pages[b->nshm_pages++].dev = *dev;
    return 0;
}

/* The device address of a word of the control block, or DS_EBUSY while a capture is in
 * progress and the word's page is not registered yet. */
static int map_word(struct ds_backend *b, const volatile void *word, CUdeviceptr *out)
{
    uintptr_t page = (uintptr_t)word & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
    CUdeviceptr d = 0;
    int i = 0, rc;

    while (i < b->nshm_pages && b->shm_pages[i].page != page)
        i++;
    if (i < b->nshm_pages)
        d = b->shm_pages[i].dev;
    else if (b->captures > 0)
        return DS_EBUSY; /* registering would invalidate a global-mode capture in progress */
    else if ((rc = register_page(b, page, &d)) != 0)
        return rc;
    *out = d + ((uintptr_t)word - page);
    return 0;
}

int ds__cuda_shm_map(struct ds_backend *b, const volatile void *word)
{
    CUdeviceptr d;

    return map_word(b, word, &d);
}

void ds__cuda_shm_unmap(struct ds_backend *b)
{
    for (int i = 0; i < b->nshm_pages; i++)
        b->cu.cuMemHostUnregister((void *)b->shm_pages[i].page);
    b->nshm_pages = 0;
}

int ds__cuda_gate(struct ds_backend *b, struct ds_bstream *s, const volatile unsigned *word)
{
    CUdeviceptr d = 0;
    int rc;

    s = ds__cuda_real(b, s);
    /* A capture would record the wait into the graph. */
    if (ds__cuda_capturing(b, s))
        return 0;
    rc = map_word(b, word, &d);
    if (rc == 0)
        rc = ds__cuda_err(b->cu.cuStreamWaitValue32(s->s, d, 0, CU_STREAM_WAIT_VALUE_EQ));
    return rc == DS_EBUSY ? 0 : rc;
}

int ds__cuda_stamp(struct ds_backend *b, struct ds_bstream *s, struct ds_shm_stamp *st,
                   uint32_t seq)
{
    CUdeviceptr d = 0;
    int rc;

    s = ds__cuda_real(b, s);
    if (ds__cuda_capturing(b, s))
        return DS_EBUSY;
    rc = map_word(b, &st->seq, &d);
    if (rc == 0)
        rc = ds__cuda_err(b->cu.cuStreamWriteValue32(s->s, d, seq, CU_STREAM_WRITE_VALUE_DEFAULT));
    return rc;
}
