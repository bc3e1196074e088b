// A WHILE conditional node added to a stream capture in progress, with the calls of the
// CUDA sample graphConditionalNodes (its capturedWhileGraph part): the capture's graph
// and dependencies from cudaStreamGetCaptureInfo, a conditional handle of that graph,
// the node added after the captured kernel, the capture told to go on after the node,
// and the node's body filled by a capture into it.  Where the sample prints from its
// kernels, these count their runs, which the host checks.  Kernels set the condition,
// so this runs on a GPU (natively or through detshare's cuda backend), not on the sim.
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

// The sample's loop kernel: count down, and loop while the count is not zero.
__global__ void loop_kernel(char *counter, int *runs, cudaGraphConditionalHandle handle)
{
    if (*counter)
        (*counter)--;
    (*runs)++;
    cudaGraphSetConditional(handle, *counter);
}

// The sample's kernel after the loop.
__global__ void after_kernel(int *after)
{
    (*after)++;
}

// Launch e with the counter at `start`; the kernels' runs into runs[0] (loop kernel) and
// runs[1] (the kernel after the loop).
static int launch(cudaGraphExec_t e, char *counter, int *dev_runs, char start, int runs[2])
{
    CHECK(cudaMemset(counter, start, 1));
    CHECK(cudaMemset(dev_runs, 0, 2 * sizeof(int)));
    CHECK(cudaGraphLaunch(e, 0));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(runs, dev_runs, 2 * sizeof(int), cudaMemcpyDeviceToHost));
    return 0;
}

int main()
{
    cudaGraph_t graph;
    cudaGraphExec_t graphExec;
    cudaStreamCaptureStatus status;
    const cudaGraphNode_t *dependencies;
    size_t numDependencies;
    char *dPtr;
    int *runs, at0[2], at10[2];

    CHECK(cudaMalloc(&dPtr, 1));
    CHECK(cudaMalloc(&runs, 2 * sizeof(int)));
    cudaStream_t captureStream;
    CHECK(cudaStreamCreate(&captureStream));
    CHECK(cudaStreamBeginCapture(captureStream, cudaStreamCaptureModeGlobal));

    CHECK(cudaStreamGetCaptureInfo(captureStream, &status, NULL, &graph, &dependencies, NULL,
                                   &numDependencies));
    cudaGraphConditionalHandle handle;
    CHECK(cudaGraphConditionalHandleCreate(&handle, graph));

    loop_kernel<<<1, 1, 0, captureStream>>>(dPtr, runs, handle);

    CHECK(cudaStreamGetCaptureInfo(captureStream, &status, NULL, &graph, &dependencies, NULL,
                                   &numDependencies));
    cudaGraphNode_t conditionalNode;
    cudaGraphNodeParams cParams = { cudaGraphNodeTypeConditional };
    cParams.conditional.handle = handle;
    cParams.conditional.type = cudaGraphCondTypeWhile;
    cParams.conditional.size = 1;
    CHECK(cudaGraphAddNode(&conditionalNode, graph, dependencies, NULL, numDependencies,
                           &cParams));
    cudaGraph_t bodyGraph = cParams.conditional.phGraph_out[0];
    CHECK(cudaStreamUpdateCaptureDependencies(captureStream, &conditionalNode, NULL, 1,
                                              cudaStreamSetCaptureDependencies));

    after_kernel<<<1, 1, 0, captureStream>>>(runs + 1);

    CHECK(cudaStreamEndCapture(captureStream, &graph));
    CHECK(cudaStreamDestroy(captureStream));

    cudaStream_t bodyStream;
    CHECK(cudaStreamCreate(&bodyStream));
    CHECK(cudaStreamBeginCaptureToGraph(bodyStream, bodyGraph, nullptr, nullptr, 0,
                                        cudaStreamCaptureModeGlobal));
    loop_kernel<<<1, 1, 0, bodyStream>>>(dPtr, runs, handle);
    CHECK(cudaStreamEndCapture(bodyStream, nullptr));
    CHECK(cudaStreamDestroy(bodyStream));

    CHECK(cudaGraphInstantiate(&graphExec, graph, NULL, NULL, 0));
    if (launch(graphExec, dPtr, runs, 0, at0) != 0 || launch(graphExec, dPtr, runs, 10, at10))
        return 1;
    // From 0: the kernel before the loop once, the body never.  From 10: once before,
    // then the body until the count reaches 0 (9 times).
    if (at0[0] != 1 || at0[1] != 1 || at10[0] != 10 || at10[1] != 1) {
        fprintf(stderr, "loop kernel ran %d and %d times, the kernel after it %d and %d\n",
                at0[0], at10[0], at0[1], at10[1]);
        return 1;
    }
    printf("captured while loop: from 0 the loop kernel ran %d time, from 10 %d times\n",
           at0[0], at10[0]);

    CHECK(cudaGraphExecDestroy(graphExec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaFree(runs));
    CHECK(cudaFree(dPtr));
    return 0;
}
