#include "capture_hostfn_cases.h"

#include <cuda.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct log {
    char *out;
    size_t len, at;
};

static void say(struct log *l, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(l->out + l->at, l->len - l->at, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->at += (size_t)n < l->len - l->at ? (size_t)n : l->len - l->at - 1;
}

/* What the function saw of the page-locked words the kernels step (w[0]) and the fills
 * write (w[1]), and how often it ran. */
struct seen {
    volatile int *w;
    int steps, fill, calls;
};

static void CUDA_CB look(void *arg)
{
    struct seen *p = arg;

    p->steps = p->w[0];
    p->fill = p->w[1];
    p->calls++;
}

static void CUDA_CB callback(CUstream s, CUresult status, void *arg)
{
    (void)s;
    (void)status;
    look(arg);
}

struct env {
    struct log *l;
    CUfunction step;
    CUstream s, side;
    CUdeviceptr d; /* the device address of p->w */
    struct seen *p;
};

static CUresult step(struct env *v, CUstream on, int k)
{
    CUdeviceptr x = v->d;
    void *params[] = { &x, &k };

    return cuLaunchKernel(v->step, 1, 1, 1, 1, 1, 1, 0, on, params, NULL);
}

/* Whether g has exactly one host node, and it calls look with v->p.  Not its other
 * nodes: detshare's captured graph holds the work around the function as child graph
 * nodes where CUDA lists each node (docs/api-coverage.md). */
static void host_node(struct env *v, CUgraph g)
{
    CUgraphNode nodes[32];
    size_t n = 32, hosts = 0, right = 0;

    say(v->l, " nodes %d", (int)cuGraphGetNodes(g, nodes, &n));
    for (size_t i = 0; i < n && n <= 32; i++) {
        CUDA_HOST_NODE_PARAMS hp;
        CUgraphNodeType t;

        if (cuGraphNodeGetType(nodes[i], &t) == CUDA_SUCCESS && t == CU_GRAPH_NODE_TYPE_HOST) {
            hosts++;
            right += cuGraphHostNodeGetParams(nodes[i], &hp) == CUDA_SUCCESS &&
                     hp.fn == look && hp.userData == v->p;
        }
    }
    say(v->l, " host nodes %zu right %zu", hosts, right);
}

/* Launch e twice and say what the function saw and what was left after. */
static void launches(struct env *v, const char *name, CUgraphExec e)
{
    for (int k = 1; k <= 2; k++) {
        v->p->w[0] = v->p->w[1] = 0;
        v->p->calls = 0;
        CUresult synced;

        say(v->l, "%s launch%d %d", name, k, (int)cuGraphLaunch(e, v->s));
        /* Apart from the line's other arguments, whose order of evaluation C leaves open:
         * read before it, they showed the native program's function as not yet run. */
        synced = cuStreamSynchronize(v->s);
        say(v->l, " sync %d calls %d saw %d %d after %d %d\n", (int)synced, v->p->calls,
            v->p->steps, v->p->fill, v->p->w[0], v->p->w[1]);
    }
}

/* step 0 and fill 7 -> function -> step 1 and fill 9, on `on` (v->s, or v->side forked
 * from it by an event and joined back). */
static void around(struct env *v, const char *name, CUstreamCaptureMode mode, CUstream on)
{
    CUevent fork = NULL, join = NULL;
    CUgraph g = NULL, clone = NULL;
    CUresult rc;
    CUgraphExec e = NULL;

    cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING);
    cuEventCreate(&join, CU_EVENT_DISABLE_TIMING);
    v->p->calls = 0;
    say(v->l, "%s begin %d", name, (int)cuStreamBeginCapture(v->s, mode));
    /* One call a statement: C leaves the order of a call's arguments open, and with the
     * record and the wait as two arguments of one call the wait came first (runs 127-134:
     * natively the forked stream then never joined). */
    if (on != v->s) {
        rc = cuEventRecord(fork, v->s);
        say(v->l, " fork %d %d", (int)rc, (int)cuStreamWaitEvent(on, fork, 0));
    }
    rc = step(v, on, 0);
    say(v->l, " k0 %d fill %d", (int)rc, (int)cuMemsetD32Async(v->d + 4, 7, 1, on));
    say(v->l, " fn %d", (int)cuLaunchHostFunc(on, look, v->p));
    rc = step(v, on, 1);
    say(v->l, " k1 %d fill %d", (int)rc, (int)cuMemsetD32Async(v->d + 4, 9, 1, on));
    if (on != v->s) {
        rc = cuEventRecord(join, on);
        say(v->l, " join %d %d", (int)rc, (int)cuStreamWaitEvent(v->s, join, 0));
    }
    rc = cuStreamEndCapture(v->s, &g);
    say(v->l, " end %d calls %d", (int)rc, v->p->calls);
    if (g != NULL)
        host_node(v, g);
    say(v->l, " instantiate %d\n", g != NULL ? (int)cuGraphInstantiate(&e, g, 0) : -1);
    if (e != NULL) {
        launches(v, name, e);
        cuGraphExecDestroy(e);
        e = NULL;
    }
    say(v->l, "%s clone %d", name, g != NULL ? (int)cuGraphClone(&clone, g) : -1);
    say(v->l, " instantiate %d\n", clone != NULL ? (int)cuGraphInstantiate(&e, clone, 0) : -1);
    if (e != NULL) {
        launches(v, "clone", e);
        cuGraphExecDestroy(e);
    }
    if (clone != NULL)
        cuGraphDestroy(clone);
    if (g != NULL)
        cuGraphDestroy(g);
    cuEventDestroy(join);
    cuEventDestroy(fork);
}

