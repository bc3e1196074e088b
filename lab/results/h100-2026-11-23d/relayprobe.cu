// Where does gatemodes' relay mode hang?  Each stage with a 3 s limit, printed to stderr.
#include "../rck/relay.cuh"
#include <cuda.h>
#include <cstdio>
#include <ctime>
#include <unistd.h>
__global__ void k(int *x) { atomicAdd(x, 1); }
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static int waitq(cudaStream_t s, const char *what) {
    double t = now();
    cudaError_t e;
    while ((e = cudaStreamQuery(s)) == cudaErrorNotReady && now() - t < 3) usleep(100);
    fprintf(stderr, "%s: %s after %.3f s\n", what, cudaGetErrorName(e), now() - t);
    return e == cudaSuccess ? 0 : 1;
}
int main() {
    unsigned *hw, *dw; int *x; cudaStream_t w, r;
    cudaHostAlloc(&hw, 4, cudaHostAllocMapped); cudaMalloc(&dw, 4); cudaMalloc(&x, 4);
    cudaMemset(dw, 0, 4); cudaMemset(x, 0, 4);
    cudaStreamCreateWithFlags(&w, cudaStreamNonBlocking); cudaStreamCreateWithFlags(&r, cudaStreamNonBlocking);
    cudaDeviceSynchronize(); *(volatile unsigned *)hw = 0;
    k<<<1,1,0,w>>>(x); waitq(w, "plain kernel");
    ds_rck_relay<<<1, 1, 0, r>>>(hw, dw);
    fprintf(stderr, "relay launch: %s\n", cudaGetErrorName(cudaGetLastError()));
    usleep(100000);
    fprintf(stderr, "relay stream query: %s\n", cudaGetErrorName(cudaStreamQuery(r)));
    k<<<1,1,0,w>>>(x); waitq(w, "kernel beside relay");
    CUresult cr = cuStreamWaitValue32((CUstream)w, (CUdeviceptr)dw, 0, CU_STREAM_WAIT_VALUE_EQ);
    fprintf(stderr, "wait on dev word: %d\n", cr);
    k<<<1,1,0,w>>>(x); waitq(w, "kernel after dev-word wait");
    cr = cuStreamWaitValue32((CUstream)w, (CUdeviceptr)hw, 0, CU_STREAM_WAIT_VALUE_EQ);
    k<<<1,1,0,w>>>(x); waitq(w, "kernel after host-word wait, relay running");
    *(volatile unsigned *)hw = 1; usleep(10000);
    unsigned v = 7; cudaMemcpyAsync(&v, dw, 4, cudaMemcpyDeviceToHost, w); waitq(w, "read dev word after host=1");
    fprintf(stderr, "dev word now %u\n", v);
    *(volatile unsigned *)hw = 0; usleep(10000);
    *(volatile unsigned *)hw = DS_RCK_QUIT;
    waitq(r, "relay quits");
    return 0;
}
