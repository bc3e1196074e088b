// Kernels for tests/test_launch.c and the other tests that launch.  On a GPU they compute, so the test can check that
// every parameter byte arrived and that results are right; on the sim only their layout
// and modelled time matter.

struct odd {                  // size 24, alignment 8
    char a;
    double b;
    char c[3];
};

struct arr {                  // size 10, alignment 2: an array by value
    short v[5];
};

struct echo_out {
    char c;
    short s;
    int i;
    long long l;
    float f;
    double d;
    struct odd o;
    struct arr a;
};

extern "C" __global__ void echo(char c, short s, int i, long long l, float f, double d,
                                struct odd o, struct arr a, struct echo_out *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        out->c = c;
        out->s = s;
        out->i = i;
        out->l = l;
        out->f = f;
        out->d = d;
        out->o = o;
        out->a = a;
    }
}

extern "C" __global__ void fill(int *out, int v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        out[i] = v + i;
}

// Keeps the device busy for ns nanoseconds by its own clock (one thread is enough).
extern "C" __global__ void spin(unsigned long long ns)
{
    unsigned long long t0, t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

__device__ int g_value = 42;

extern "C" __global__ void read_global(int *out)
{
    *out = g_value;
}

// One link of a chain: *x goes from k to k + 1 only if every earlier link ran first, so
// work reordered (across a migration, say) leaves a negative value behind.
extern "C" __global__ void step(int *x, int k)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *x = *x == k ? k + 1 : -1000000;
}
