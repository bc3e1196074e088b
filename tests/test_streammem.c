/* Stream memory operations (cuStreamWaitValue32/64, cuStreamWriteValue32/64,
 * cuStreamBatchMemOp): writes land in stream order, a wait holds its stream (and what
 * waits on it) until another stream or the host writes the word, and addresses that are
 * not the tenant's own are refused. */
#include "ds_test.h"

#include <string.h>
#include <unistd.h>

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
    ds_test_ctx();
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(streammem, .init = start, .fini = stop);

static uint64_t read64(CUdeviceptr p)
{
    uint64_t v = 0;

    CU_OK(cuMemcpyDtoH(&v, p, sizeof(v)));
    return v;
}

static uint32_t read32(CUdeviceptr p)
{
    uint32_t v = 0;

    CU_OK(cuMemcpyDtoH(&v, p, sizeof(v)));
    return v;
}

Test(streammem, writes_land_in_stream_order)
{
    CUdeviceptr w;
    CUstream s;

    CU_OK(cuMemAlloc(&w, 64));
    CU_OK(cuMemsetD8(w, 0, 64));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamWriteValue32(s, w, 0xdeadbeefu, 0));
    CU_OK(cuStreamWriteValue64(s, w + 8, 0x0123456789abcdefull, 0));
    /* A fill after the write, on the same stream, wins. */
    /* The v2 calls take no NO_MEMORY_BARRIER (the driver refuses it: H100, run 80). */
    CU_IS(cuStreamWriteValue32(s, w + 16, 7, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamWriteValue32(s, w + 16, 7, 0));
    CU_OK(cuMemsetD32Async(w + 16, 9, 1, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read32(w), 0xdeadbeefu);
    cr_assert_eq(read64(w + 8), 0x0123456789abcdefull);
    cr_assert_eq(read32(w + 16), 9);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(w));
}

/* The canonical use: a consumer stream waits for a flag that a producer stream sets.
 * Until then neither the consumer's copy nor an event recorded after it, nor a third
 * stream waiting on that event, may run. */
Test(streammem, wait_holds_a_stream_until_another_stream_writes)
{
    CUdeviceptr flag, src, dst, other;
    CUstream waiter, writer, third;
    uint32_t bytes[64], got[64];
    CUevent e;

    for (int i = 0; i < 64; i++)
        bytes[i] = 0x1000u + (uint32_t)i;
    CU_OK(cuMemAlloc(&flag, 8));
    CU_OK(cuMemAlloc(&src, sizeof(bytes)));
    CU_OK(cuMemAlloc(&dst, sizeof(bytes)));
    CU_OK(cuMemAlloc(&other, 4));
    CU_OK(cuMemsetD32(flag, 0, 2));
    CU_OK(cuMemsetD32(dst, 0, 64));
    CU_OK(cuMemsetD32(other, 0, 1));
    CU_OK(cuMemcpyHtoD(src, bytes, sizeof(bytes)));
    CU_OK(cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&third, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));

    CU_OK(cuStreamWaitValue32(waiter, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    CU_OK(cuMemcpyDtoDAsync(dst, src, sizeof(bytes), waiter));
    CU_OK(cuEventRecord(e, waiter));
    CU_OK(cuStreamWaitEvent(third, e, 0));
    CU_OK(cuStreamWriteValue32(third, other, 5, 0));

    usleep(20000);
    CU_IS(cuStreamQuery(waiter), CUDA_ERROR_NOT_READY);
    CU_IS(cuEventQuery(e), CUDA_ERROR_NOT_READY);
    CU_IS(cuStreamQuery(third), CUDA_ERROR_NOT_READY);
    CU_OK(cuMemcpyDtoH(got, dst, sizeof(got)));
    cr_assert_eq(got[0], 0, "the copy behind the wait ran early");
    cr_assert_eq(read32(other), 0, "work behind the event ran early");

    CU_OK(cuStreamWriteValue32(writer, flag, 1, 0));
    CU_OK(cuStreamSynchronize(waiter));
    CU_OK(cuStreamSynchronize(third));
    CU_OK(cuEventQuery(e));
    CU_OK(cuMemcpyDtoH(got, dst, sizeof(got)));
    cr_assert_eq(memcmp(got, bytes, sizeof(bytes)), 0);
    cr_assert_eq(read32(other), 5);
    CU_OK(cuCtxSynchronize());
    CU_OK(cuEventDestroy(e));
    CU_OK(cuStreamDestroy(waiter));
    CU_OK(cuStreamDestroy(writer));
    CU_OK(cuStreamDestroy(third));
}

/* A word of mapped host memory: the tenant's own store through its pointer releases the
 * wait, with no driver call in between. */
Test(streammem, host_write_to_mapped_memory_releases_a_wait)
{
    volatile uint32_t *host;
    CUdeviceptr dev, out;
    CUstream s;

    CU_OK(cuMemHostAlloc((void **)&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    CU_OK(cuMemHostGetDevicePointer(&dev, (void *)host, 0));
    CU_OK(cuMemAlloc(&out, 4));
    CU_OK(cuMemsetD32(out, 0, 1));
    host[0] = 0;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamWaitValue32(s, dev, 3, CU_STREAM_WAIT_VALUE_GEQ));
    CU_OK(cuStreamWriteValue32(s, out, 11, 0));
    usleep(20000);
    CU_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    host[0] = 2; /* not yet: 2 < 3 */
    usleep(20000);
    CU_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    host[0] = 4;
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read32(out), 11);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost((void *)host));
    CU_OK(cuMemFree(out));
}

