// A kernel with many and odd-sized parameters: 1-, 2-, 4- and 8-byte scalars, structs by
// value with odd sizes and alignments, and an array inside a struct.  The kernel writes
// back what it received, so the output shows whether every byte arrived.
#include <cstdio>
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

struct odd3 { char c[3]; };
struct mixed { char a; double b; short c; };
struct __align__(16) vec5 { int v[5]; };

struct echoed {
    char c; unsigned char uc; short s; int i; long long l; float f; double d;
    odd3 o; mixed m; vec5 v; unsigned long long u;
};

__global__ void echo(char c, unsigned char uc, short s, int i, long long l, float f, double d,
                     odd3 o, mixed m, vec5 v, unsigned long long u, echoed *out)
{
    out->c = c; out->uc = uc; out->s = s; out->i = i; out->l = l; out->f = f; out->d = d;
    out->o = o; out->m = m; out->v = v; out->u = u;
}

int main()
{
    echoed *d, h;
    odd3 o = { { 'x', 'y', 'z' } };
    mixed m = { -1, 2.718281828459045, -32768 };
    vec5 v = { { 1, -2, 3, -4, 2147483647 } };

    CHECK(cudaMalloc(&d, sizeof(echoed)));
    CHECK(cudaMemset(d, 0, sizeof(echoed)));
    echo<<<1, 1>>>(-128, 255, 12345, -2147483647, -9007199254740993ll, 1.17549435e-38f,
                   -0.1, o, m, v, 0xfedcba9876543210ull, d);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&h, d, sizeof(echoed), cudaMemcpyDeviceToHost));
    printf("c=%d uc=%u s=%d i=%d l=%lld\n", h.c, h.uc, h.s, h.i, h.l);
    printf("f=%.9g d=%.17g\n", h.f, h.d);
    printf("o=%.3s m={%d,%.17g,%d} v={%d,%d,%d,%d,%d} u=%016llx\n", h.o.c, h.m.a, h.m.b, h.m.c,
           h.v.v[0], h.v.v[1], h.v.v[2], h.v.v[3], h.v.v[4], h.u);
    CHECK(cudaFree(d));
    return 0;
}
