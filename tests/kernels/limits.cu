// Kernels whose limits a launch is checked against (tests/test_launch_checks.c): each
// is compiled with one limit below the device's, which the driver reports as a function
// attribute and enforces at the launch.

// __launch_bounds__: at most 256 threads a block.
extern "C" __global__ void __launch_bounds__(256) bounded(int *out)
{
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// Registers: the loads come before stores that may alias them, so all NV values are live
// at once (ptxas 13 gives it 128 registers a thread: 512 threads a block on an H100).
#define NV 96
extern "C" __global__ void heavy(const float *in, float *out)
{
    float v[NV];
#pragma unroll
    for (int i = 0; i < NV; i++)
        v[i] = in[threadIdx.x + i * 1024];
#pragma unroll
    for (int i = 0; i < NV; i++)
        out[threadIdx.x + i * 1024] = v[(i * 7) % NV] * v[(i * 13 + 5) % NV];
}

// 32 KiB of static shared memory: 16 KiB of dynamic shared memory left before opting in.
extern "C" __global__ void staticsmem(int *out)
{
    __shared__ int buf[8192];

    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = buf[(threadIdx.x + 1) % blockDim.x];
}

// A cluster of 2 blocks, fixed at compile time.
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(int *out)
{
    out[blockIdx.x] = 1;
}

// No limit of its own: the device's apply.
extern "C" __global__ void plain(int *out)
{
    out[blockIdx.x] = 1;
}
