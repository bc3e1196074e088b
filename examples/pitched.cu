// Pitched 2-D and 3-D memory through the CUDA runtime: an image in padded device rows
// (cudaMallocPitch), a sub-rectangle copied between two of them, a kernel that works on
// rows in place, and a volume (cudaMalloc3D, cudaMemcpy3D) sent there and back.
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

__global__ void brighten(unsigned char *img, size_t pitch, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;

    if (x < w && y < h)
        img[y * pitch + x] = (unsigned char)(img[y * pitch + x] / 2 + 100);
}

static unsigned long long checksum(const unsigned char *p, size_t n)
{
    unsigned long long h = 1469598103934665603ull;

    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static int images()
{
    const int w = 300, h = 200, sw = 120, sh = 50, sx = 40, sy = 30;
    unsigned char *host = (unsigned char *)malloc(w * h), *sub = (unsigned char *)malloc(sw * sh);
    unsigned char *back = (unsigned char *)malloc(w * h);
    unsigned char *a, *b;
    size_t pa, pb;
    int exact = 1;

    for (int i = 0; i < w * h; i++)
        host[i] = (unsigned char)(i * 7 + i / w);
    CHECK(cudaMallocPitch((void **)&a, &pa, w, h));
    CHECK(cudaMallocPitch((void **)&b, &pb, sw, sh));
    CHECK(cudaMemcpy2D(a, pa, host, w, w, h, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy2D(b, pb, a + sy * pa + sx, pa, sw, sh, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy2D(sub, sw, b, pb, sw, sh, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy2D(back, w, a, pa, w, h, cudaMemcpyDeviceToHost));
    for (int y = 0; y < sh; y++)
        exact &= memcmp(sub + y * sw, host + (sy + y) * w + sx, sw) == 0;
    exact &= memcmp(back, host, w * h) == 0;
    printf("image %dx%d in rows of %zu bytes, %dx%d at (%d,%d) in rows of %zu: round trips %s\n",
           w, h, pa, sw, sh, sx, sy, pb, exact ? "exact" : "WRONG");
    brighten<<<dim3((w + 127) / 128, h), 128>>>(a, pa, w, h);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy2D(back, w, a, pa, w, h, cudaMemcpyDeviceToHost));
    printf("brightened image: checksum %016llx\n", checksum(back, w * h));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    free(host);
    free(sub);
    free(back);
    return exact ? 0 : 1;
}

static int volume()
{
    const int w = 40, h = 30, d = 20;
    cudaExtent ext = make_cudaExtent(w * sizeof(float), h, d);
    float *host = (float *)malloc(sizeof(float) * w * h * d);
    float *back = (float *)calloc(w * h * d, sizeof(float));
    cudaPitchedPtr dev;
    cudaMemcpy3DParms p = {};
    int exact;

    for (int i = 0; i < w * h * d; i++)
        host[i] = (float)i * 0.5f;
    CHECK(cudaMalloc3D(&dev, ext));
    p.srcPtr = make_cudaPitchedPtr(host, w * sizeof(float), w, h);
    p.dstPtr = dev;
    p.extent = ext;
    p.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&p));
    p.srcPtr = dev;
    p.dstPtr = make_cudaPitchedPtr(back, w * sizeof(float), w, h);
    p.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&p));
    exact = memcmp(host, back, sizeof(float) * w * h * d) == 0;
    printf("volume %dx%dx%d in rows of %zu bytes: round trip %s\n", w, h, d, dev.pitch,
           exact ? "exact" : "WRONG");
    CHECK(cudaFree(dev.ptr));
    free(host);
    free(back);
    return exact ? 0 : 1;
}

int main()
{
    int rc = images();

    return rc ? rc : volume();
}
