/* Event record and wait nodes of graphs built node by node: a record node records its
 * event where the graph gets to it, a wait node holds the graph's later nodes until the
 * event's work is done, the event of either can be read and changed in the graph and in
 * an instance, and an event destroyed while graphs use it stays theirs until they go. */
#include "ds_test.h"

#include <string.h>

#define BIG (256u << 20) /* a fill that takes a while on either device */

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(graph_events, .init = start, .fini = stop, .timeout = 120);

static CUgraphNode add_fill(CUgraph g, const CUgraphNode *deps, size_t n, CUdeviceptr d,
                            size_t bytes)
{
    CUDA_MEMSET_NODE_PARAMS p = { .dst = d, .value = 1, .elementSize = 1, .width = bytes,
                                  .height = 1 };
    CUgraphNode node;
    CUcontext ctx;

    CU_OK(cuCtxGetCurrent(&ctx));
    CU_OK(cuGraphAddMemsetNode(&node, g, deps, n, &p, ctx));
    return node;
}

/* Graph A: a long fill, then a record of ev.  Graph B: a wait on ev, then a short fill. */
Test(graph_events, a_wait_node_holds_its_graph_until_the_recorded_work_is_done)
{
    CUgraph a, b;
    CUgraphExec ea, eb;
    CUgraphNode fill, rec, wait;
    CUdeviceptr big, small;
    CUstream s1, s2;
    CUevent ev, done;
    CUgraphNodeType type;
    float ms = -1;

    ds_test_ctx();
    CU_OK(cuMemAlloc(&big, BIG));
    CU_OK(cuMemAlloc(&small, 4096));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&ev, 0));
    CU_OK(cuEventCreate(&done, 0));
    CU_OK(cuGraphCreate(&a, 0));
    fill = add_fill(a, NULL, 0, big, BIG);
    CU_OK(cuGraphAddEventRecordNode(&rec, a, &fill, 1, ev));
    CU_OK(cuGraphNodeGetType(rec, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
    CU_OK(cuGraphCreate(&b, 0));
    CU_OK(cuGraphAddEventWaitNode(&wait, b, NULL, 0, ev));
    add_fill(b, &wait, 1, small, 4096);
    CU_OK(cuGraphInstantiate(&ea, a, 0));
    CU_OK(cuGraphInstantiate(&eb, b, 0));
    CU_OK(cuGraphLaunch(ea, s1));
    CU_OK(cuGraphLaunch(eb, s2));
    CU_OK(cuEventRecord(done, s2));
    CU_OK(cuEventSynchronize(done));
    CU_OK(cuEventQuery(ev));
    CU_OK(cuEventElapsedTime(&ms, ev, done));
    cr_assert_geq(ms, 0, "the short fill ended %f ms before the event it waited for", ms);
    CU_OK(cuGraphExecDestroy(ea));
    CU_OK(cuGraphExecDestroy(eb));
    CU_OK(cuGraphDestroy(a));
    CU_OK(cuGraphDestroy(b));
    CU_OK(cuEventDestroy(ev));
    CU_OK(cuEventDestroy(done));
    CU_OK(cuMemFree(big));
    CU_OK(cuMemFree(small));
}

Test(graph_events, the_event_of_a_node_is_read_and_changed_in_the_graph_and_an_instance)
{
    CUevent e1, e2, e3, got, start;
    CUgraph g;
    CUgraphExec x;
    CUgraphNode rec, wait;
    CUstream s;
    float ms;

    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e1, 0));
    CU_OK(cuEventCreate(&e2, 0));
    CU_OK(cuEventCreate(&e3, 0));
    CU_OK(cuEventCreate(&start, 0));
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddEventRecordNode(&rec, g, NULL, 0, e1));
    CU_OK(cuGraphAddEventWaitNode(&wait, g, &rec, 1, e1));
    CU_OK(cuGraphEventRecordNodeGetEvent(rec, &got));
    cr_assert_eq(got, e1);
    CU_OK(cuGraphEventRecordNodeSetEvent(rec, e2));
    CU_OK(cuGraphEventRecordNodeGetEvent(rec, &got));
    cr_assert_eq(got, e2);
    CU_OK(cuGraphEventWaitNodeGetEvent(wait, &got));
    cr_assert_eq(got, e1);
    CU_IS(cuGraphEventRecordNodeGetEvent(wait, &got), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphEventWaitNodeSetEvent(rec, e3), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphExecEventRecordNodeSetEvent(x, rec, e3));
    CU_OK(cuEventRecord(start, s));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    /* The instance recorded e3, not the graph's e2, which was never recorded. */
    CU_OK(cuEventElapsedTime(&ms, start, e3));
    CU_IS(cuEventElapsedTime(&ms, start, e2), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuGraphEventRecordNodeGetEvent(rec, &got));
    cr_assert_eq(got, e2, "setting it in an instance changed the graph");
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
}

Test(graph_events, bad_events_are_refused)
{
    CUgraph g;
    CUgraphNode n;
    CUevent e;

    ds_test_ctx();
    CU_OK(cuGraphCreate(&g, 0));
    CU_IS(cuGraphAddEventRecordNode(&n, g, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphAddEventWaitNode(&n, g, NULL, 0, (CUevent)(uintptr_t)0x7777),
          CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuEventCreate(&e, 0));
    CU_OK(cuEventDestroy(e));
    CU_IS(cuGraphAddEventRecordNode(&n, g, NULL, 0, e), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuGraphDestroy(g));
}

/* Natively an event must outlive the graphs that use it; here a tenant that gets it
 * wrong harms only itself, and the executor frees the event with the last of them. */
Test(graph_events, an_event_destroyed_under_a_graph_lives_until_the_graph_goes)
{
    CUevent e;
    CUgraph g;
    CUgraphExec x;
    CUgraphNode rec;
    CUstream s;

    ds_test_ctx();
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e, 0));
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddEventRecordNode(&rec, g, NULL, 0, e));
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuEventDestroy(e));
    CU_IS(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
    if (ds_test_on_sim()) {
        CU_OK(cuGraphLaunch(x, s));
        CU_OK(cuStreamSynchronize(s));
    }
    CU_OK(cuGraphDestroy(g));
    if (ds_test_on_sim())
        CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuStreamSynchronize(s));
}
