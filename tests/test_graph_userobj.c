/* User objects: their destructors run in the tenant's process when the last reference
 * goes, whether the tenant, a graph, a clone of it or an instance of it held it. */
#include "ds_test.h"

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

TestSuite(graph_userobj, .init = start, .fini = stop, .timeout = 120);

static void count(void *arg)
{
    (*(int *)arg)++;
}

Test(graph_userobj, the_destructor_runs_once_the_last_holder_lets_go)
{
    CUuserObject o;
    CUgraph g, clone;
    CUgraphNode n;
    CUgraphExec e;
    int destroyed = 0;

    CU_OK(cuUserObjectCreate(&o, &destroyed, count, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddEmptyNode(&n, g, NULL, 0));
    CU_OK(cuGraphRetainUserObject(g, o, 2, 0));
    CU_OK(cuUserObjectRelease(o, 1));
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphClone(&clone, g));
    CU_OK(cuGraphReleaseUserObject(g, o, 1));
    CU_IS(cuGraphReleaseUserObject(g, o, 2), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuGraphDestroy(clone));
    cr_assert_eq(destroyed, 0, "the instance still holds it");
    CU_OK(cuGraphExecDestroy(e));
    cr_assert_eq(destroyed, 1);
}

Test(graph_userobj, a_moved_reference_is_the_graphs)
{
    CUuserObject o;
    CUgraph g;
    int destroyed = 0;

    CU_OK(cuUserObjectCreate(&o, &destroyed, count, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    CU_OK(cuUserObjectRetain(o, 1));
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphRetainUserObject(g, o, 2, CU_GRAPH_USER_OBJECT_MOVE));
    CU_OK(cuGraphDestroy(g));
    cr_assert_eq(destroyed, 1);
}

Test(graph_userobj, bad_flags_counts_and_graphs_are_refused)
{
    CUuserObject o;
    CUgraph g;
    int destroyed = 0;

    CU_IS(cuUserObjectCreate(&o, &destroyed, count, 1, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuUserObjectCreate(&o, &destroyed, count, 0, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC),
          CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuUserObjectCreate(&o, &destroyed, count, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    CU_OK(cuGraphCreate(&g, 0));
    CU_IS(cuGraphRetainUserObject(g, o, 1, 8), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuGraphRetainUserObject(g, NULL, 1, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphDestroy(g));
    CU_IS(cuGraphRetainUserObject(g, o, 1, 0), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuUserObjectRelease(o, 1));
    cr_assert_eq(destroyed, 1);
}
