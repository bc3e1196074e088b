/* The real driver's answers to the device queries test_devquery compares with
 * detshare's: linked to the system's libcuda, never detshare's, and run by the GPU
 * tests with the environment of a native program.  One line each, "name value...". */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    CUatomicOperation ops[CU_ATOMIC_OPERATION_MAX];
    unsigned caps[CU_ATOMIC_OPERATION_MAX], mask = 0;
    unsigned long long id = 0;
    char luid[8] = { 0 };
    CUdevice dev;
    size_t width = 0;
    int can = -1, v = -1;
    CUresult rc;

    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS)
        return 1;
    rc = cuDeviceGetLuid(luid, &mask, dev);
    memcpy(&id, luid, sizeof(id));
    printf("luid %d %llx %u\n", rc, id, mask);
    rc = cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 4, dev);
    printf("tex1d_float4 %d %zu\n", rc, width);
    rc = cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_UNSIGNED_INT8, 1, dev);
    printf("tex1d_u8 %d %zu\n", rc, width);
    for (int i = 0; i < CU_ATOMIC_OPERATION_MAX; i++)
        ops[i] = (CUatomicOperation)i;
    memset(caps, 0xff, sizeof(caps));
    rc = cuDeviceGetHostAtomicCapabilities(caps, ops, CU_ATOMIC_OPERATION_MAX, dev);
    printf("host_atomics %d", rc);
    for (int i = 0; i < CU_ATOMIC_OPERATION_MAX; i++)
        printf(" %u", rc == CUDA_SUCCESS ? caps[i] : 0);
    printf("\n");
    rc = cuDeviceCanAccessPeer(&can, dev, dev);
    printf("can_access_peer %d %d\n", rc, can);
    rc = cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, dev, dev);
    printf("p2p_attribute %d\n", rc);
    return 0;
}
