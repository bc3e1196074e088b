// CUDA dynamic parallelism (issue 29): a kernel launching kernels, then the host
// synchronising.  Build with -rdc=true -lcudadevrt.  Prints the launch's and the
// synchronisation's errors and a checksum of what the children wrote; exits 0 when all
// went well.  bench/compat/cdp-check.sh runs it natively, as an MPS client and through
// detshare.
#include <cstdio>

__global__ void child(int *out, int base)
{
    out[base + threadIdx.x] = base + threadIdx.x;
}

__global__ void parent(int *out)
{
    child<<<1, 32>>>(out, threadIdx.x * 32);
}

int main()
{
    int *d, h[32 * 32];
    long sum = 0;
    cudaError_t e = cudaMalloc(&d, sizeof(h)), l = cudaSuccess;

    if (e == cudaSuccess) {
        parent<<<1, 32>>>(d);
        l = cudaGetLastError();
        e = cudaDeviceSynchronize();
    }
    if (e == cudaSuccess)
        e = cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
    for (int i = 0; e == cudaSuccess && i < 32 * 32; i++)
        sum += h[i];
    printf("cdp launch=%s sync=%s sum=%ld\n", cudaGetErrorName(l), cudaGetErrorName(e), sum);
    return l == cudaSuccess && e == cudaSuccess && sum == 32L * 32 * (32 * 32 - 1) / 2 ? 0 : 1;
}
