// Managed (unified) memory and registered host memory through the CUDA runtime: the host
// fills an array from cudaMallocManaged and a buffer of its own that it registered with
// cudaHostRegister; one kernel reads both through those pointers and writes into managed
// memory, which the host reads directly after synchronising.
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

__global__ void axpy_into(const float *x, const float *y, float *out, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        out[i] = a * x[i] + y[i];
}

int main()
{
    const int n = 1 << 20;
    const size_t bytes = n * sizeof(float);
    float *x, *out, *y, *d_y;
    double sum = 0;
    int device = 0;
    cudaMemLocation on_device = {cudaMemLocationTypeDevice, 0};

    CHECK(cudaGetDevice(&device));
    on_device.id = device;
    CHECK(cudaMallocManaged(&x, bytes));
    CHECK(cudaMallocManaged(&out, bytes));
    y = (float *)malloc(bytes + 100);
    if (y == NULL)
        return 1;
    y += 25; /* not page-aligned, as a program's buffers often are */
    for (int i = 0; i < n; i++) {
        x[i] = 0.5f * (float)(i % 1000);
        y[i] = (float)(1 + i % 7);
    }
    CHECK(cudaHostRegister(y, bytes, cudaHostRegisterMapped));
    CHECK(cudaHostGetDevicePointer((void **)&d_y, y, 0));
    CHECK(cudaMemAdvise(x, bytes, cudaMemAdviseSetReadMostly, on_device));
    CHECK(cudaMemPrefetchAsync(x, bytes, on_device, 0, 0));
    axpy_into<<<n / 256, 256>>>(x, d_y, out, 2.0f, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++)
        sum += out[i];
    printf("managed memory and registered host memory: out[12345] = %.1f, sum %.1f\n",
           out[12345], sum);

    /* Back into the registered buffer, and the bytes checked where the host holds them. */
    CHECK(cudaMemcpy(y, out, bytes, cudaMemcpyDefault));
    printf("copy into registered memory %s\n", memcmp(y, out, bytes) == 0 ? "exact" : "WRONG");
    CHECK(cudaHostUnregister(y));
    CHECK(cudaFree(x));
    CHECK(cudaFree(out));
    free(y - 25);
    return 0;
}
