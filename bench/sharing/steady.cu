// A well-behaved tenant (fault-check.sh): y += x over 4 Mi floats, ITERS times, then checks
// every element on the host (x = 1, so each must be exactly ITERS).
// usage: steady ITERS
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void add(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] += x[i];
}

__global__ void fill(float *p, float v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

int main(int argc, char **argv)
{
    const int n = 4 << 20;
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    float *x, *y;
    std::vector<float> h(n);

    if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess || cudaMalloc(&y, n * sizeof(float)) != cudaSuccess)
        return 2;
    fill<<<n / 256, 256>>>(x, 1.0f, n);
    fill<<<n / 256, 256>>>(y, 0.0f, n);
    for (int k = 0; k < iters; k++)
        add<<<n / 256, 256>>>(x, y, n);
    cudaError_t e = cudaMemcpy(h.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
    long bad = 0;
    for (int i = 0; i < n; i++)
        bad += h[i] != (float)iters;
    printf("{\"tenant\": \"steady\", \"iters\": %d, \"error\": \"%s\", \"wrong_elements\": %ld}\n",
           iters, cudaGetErrorName(e), bad);
    return e == cudaSuccess && bad == 0 ? 0 : 1;
}
