// For tests/test_link.c: a kernel that calls a device function of another file
// (link_lib.cu), so that only a link makes it whole.
extern __device__ int twice(int v);

extern "C" __global__ void apply(int *out, int v)
{
    *out = twice(v);
}
