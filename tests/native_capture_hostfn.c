/* The real driver's answers to the host function capture cases
 * (support/capture_hostfn_cases.h), for test_capture_hostfn on a GPU: linked to the
 * system's libcuda, never detshare's, and run with the environment of a native program.
 * Its argument is launch.fatbin's path. */
#include "capture_hostfn_cases.h"

#include <cuda.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    static char out[16384];
    CUcontext ctx;
    CUdevice dev;

    if (argc != 2 || cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 1;
    if (ds_capture_hostfn_cases(argv[1], out, sizeof(out)) != 0) {
        fputs(out, stderr);
        return 1;
    }
    fputs(out, stdout);
    return 0;
}
