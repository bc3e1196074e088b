/* The real driver's answers to the identity cases (support/identity_cases.h), for
 * test_export on a GPU: linked to the system's libcuda, never detshare's, and run with the
 * environment of a native program. */
#include "identity_cases.h"

#include <cuda.h>
#include <stdio.h>

int main(void)
{
    static char out[4096];
    CUcontext ctx;
    CUdevice dev;

    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 1;
    if (ds_identity_cases(out, sizeof(out)) != 0) {
        fputs(out, stderr);
        return 1;
    }
    fputs(out, stdout);
    return 0;
}
