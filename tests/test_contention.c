/* The sim's contention between tenants (docs/sim-device.md): a kernel arriving on SMs
 * where another tenant's kernel runs waits for that kernel's blocks, as under MPS, where
 * running blocks are never preempted; on SMs nobody else's kernels occupy it starts at
 * once.  slo-aware's floor for latency-critical tenants rests on the second. */
#include "ds_test.h"

#include <unistd.h>

static struct ds_test_server srv;

static CUmodule load(void)
{
    return ds_test_module(DS_KERNEL_DIR "/launch.fatbin");
}

/* A neighbour that floods the device: 400 kernels of 5 ms each (5000 waves on 132 SMs),
 * queued without a wait. */
static int flood(void *arg)
{
    CUfunction fill;
    CUdeviceptr d;
    int v = 2, n = 0;
    void *params[] = { &d, &v, &n };

    (void)arg;
    if (ds_test_connect() != CUDA_SUCCESS || cuMemAlloc(&d, 64) != CUDA_SUCCESS ||
        cuModuleGetFunction(&fill, load(), "fill") != CUDA_SUCCESS)
        return 1;
    for (int i = 0; i < 400; i++)
        if (cuLaunchKernel(fill, 132 * 2 * 5000, 1, 1, 256, 1, 1, 0, NULL, params, NULL) !=
            CUDA_SUCCESS)
            return 2;
    return cuStreamQuery(NULL) == CUDA_ERROR_NOT_READY ? 0 : 3;
}

/* The mean modelled time, in ms, of a one-block kernel launched on an idle stream, over
 * ten launches at uneven moments: from an event recorded just before it to its end, so
 * the host's way from the record to the launch counts too (a tenth of a ms or so). */
static float arriving_ms(CUfunction fill, CUdeviceptr d)
{
    int v = 1, n = 0;
    void *params[] = { &d, &v, &n };
    CUevent a, b;
    float ms, sum = 0;

    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, 0));
    for (int i = 0; i < 10; i++) {
        CU_OK(cuEventRecord(a, NULL));
        CU_OK(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
        CU_OK(cuEventRecord(b, NULL));
        CU_OK(cuEventSynchronize(b));
        CU_OK(cuEventElapsedTime(&ms, a, b));
        sum += ms;
        usleep(700 + 130 * (unsigned)i);
    }
    cuEventDestroy(a);
    cuEventDestroy(b);
    return sum / 10;
}

/* Beside a flood on every SM, a tiny kernel waits for the flood's running 5 ms kernel:
 * 2.5 ms at the mean, against microseconds alone.  Before, it got half the SMs at once
 * and took microseconds here too, so the sim hid what MPS does to a latency-critical
 * tenant beside a flood. */
Test(contention, a_kernel_arriving_on_a_neighbours_busy_sms_waits_for_its_running_kernel)
{
    struct ds_test_peer nb;
    CUfunction fill;
    CUdeviceptr d;
    float alone, beside;

    DS_SIM_ONLY();
    ds_test_server_start(&srv, 0, "--policy shared");
    ds_test_peer_fork(&nb, flood, NULL);
    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, load(), "fill"));
    CU_OK(cuMemAlloc(&d, 4096));
    alone = arriving_ms(fill, d);
    ds_test_peer_join(&nb);
    beside = arriving_ms(fill, d);
    cr_expect_lt(alone, 0.5f, "alone %.4f ms", (double)alone);
    cr_expect(beside > 1.0f && beside < 5.5f,
              "beside a flood on the same SMs %.4f ms (its kernels take 5 ms)", (double)beside);
    ds_test_peer_leave(&nb);
    ds_test_server_stop(&srv);
}

/* The same flood on the other half of the SMs costs the tiny kernel nothing. */
Test(contention, a_kernel_on_sms_disjoint_from_a_flood_starts_at_once)
{
    struct ds_test_peer nb;
    CUfunction fill;
    CUdeviceptr d;
    float beside = 0;

    DS_SIM_ONLY();
    ds_test_server_start(&srv, 0, "--policy static");
    ds_test_peer_fork(&nb, flood, NULL);
    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, load(), "fill"));
    CU_OK(cuMemAlloc(&d, 4096));
    ds_test_peer_join(&nb);
    /* Moved to the lower half at a kernel once the policy has split the device. */
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, "now runs on SM groups 0-7"); i++)
        beside = arriving_ms(fill, d);
    cr_assert(ds_test_log_has(&srv, "now runs on SM groups 0-7"));
    beside = arriving_ms(fill, d);
    cr_expect_lt(beside, 0.5f, "beside a flood on the other half %.4f ms", (double)beside);
    ds_test_peer_leave(&nb);
    ds_test_server_stop(&srv);
}
