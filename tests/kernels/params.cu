// Kernels whose only purpose is their parameter lists.  tests/test_cubin.c compares the
// layouts that server/backend/sim/cubin.c reads from the compiled cubin with the ones `cuobjdump -elf`
// prints for it; tests/test_image.c measures the compiled images.  Nothing here runs.
// extern "C" keeps most symbol names readable; k_tmpl keeps a mangled one on purpose.

struct odd7 {                 // size 7, alignment 1
    char c[7];
};

struct odd6 {                 // char, short, char: size 6, alignment 2
    char a;
    short b;
    char c;
};

struct __align__(16) wide {   // 20 bytes of data, alignment 16: size 32
    int x[5];
};

struct with_array {           // a fixed-size array inside a struct: size 16, alignment 8
    char tag[3];
    double v;
};

struct big {                  // past 4 KiB of parameters ptxas switches to KPARAM_INFO_V2
    char b[5000];
};

extern "C" __global__ void k_none(void) {}

extern "C" __global__ void k_int(int a)
{
    if (a == 12345)
        __trap();
}

extern "C" __global__ void k_mixed(char c, short s, int i, long long l, char c2, double d,
                                   float f)
{
    if (c + s + i + l + c2 + d + f == 1.5)
        __trap();
}

extern "C" __global__ void k_struct(char pre, struct odd7 a, struct odd6 o, struct wide w,
                                    struct with_array wa, char post)
{
    if (pre + a.c[6] + o.a + o.b + o.c + w.x[4] + wa.tag[2] + wa.v + post == 2.5)
        __trap();
}

extern "C" __global__ void k_ptrs(float *out, const float *in, int n, void *opaque)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        out[i] = in[i] + (opaque != 0);
}

extern "C" __global__ void k_many(int a0, int a1, int a2, int a3, int a4, int a5, int a6,
                                  int a7, int a8, int a9, int a10, int a11, int a12, int a13,
                                  int a14, int a15, int a16, int a17, int a18, int a19,
                                  double d20, char c21, int *p22)
{
    *p22 = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 +
           a15 + a16 + a17 + a18 + a19 + (int)d20 + c21;
}

extern "C" __global__ void k_unused(int a, double b, char c) {}

extern "C" __global__ void k_big(struct big b, int *out)
{
    *out = b.b[4999];
}

// Carries an EIFMT_NVAL record (EIATTR_EXPLICIT_CLUSTER) among its attributes.
extern "C" __global__ void __cluster_dims__(2, 1, 1) k_cluster(int *p)
{
    *p = 1;
}

template <typename T> __global__ void k_tmpl(T *p, T v)
{
    *p = v;
}
template __global__ void k_tmpl<float>(float *, float);

// A device function and a global variable: not kernels, never listed.  Under -rdc the
// function gets its own global symbol, .text and .nv.info sections, like a kernel.
__device__ int g_counter;
__device__ __noinline__ int helper(int x)
{
    return x * 3 + g_counter;
}

extern "C" __global__ void k_calls(int *p)
{
    *p = helper(*p);
}
