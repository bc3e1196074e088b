/* The real driver's answers to one set of cases (support/ holds each set's .c and .h),
 * for the gpu test that compares them with detshare's: linked to the system's libcuda,
 * never detshare's, and run with the environment of a native program.  Built once per
 * set (ds_native_cases in tests/CMakeLists.txt): DS_CASES_H names the set's header,
 * DS_CASES its function.  Its argument is the path of the fatbin the cases load. */
#include DS_CASES_H

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
    if (DS_CASES(argv[1], out, sizeof(out)) != 0) {
        fputs(out, stderr);
        return 1;
    }
    fputs(out, stdout);
    return 0;
}