Test(streammem, batch_runs_in_order_with_every_comparison)
{
    CUstreamBatchMemOpParams ops[7];
    CUdeviceptr w;
    CUstream s;

    CU_OK(cuMemAlloc(&w, 32));
    CU_OK(cuMemsetD8(w, 0, 32));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(ops, 0, sizeof(ops));
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = w;
    ops[0].writeValue.value = 6;
    ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[1].waitValue.address = w;
    ops[1].waitValue.value = 5;
    ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    ops[2].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[2].waitValue.address = w;
    ops[2].waitValue.value = 2;
    ops[2].waitValue.flags = CU_STREAM_WAIT_VALUE_AND;
    ops[3].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    ops[3].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
    ops[4].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    ops[4].writeValue.address = w + 8;
    ops[4].writeValue.value64 = 1ull << 40;
    ops[5].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
    ops[5].waitValue.address = w + 8;
    ops[5].waitValue.value64 = 1ull << 40;
    ops[5].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
    ops[6].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[6].writeValue.address = w + 16;
    ops[6].writeValue.value = 1;
    CU_OK(cuStreamBatchMemOp(s, 7, ops, 0));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read32(w + 16), 1);
    cr_assert_eq(read64(w + 8), 1ull << 40);
    CU_IS(cuStreamBatchMemOp(s, 0, ops, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuStreamBatchMemOp(s, 1, ops, 1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(w));
}

/* Batched calls report their error at the next synchronising call. */
static void refused(CUstream s, CUresult (*op)(CUstream, CUdeviceptr, cuuint32_t, unsigned),
                    CUdeviceptr addr, unsigned flags)
{
    CU_OK(op(s, addr, 1, flags));
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_VALUE);
}

Test(streammem, addresses_not_the_tenants_own_are_refused)
{
    CUdeviceptr w;
    CUstream s;

    CU_OK(cuMemAlloc(&w, 16));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    refused(s, cuStreamWriteValue32, w + 16, 0);          /* just past the allocation */
    refused(s, cuStreamWriteValue32, w + 2, 0);           /* misaligned */
    refused(s, cuStreamWriteValue32, 0x1000, 0);          /* nobody's */
    refused(s, cuStreamWaitValue32, w + 16, 0);           /* past the end */
    refused(s, cuStreamWaitValue32, w, 0x100);            /* flags cuda.h does not have */
    /* A write's flags are refused at once, as by the driver: the v2 writes take none. */
    CU_IS(cuStreamWriteValue32(s, w, 1, 2), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamWriteValue64(s, w + 12, 1, 0));         /* 8 bytes from 4 before the end */
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_VALUE);
    /* Nothing was written, and the stream still works. */
    CU_OK(cuStreamWriteValue32(s, w, 3, 0));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read32(w), 3);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(w));
}

