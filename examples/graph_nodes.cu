// CUDA graphs built node by node: a fill, two kernels that depend on it, and copies that
// depend on both, one into device memory and one into page-locked host memory.  The
// graph is instantiated once and launched again after a kernel node's parameters change.
#include <cstdio>
#include <cstdlib>
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

__global__ void scale(int *v, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        v[i] = v[i] * k + i % 5;
}

__global__ void add(int *v, const int *w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        v[i] += w[i];
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
    const int n = 1 << 16;
    const size_t bytes = n * sizeof(int);
    int *a, *b, *out, *host;
    int na = n, k = 3;
    void *scale_args[] = { &a, &na, &k }, *add_args[] = { &b, &a, &na };
    cudaGraph_t g;
    cudaGraphNode_t fill, ka, kb, to_dev, to_host, deps[2];
    cudaGraphExec_t e;
    cudaStream_t s;
    long long sum[2] = { 0, 0 };

    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&out, bytes));
    CHECK(cudaMallocHost(&host, bytes));
    CHECK(cudaMemset(b, 0, bytes));
    CHECK(cudaGraphCreate(&g, 0));

    cudaMemsetParams ms = {};
    ms.dst = a;
    ms.value = 2;
    ms.elementSize = 4;
    ms.width = n;
    ms.height = 1;
    CHECK(cudaGraphAddMemsetNode(&fill, g, nullptr, 0, &ms));

    cudaKernelNodeParams kp = {};
    kp.func = (void *)scale;
    kp.gridDim = dim3(n / 256);
    kp.blockDim = dim3(256);
    kp.kernelParams = scale_args;
    CHECK(cudaGraphAddKernelNode(&ka, g, &fill, 1, &kp));
    kp.func = (void *)add;
    kp.kernelParams = add_args;
    CHECK(cudaGraphAddKernelNode(&kb, g, &ka, 1, &kp));

    deps[0] = ka;
    deps[1] = kb;
    cudaMemcpy3DParms cp = copy(out, b, bytes, cudaMemcpyDeviceToDevice);
    CHECK(cudaGraphAddMemcpyNode(&to_dev, g, deps, 2, &cp));
    cp = copy(host, b, bytes, cudaMemcpyDeviceToHost);
    CHECK(cudaGraphAddMemcpyNode(&to_host, g, &kb, 1, &cp));

    size_t nodes = 0, roots = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
    CHECK(cudaGraphGetRootNodes(g, nullptr, &roots));
    CHECK(cudaGraphInstantiate(&e, g, 0));
    for (int rep = 0; rep < 4; rep++)
        CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        sum[0] += host[i];

    k = 7;
    kp.func = (void *)scale;
    kp.kernelParams = scale_args;
    CHECK(cudaGraphExecKernelNodeSetParams(e, ka, &kp));
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(host, out, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        sum[1] += host[i];
    printf("graph built node by node: %zu nodes, %zu root, 4 launches then 1 updated: "
           "sums %lld %lld, out[100] = %d\n", nodes, roots, sum[0], sum[1], host[100]);

    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFreeHost(host));
    CHECK(cudaFree(out));
    CHECK(cudaFree(b));
    CHECK(cudaFree(a));
    CHECK(cudaStreamDestroy(s));
    return 0;
}
