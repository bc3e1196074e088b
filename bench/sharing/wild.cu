// A tenant whose kernel writes through a wild pointer (fault-check.sh): it prints the error
// its synchronisation got, as JSON, and exits 0 when that was the illegal-address error a
// native program gets.
#include <cstdio>

__global__ void scribble(int *p)
{
    p[threadIdx.x] = 42;
}

int main()
{
    int *d;

    if (cudaMalloc(&d, 4) != cudaSuccess)
        return 2;
    scribble<<<1, 32>>>((int *)0x10000);
    cudaError_t e = cudaDeviceSynchronize();
    printf("{\"tenant\": \"wild\", \"error\": \"%s\"}\n", cudaGetErrorName(e));
    return e == cudaErrorIllegalAddress ? 0 : 1;
}
