/* What nvidia-smi does first, as a program that loads detshare's libnvidia-ml.so.1 and
 * no libcuda of its own (test_nvml.c runs it): prints one line,
 * "count=N total=BYTES used=BYTES free=BYTES processes=N", or the failing call. */
#include <nvml.h>
#include <stdio.h>

int main(void)
{
    nvmlDevice_t h;
    nvmlMemory_t m;
    unsigned n = 0, procs = 0;
    nvmlReturn_t rc;

    if ((rc = nvmlInit_v2()) != NVML_SUCCESS || (rc = nvmlDeviceGetCount_v2(&n)) != NVML_SUCCESS ||
        (rc = nvmlDeviceGetHandleByIndex_v2(0, &h)) != NVML_SUCCESS ||
        (rc = nvmlDeviceGetMemoryInfo(h, &m)) != NVML_SUCCESS) {
        printf("failed: %s\n", nvmlErrorString(rc));
        return 1;
    }
    rc = nvmlDeviceGetComputeRunningProcesses_v3(h, &procs, NULL);
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) {
        printf("failed: processes: %s\n", nvmlErrorString(rc));
        return 1;
    }
    printf("count=%u total=%llu used=%llu free=%llu processes=%u\n", n, m.total, m.used, m.free,
           procs);
    return nvmlShutdown() == NVML_SUCCESS ? 0 : 1;
}
