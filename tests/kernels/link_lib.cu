// For tests/test_link.c: the device function link_main.cu calls.
__device__ int twice(int v)
{
    return 2 * v;
}
