// A graph with a host node and a child graph, built node by node: a fill, a copy of it
// into page-locked memory, a host function that reads what was copied and writes an
// answer, a copy of the answer to the device, and a child graph that copies it on.  The
// instance's fill value changes between launches; each launch checks that the host
// function ran after the copy before it and before the copy after it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                                    \
    do {                                                                               \
        cudaError_t e_ = (call);                                                       \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorString(e_));                                           \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

static const int n = 1 << 12;

struct seen {
    int *in, *out;
    int value, calls;
};

// Runs in this process: what the fill wrote must already be in `in`.
static void CUDART_CB answer(void *arg)
{
    seen *s = static_cast<seen *>(arg);

    s->value = s->in[n - 1];
    for (int i = 0; i < n; i++)
        s->out[i] = s->value * 2 + 1;
    s->calls++;
}

static cudaMemcpy3DParms copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    cudaMemcpy3DParms p = {};

    p.srcPtr = make_cudaPitchedPtr(const_cast<void *>(src), bytes, bytes, 1);
    p.dstPtr = make_cudaPitchedPtr(dst, bytes, bytes, 1);
    p.extent = make_cudaExtent(bytes, 1, 1);
    p.kind = kind;
    return p;
}

int main()
{
    const size_t bytes = n * sizeof(int);
    int *a, *b, *c, *in, *out, *check;
    cudaGraph_t g, child;
    cudaGraphNode_t fill, down, host, up, sub, inner;
    cudaGraphExec_t e;
    cudaStream_t s;
    seen st = {};

    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&c, bytes));
    CHECK(cudaMallocHost(&in, bytes));
    CHECK(cudaMallocHost(&out, bytes));
    CHECK(cudaMallocHost(&check, bytes));
    st.in = in;
    st.out = out;

    CHECK(cudaGraphCreate(&child, 0));
    cudaMemcpy3DParms cp = copy(c, b, bytes, cudaMemcpyDeviceToDevice);
    CHECK(cudaGraphAddMemcpyNode(&inner, child, nullptr, 0, &cp));

    CHECK(cudaGraphCreate(&g, 0));
    cudaMemsetParams ms = {};
    ms.dst = a;
    ms.value = 1;
    ms.elementSize = 4;
    ms.width = n;
    ms.height = 1;
    CHECK(cudaGraphAddMemsetNode(&fill, g, nullptr, 0, &ms));
    cp = copy(in, a, bytes, cudaMemcpyDeviceToHost);
    CHECK(cudaGraphAddMemcpyNode(&down, g, &fill, 1, &cp));
    cudaHostNodeParams hp = {};
    hp.fn = answer;
    hp.userData = &st;
    CHECK(cudaGraphAddHostNode(&host, g, &down, 1, &hp));
    cp = copy(b, out, bytes, cudaMemcpyHostToDevice);
    CHECK(cudaGraphAddMemcpyNode(&up, g, &host, 1, &cp));
    CHECK(cudaGraphAddChildGraphNode(&sub, g, &up, 1, child));
    CHECK(cudaGraphDestroy(child));

    CHECK(cudaGraphInstantiate(&e, g, 0));
    int launches = 0;
    for (int v = 10; v <= 30; v += 10, launches++) {
        ms.value = v;
        CHECK(cudaGraphExecMemsetNodeSetParams(e, fill, &ms));
        CHECK(cudaGraphLaunch(e, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaMemcpy(check, c, bytes, cudaMemcpyDeviceToHost));
        if (st.value != v || check[0] != 2 * v + 1 || check[n - 1] != 2 * v + 1) {
            fprintf(stderr, "launch %d: the host function saw %d, the child copied %d\n",
                    launches, st.value, check[n - 1]);
            return 1;
        }
    }
    printf("graph with a host node and a child graph: %d launches in order, %d calls, "
           "last answer %d\n", launches, st.calls, check[n - 1]);

    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFreeHost(check));
    CHECK(cudaFreeHost(out));
    CHECK(cudaFreeHost(in));
    CHECK(cudaFree(c));
    CHECK(cudaFree(b));
    CHECK(cudaFree(a));
    CHECK(cudaStreamDestroy(s));
    return 0;
}
