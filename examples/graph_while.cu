// Conditional graph nodes driven by kernels: a WHILE node whose body kernel adds the
// counter to a sum, counts it down and sets the loop's condition, then an IF node whose
// body runs only when the sum came out as expected.  Kernels compute, so this runs on a
// GPU (natively or through detshare's cuda backend), not on the sim.
#include <cstdio>
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

__global__ void step(int *counter, int *sum, cudaGraphConditionalHandle loop)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *sum += *counter;
        *counter -= 1;
        cudaGraphSetConditional(loop, *counter > 0);
    }
}

__global__ void judge(const int *sum, int want, cudaGraphConditionalHandle ok)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        cudaGraphSetConditional(ok, *sum == want);
}

__global__ void mark(int *flag)
{
    *flag = 1;
}

// Add a conditional node of `type` with one body to g after deps; the body in *body.
static cudaError_t add_cond(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                            size_t ndeps, cudaGraphConditionalHandle h,
                            cudaGraphConditionalNodeType type, cudaGraph_t *body)
{
    cudaGraphNodeParams p = {};

    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = 1;
    cudaError_t e = cudaGraphAddNode(node, g, deps, nullptr, ndeps, &p);
    *body = p.conditional.phGraph_out[0];
    return e;
}

static cudaError_t add_kernel(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                              size_t ndeps, void *fn, void **args)
{
    cudaKernelNodeParams kp = {};

    kp.func = fn;
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(32);
    kp.kernelParams = args;
    return cudaGraphAddKernelNode(node, g, deps, ndeps, &kp);
}

int main()
{
    const int start = 10, want = start * (start + 1) / 2;
    int *counter, *sum, *flag, host[3];
    cudaGraph_t g, loop_body, if_body;
    cudaGraphNode_t set_counter, set_sum, set_flag, loop, check, cond, marker, deps[3];
    cudaGraphConditionalHandle loop_h, ok_h;
    cudaGraphExec_t e;
    cudaStream_t s;

    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&counter, sizeof(int)));
    CHECK(cudaMalloc(&sum, sizeof(int)));
    CHECK(cudaMalloc(&flag, sizeof(int)));
    CHECK(cudaGraphCreate(&g, 0));
    CHECK(cudaGraphConditionalHandleCreate(&loop_h, g, 1, cudaGraphCondAssignDefault));
    CHECK(cudaGraphConditionalHandleCreate(&ok_h, g, 0, cudaGraphCondAssignDefault));

    cudaMemsetParams ms = {};
    ms.elementSize = 4;
    ms.width = 1;
    ms.height = 1;
    ms.dst = counter;
    ms.value = start;
    CHECK(cudaGraphAddMemsetNode(&set_counter, g, nullptr, 0, &ms));
    ms.dst = sum;
    ms.value = 0;
    CHECK(cudaGraphAddMemsetNode(&set_sum, g, nullptr, 0, &ms));
    ms.dst = flag;
    CHECK(cudaGraphAddMemsetNode(&set_flag, g, nullptr, 0, &ms));
    deps[0] = set_counter;
    deps[1] = set_sum;
    deps[2] = set_flag;
    CHECK(add_cond(&loop, g, deps, 3, loop_h, cudaGraphCondTypeWhile, &loop_body));
    void *step_args[] = { &counter, &sum, &loop_h };
    cudaGraphNode_t body_node;
    CHECK(add_kernel(&body_node, loop_body, nullptr, 0, (void *)step, step_args));

    int want_v = want;
    void *judge_args[] = { &sum, &want_v, &ok_h };
    CHECK(add_kernel(&check, g, &loop, 1, (void *)judge, judge_args));
    CHECK(add_cond(&cond, g, &check, 1, ok_h, cudaGraphCondTypeIf, &if_body));
    void *mark_args[] = { &flag };
    CHECK(add_kernel(&marker, if_body, nullptr, 0, (void *)mark, mark_args));

    CHECK(cudaGraphInstantiate(&e, g, 0));
    for (int rep = 0; rep < 2; rep++) {
        CHECK(cudaGraphLaunch(e, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaMemcpy(&host[0], sum, sizeof(int), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&host[1], counter, sizeof(int), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&host[2], flag, sizeof(int), cudaMemcpyDeviceToHost));
        if (host[0] != want || host[1] != 0 || host[2] != 1) {
            fprintf(stderr, "launch %d: sum %d counter %d flag %d\n", rep, host[0], host[1],
                    host[2]);
            return 1;
        }
    }
    printf("while loop node ran %d times: sum %d, if node ran its body: flag %d\n", start,
           host[0], host[2]);

    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(flag));
    CHECK(cudaFree(sum));
    CHECK(cudaFree(counter));
    CHECK(cudaStreamDestroy(s));
    return 0;
}
