// CUDA arrays, texture and surface objects through the CUDA runtime: a 2-D float image
// in a cudaArray, read by kernels through tex2D with point filtering (exact: the texels
// themselves) and linear filtering (checked against bilinear interpolation computed here
// within the error the texture unit's 8-bit weights allow, and printed as a hash of the
// bits, which must be the same natively and through detshare), and through a surface
// object (surf2Dread, surf2Dwrite into a second array), with sub-rectangles copied in
// and out.  Kernels compute only on a GPU: on detshare's sim this program fails.
#include <cmath>
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

static const int W = 64, H = 48, N = W * H;

__global__ void sample(cudaTextureObject_t t, const float2 *at, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        out[i] = tex2D<float>(t, at[i].x, at[i].y);
}

__global__ void twice_plus_one(cudaSurfaceObject_t in, cudaSurfaceObject_t out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;

    if (x < w && y < h) {
        float v = surf2Dread<float>(in, x * (int)sizeof(float), y);
        surf2Dwrite(v * 2.0f + 1.0f, out, x * (int)sizeof(float), y);
    }
}

static float texel(const float *img, int x, int y)
{
    x = x < 0 ? 0 : x >= W ? W - 1 : x;
    y = y < 0 ? 0 : y >= H ? H - 1 : y;
    return img[y * W + x];
}

// Bilinear interpolation with clamping, as tex2D defines it, in double precision; and the
// spread of the four texels, which bounds the error of 8-bit weights.
static double bilinear(const float *img, float u, float v, double *spread)
{
    double xb = u - 0.5, yb = v - 0.5, a = xb - floor(xb), b = yb - floor(yb);
    int i = (int)floor(xb), j = (int)floor(yb);
    double t00 = texel(img, i, j), t10 = texel(img, i + 1, j), t01 = texel(img, i, j + 1),
           t11 = texel(img, i + 1, j + 1);

    *spread = fmax(fmax(t00, t10), fmax(t01, t11)) - fmin(fmin(t00, t10), fmin(t01, t11));
    return (1 - a) * (1 - b) * t00 + a * (1 - b) * t10 + (1 - a) * b * t01 + a * b * t11;
}

static unsigned hash(const float *p, int n)
{
    unsigned h = 2166136261u;

    for (int i = 0; i < n; i++) {
        unsigned bits;

        memcpy(&bits, &p[i], 4);
        for (int k = 0; k < 4; k++)
            h = (h ^ ((bits >> (8 * k)) & 0xff)) * 16777619u;
    }
    return h;
}

static cudaTextureObject_t make_tex(cudaArray_t a, cudaTextureFilterMode filter)
{
    cudaResourceDesc rd = {};
    cudaTextureDesc td = {};
    cudaTextureObject_t t = 0;

    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.filterMode = filter;
    td.readMode = cudaReadModeElementType;
    if (cudaCreateTextureObject(&t, &rd, &td, NULL) != cudaSuccess)
        return 0;
    return t;
}

static cudaSurfaceObject_t make_surf(cudaArray_t a)
{
    cudaResourceDesc rd = {};
    cudaSurfaceObject_t s = 0;

    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    if (cudaCreateSurfaceObject(&s, &rd) != cudaSuccess)
        return 0;
    return s;
}

