#include "capture_copy_cases.h"

#include <cuda.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define WORDS 256

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

static CUresult step(CUfunction f, CUstream s, CUdeviceptr x, int k)
{
    void *params[] = { &x, &k };

    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

/* Launch e twice, `in` holding other words each time, and say what came back. */
static void launches(struct log *l, const char *name, CUgraphExec e, CUstream s, int *in,
                     int *out, CUdeviceptr x)
{
    for (int v = 1; v <= 2; v++) {
        int steps = -1, same = 1;

        for (int i = 0; i < WORDS; i++) {
            in[i] = v * 1000 + i;
            out[i] = -1;
        }
        cuMemsetD32(x, 0, 1);
        say(l, "%s launch%d %d", name, v, (int)cuGraphLaunch(e, s));
        say(l, " sync %d", (int)cuStreamSynchronize(s));
        for (int i = 0; i < WORDS; i++)
            same &= out[i] == v * 1000 + i;
        cuMemcpyDtoH(&steps, x, sizeof(steps));
        say(l, " out %s steps %d\n", same ? "equal" : "differs", steps);
    }
}

/* Kernels around a copy to the device and one to the host, in capture mode `mode`. */
static void between_kernels(struct log *l, const char *name, CUfunction f, CUstream s,
                            CUstreamCaptureMode mode, CUdeviceptr buf, CUdeviceptr x)
{
    static int in[WORDS], out[WORDS];
    CUgraph g = NULL;
    CUgraphExec e = NULL;

    memset(out, 0, sizeof(out));
    say(l, "%s begin %d", name, (int)cuStreamBeginCapture(s, mode));
    say(l, " k0 %d", (int)step(f, s, x, 0));
    say(l, " htod %d", (int)cuMemcpyHtoDAsync(buf, in, sizeof(in), s));
    say(l, " k1 %d", (int)step(f, s, x, 1));
    say(l, " dtoh %d", (int)cuMemcpyDtoHAsync(out, buf, sizeof(out), s));
    say(l, " k2 %d", (int)step(f, s, x, 2));
    say(l, " end %d", (int)cuStreamEndCapture(s, &g));
    say(l, " untouched %d", out[0] == 0);
    say(l, " instantiate %d\n", (int)cuGraphInstantiate(&e, g, 0));
    if (e != NULL)
        launches(l, name, e, s, in, out, x);
    if (e != NULL)
        cuGraphExecDestroy(e);
    if (g != NULL)
        cuGraphDestroy(g);
}

/* The copy to the device on a stream forked from the capture by an event, joined back. */
static void forked(struct log *l, CUfunction f, CUstream s, CUstream fork, CUdeviceptr buf,
                   CUdeviceptr x)
{
    static int in[WORDS], out[WORDS];
    CUevent a = NULL, b = NULL;
    CUgraph g = NULL;
    CUgraphExec e = NULL;

    cuEventCreate(&a, CU_EVENT_DISABLE_TIMING);
    cuEventCreate(&b, CU_EVENT_DISABLE_TIMING);
    say(l, "fork begin %d", (int)cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    say(l, " k0 %d", (int)step(f, s, x, 0));
    say(l, " record %d", (int)cuEventRecord(a, s));
    say(l, " wait %d", (int)cuStreamWaitEvent(fork, a, 0));
    say(l, " htod %d", (int)cuMemcpyHtoDAsync(buf, in, sizeof(in), fork));
    say(l, " k1 %d", (int)step(f, fork, x, 1));
    say(l, " record %d", (int)cuEventRecord(b, fork));
    say(l, " join %d", (int)cuStreamWaitEvent(s, b, 0));
    say(l, " dtoh %d", (int)cuMemcpyDtoHAsync(out, buf, sizeof(out), s));
    say(l, " k2 %d", (int)step(f, s, x, 2));
    say(l, " end %d", (int)cuStreamEndCapture(s, &g));
    say(l, " instantiate %d\n", (int)cuGraphInstantiate(&e, g, 0));
    if (e != NULL)
        launches(l, "fork", e, s, in, out, x);
    if (e != NULL)
        cuGraphExecDestroy(e);
    if (g != NULL)
        cuGraphDestroy(g);
    cuEventDestroy(b);
    cuEventDestroy(a);
}

int ds_capture_copy_cases(const char *fatbin, char *out, size_t len)
{
    struct log l = { out, len, 0 };
    CUdeviceptr buf = 0, x = 0;
    CUstream s = NULL, fork = NULL;
    CUmodule m = NULL;
    CUfunction f;

    out[0] = '\0';
    if (cuModuleLoad(&m, fatbin) != CUDA_SUCCESS || cuModuleGetFunction(&f, m, "step") ||
        cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuStreamCreate(&fork, CU_STREAM_NON_BLOCKING) ||
        cuMemAlloc(&buf, WORDS * sizeof(int)) || cuMemAlloc(&x, sizeof(int))) {
        say(&l, "setting up failed\n");
        return -1;
    }
    between_kernels(&l, "global", f, s, CU_STREAM_CAPTURE_MODE_GLOBAL, buf, x);
    between_kernels(&l, "relaxed", f, s, CU_STREAM_CAPTURE_MODE_RELAXED, buf, x);
    forked(&l, f, s, fork, buf, x);
    cuMemFree(x);
    cuMemFree(buf);
    cuStreamDestroy(fork);
    cuStreamDestroy(s);
    cuModuleUnload(m);
    return 0;
}
