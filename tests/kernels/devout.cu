// Kernels for tests/test_devout.c: device output.  On a GPU the driver writes what they
// print at the next synchronisation; the sim runs no kernel code and prints nothing.
#include <cassert>
#include <cstdio>

extern "C" __global__ void say(int tag)
{
    printf("kernel %d says hello from block %d\n", tag, (int)blockIdx.x);
}

extern "C" __global__ void insist(int v)
{
    assert(v == 0);
}