/* What a capture refuses: no function, and a stream callback. */
static void refused(struct env *v)
{
    CUgraph g = NULL;

    say(v->l, "refused begin %d", (int)cuStreamBeginCapture(v->s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    say(v->l, " fill %d", (int)cuMemsetD32Async(v->d + 4, 7, 1, v->s));
    say(v->l, " null %d", (int)cuLaunchHostFunc(v->s, NULL, v->p));
    say(v->l, " end %d", (int)cuStreamEndCapture(v->s, &g));
    if (g != NULL)
        cuGraphDestroy(g);
    g = NULL;
    say(v->l, " begin %d", (int)cuStreamBeginCapture(v->s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    say(v->l, " callback %d", (int)cuStreamAddCallback(v->s, callback, v->p, 0));
    say(v->l, " end %d\n", (int)cuStreamEndCapture(v->s, &g));
    if (g != NULL)
        cuGraphDestroy(g);
}

int ds_capture_hostfn_cases(const char *fatbin, char *out, size_t len)
{
    struct log l = { out, len, 0 };
    struct seen p = { 0 };
    struct env v = { .l = &l, .p = &p };
    CUmodule m = NULL;
    int *w = NULL;

    out[0] = '\0';
    if (cuModuleLoad(&m, fatbin) != CUDA_SUCCESS ||
        cuModuleGetFunction(&v.step, m, "step") != CUDA_SUCCESS ||
        cuStreamCreate(&v.s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        cuStreamCreate(&v.side, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        cuMemHostAlloc((void **)&w, 4096, CU_MEMHOSTALLOC_DEVICEMAP) != CUDA_SUCCESS ||
        cuMemHostGetDevicePointer(&v.d, w, 0) != CUDA_SUCCESS) {
        say(&l, "setting up failed\n");
        return -1;
    }
    p.w = w;
    around(&v, "global", CU_STREAM_CAPTURE_MODE_GLOBAL, v.s);
    around(&v, "thread", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, v.s);
    around(&v, "relaxed", CU_STREAM_CAPTURE_MODE_RELAXED, v.s);
    around(&v, "forked", CU_STREAM_CAPTURE_MODE_GLOBAL, v.side);
    refused(&v);
    cuMemFreeHost(w);
    cuStreamDestroy(v.side);
    cuStreamDestroy(v.s);
    cuModuleUnload(m);
    return 0;
}