Test(streammem, captured_operations_replay_with_the_graph)
{
    CUgraphExec exec;
    CUdeviceptr w;
    CUgraph g;
    CUstream s;

    CU_OK(cuMemAlloc(&w, 8));
    CU_OK(cuMemsetD32(w, 0, 2));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamWriteValue32(s, w, 9, 0));
    CU_OK(cuStreamWaitValue32(s, w, 9, CU_STREAM_WAIT_VALUE_EQ));
    CU_OK(cuStreamWriteValue32(s, w + 4, 10, 0));
    CU_OK(cuStreamEndCapture(s, &g));
    cr_assert_eq(read32(w), 0, "captured work ran");
    CU_OK(cuGraphInstantiate(&exec, g, 0));
    CU_OK(cuGraphLaunch(exec, s));
    CU_OK(cuStreamSynchronize(s));
    cr_assert_eq(read32(w), 9);
    cr_assert_eq(read32(w + 4), 10);
    CU_OK(cuGraphExecDestroy(exec));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(w));
}

/* A tenant that leaves with a stream still waiting frees everything all the same (the
 * fixture's teardown fails on a leak or an unclean executor exit).  The sim's parked
 * work and the references it holds are what this checks; on a GPU the context's
 * destruction ends the wait. */
Test(streammem, a_stream_left_waiting_is_freed_with_its_tenant)
{
    CUdeviceptr w;
    CUstream s;
    CUevent e;

    DS_SIM_ONLY();
    CU_OK(cuMemAlloc(&w, 4));
    CU_OK(cuMemsetD32(w, 0, 1));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e, 0));
    CU_OK(cuStreamWaitValue32(s, w, 1, CU_STREAM_WAIT_VALUE_EQ));
    CU_OK(cuEventRecord(e, s));
    CU_OK(cuEventDestroy(e));
    CU_OK(cuStreamDestroy(s));
}

/* Another tenant's allocation, its address handed over by the other tenant itself. */
static int addr_pipe[2];

static int neighbour(void *arg)
{
    CUdeviceptr p;

    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&p, 4096) != CUDA_SUCCESS ||
        cuMemsetD32(p, 77, 1024) != CUDA_SUCCESS)
        return 1;
    return write(addr_pipe[1], &p, sizeof(p)) == (ssize_t)sizeof(p) ? 0 : 1;
}

static void start_bare(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

TestSuite(streammem_peer, .init = start_bare, .fini = stop);

Test(streammem_peer, another_tenants_memory_is_refused)
{
    struct ds_test_peer peer;
    CUdeviceptr theirs = 0;
    CUstream s;

    cr_assert_eq(pipe(addr_pipe), 0);
    ds_test_peer_fork(&peer, neighbour, NULL);
    ds_test_ctx();
    ds_test_peer_join(&peer);
    cr_assert_eq(read(addr_pipe[0], &theirs, sizeof(theirs)), (ssize_t)sizeof(theirs));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamWriteValue32(s, theirs, 1, 0));
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamWaitValue32(s, theirs, 77, CU_STREAM_WAIT_VALUE_EQ));
    CU_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    ds_test_peer_leave(&peer);
    close(addr_pipe[0]);
    close(addr_pipe[1]);
}

/* The sim cannot hold the executor inside a synchronous copy while the tenant's other
 * threads release the stream: it says so rather than hang (docs/sim-device.md). */
Test(streammem, sim_refuses_a_synchronous_read_behind_a_parked_stream)
{
    CUdeviceptr w;
    CUstream s;
    uint32_t v;

    DS_SIM_ONLY();
    CU_OK(cuMemAlloc(&w, 4));
    CU_OK(cuMemsetD32(w, 0, 1));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamWaitValue32(NULL, w, 1, CU_STREAM_WAIT_VALUE_EQ));
    CU_IS(cuMemcpyDtoH(&v, w, sizeof(v)), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamWriteValue32(s, w, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemcpyDtoH(&v, w, sizeof(v)));
    cr_assert_eq(v, 1);
    CU_OK(cuStreamDestroy(s));
}