int main()
{
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    float *img = (float *)malloc(N * sizeof(float)), *got = (float *)malloc(N * sizeof(float));
    float2 *at = (float2 *)malloc(N * sizeof(float2));
    float2 *d_at;
    float *d_out;
    cudaArray_t in, out;
    int point_exact = 1, surf_exact = 1, sub_exact = 1, linear_ok = 1;
    unsigned linear_hash;
    double worst = 0;

    for (int i = 0; i < N; i++)
        img[i] = (float)((i * 37 + (i / W) * 101) % 251) / 7.0f;
    CHECK(cudaMallocArray(&in, &fd, W, H, cudaArraySurfaceLoadStore));
    CHECK(cudaMallocArray(&out, &fd, W, H, cudaArraySurfaceLoadStore));
    CHECK(cudaMemcpy2DToArray(in, 0, 0, img, W * sizeof(float), W * sizeof(float), H,
                              cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&d_at, N * sizeof(float2)));
    CHECK(cudaMalloc(&d_out, N * sizeof(float)));

    // A sub-rectangle read back from the array.
    CHECK(cudaMemcpy2DFromArray(got, 20 * sizeof(float), in, 7 * sizeof(float), 5,
                                20 * sizeof(float), 30, cudaMemcpyDeviceToHost));
    for (int y = 0; y < 30; y++)
        sub_exact &= memcmp(got + y * 20, img + (5 + y) * W + 7, 20 * sizeof(float)) == 0;

    // Point filtering at texel centres gives the texels.
    cudaTextureObject_t tp = make_tex(in, cudaFilterModePoint);
    for (int i = 0; i < N; i++)
        at[i] = make_float2((i % W) + 0.5f, (i / W) + 0.5f);
    CHECK(cudaMemcpy(d_at, at, N * sizeof(float2), cudaMemcpyHostToDevice));
    sample<<<(N + 255) / 256, 256>>>(tp, d_at, d_out, N);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, d_out, N * sizeof(float), cudaMemcpyDeviceToHost));
    point_exact = tp != 0 && memcmp(got, img, N * sizeof(float)) == 0;

    // Linear filtering between texels, edges included.
    cudaTextureObject_t tl = make_tex(in, cudaFilterModeLinear);
    for (int i = 0; i < N; i++)
        at[i] = make_float2((i % W) + 0.13f * (i % 7), (i / W) + 0.29f * (i % 5) - 0.2f);
    CHECK(cudaMemcpy(d_at, at, N * sizeof(float2), cudaMemcpyHostToDevice));
    sample<<<(N + 255) / 256, 256>>>(tl, d_at, d_out, N);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, d_out, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) {
        double spread, want = bilinear(img, at[i].x, at[i].y, &spread);
        double err = fabs(got[i] - want), bound = spread * 2.0 / 256.0 + 1e-4 * (fabs(want) + 1);

        linear_ok &= tl != 0 && err <= bound;
        worst = err > worst ? err : worst;
    }
    linear_hash = hash(got, N);

    // Through surfaces: out = 2 * in + 1.
    cudaSurfaceObject_t si = make_surf(in), so = make_surf(out);
    twice_plus_one<<<dim3((W + 31) / 32, H), 32>>>(si, so, W, H);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy2DFromArray(got, W * sizeof(float), out, 0, 0, W * sizeof(float), H,
                                cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        surf_exact &= si != 0 && so != 0 && got[i] == img[i] * 2.0f + 1.0f;

    printf("sub-rectangle from the array: %s\n", sub_exact ? "exact" : "WRONG");
    printf("tex2D point filtering of %dx%d floats: %s\n", W, H, point_exact ? "exact" : "WRONG");
    printf("tex2D linear filtering: %s (largest error %.6f), results hash %08x\n",
           linear_ok ? "within the 8-bit weights' bound" : "WRONG", worst, linear_hash);
    printf("surf2Dread/surf2Dwrite: %s\n", surf_exact ? "exact" : "WRONG");
    CHECK(cudaDestroyTextureObject(tp));
    CHECK(cudaDestroyTextureObject(tl));
    CHECK(cudaDestroySurfaceObject(si));
    CHECK(cudaDestroySurfaceObject(so));
    CHECK(cudaFreeArray(in));
    CHECK(cudaFreeArray(out));
    CHECK(cudaFree(d_at));
    CHECK(cudaFree(d_out));
    free(img);
    free(got);
    free(at);
    return sub_exact && point_exact && linear_ok && surf_exact ? 0 : 2;
}
