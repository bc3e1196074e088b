/* detshare's libnvidia-ml.so.1 inside a tenant under a memory quota: the memory NVML
 * shows is the tenant's quota and what it holds itself, in step with cuMemGetInfo; the
 * processes are its own alone; utilisation is how busy its own work kept the device;
 * the device's identity is the device's; whatever would change the device is refused
 * and whatever is not served says so. */
#include "ds_test.h"
#include "nvml_check.h"

#include <errno.h>
#include <fcntl.h>
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB (1ull << 20)

static struct ds_test_server srv;
static char dir[64];

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A server whose only rule gives tenant "nv" 64 MiB. */
static void start(void)
{
    char config[128], args[160];
    const char *rules = "quota nv memory=64MiB\n";
    int fd;

    snprintf(dir, sizeof(dir), "/tmp/dsnvml.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(config, sizeof(config), "%s/detshare.conf", dir);
    fd = open(config, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0, "%s: %s", config, strerror(errno));
    cr_assert_eq(write(fd, rules, strlen(rules)), (ssize_t)strlen(rules));
    close(fd);
    snprintf(args, sizeof(args), "--config %s", config);
    ds_test_server_start(&srv, 0, args);
    setenv("DETSHARE_TENANT", "nv", 1);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

/* nvmlInit, and the one device's handle. */
static nvmlDevice_t open_device(void)
{
    nvmlDevice_t h;
    unsigned n = 0;

    NV_OK(nvmlInit_v2());
    NV_OK(nvmlDeviceGetCount_v2(&n));
    cr_assert_eq(n, 1, "%u devices", n);
    NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &h));
    return h;
}

TestSuite(nvml, .init = start, .fini = stop, .timeout = 120);

/* Another tenant, with memory of its own that this one must not see. */
static int neighbour(void *arg)
{
    CUdeviceptr d;

    (void)arg;
    setenv("DETSHARE_TENANT", "neighbour", 1);
    return ds_test_connect() == CUDA_SUCCESS && cuMemAlloc(&d, 32 * MiB) == CUDA_SUCCESS ? 0 : 1;
}

Test(nvml, memory_is_the_quota_and_what_the_tenant_holds)
{
    struct ds_test_peer peer;
    nvmlMemory_t m, m2;
    nvmlMemory_v2_t v2 = { .version = nvmlMemory_v2 };
    nvmlDevice_t h;
    CUdeviceptr d;
    size_t free_b, total;

    ds_test_peer_fork(&peer, neighbour, NULL);
    ds_test_peer_join(&peer);
    h = open_device();
    NV_OK(nvmlDeviceGetMemoryInfo(h, &m));
    cr_expect_eq(m.total, 64 * MiB, "total %llu", m.total);
    cr_expect_eq(m.used, 0, "used %llu before any allocation (the neighbour's is not ours)",
                 m.used);
    cr_expect_eq(m.free, 64 * MiB);

    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 8 * MiB));
    NV_OK(nvmlDeviceGetMemoryInfo(h, &m2));
    CU_OK(cuMemGetInfo(&free_b, &total));
    cr_expect_eq(m2.total, total, "NVML total %llu, cuMemGetInfo %zu", m2.total, total);
    cr_expect_eq(m2.free, free_b, "NVML free %llu, cuMemGetInfo %zu", m2.free, free_b);
    cr_expect_eq(m2.used - m.used, 8 * MiB, "used grew by %llu", m2.used - m.used);
    cr_expect_eq(m2.used + m2.free, m2.total);

    NV_OK(nvmlDeviceGetMemoryInfo_v2(h, &v2));
    cr_expect_eq(v2.total, m2.total);
    cr_expect_eq(v2.used, m2.used);
    cr_expect_eq(v2.free, m2.free);
    v2.version = 1;
    NV_IS(nvmlDeviceGetMemoryInfo_v2(h, &v2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    CU_OK(cuMemFree(d));
    NV_OK(nvmlShutdown());
    ds_test_peer_leave(&peer);
}

Test(nvml, the_processes_are_the_tenants_own)
{
    struct ds_test_peer peer;
    nvmlProcessInfo_t p[4];
    nvmlDevice_t h;
    CUdeviceptr d;
    unsigned n = 0;

    ds_test_peer_fork(&peer, neighbour, NULL);
    ds_test_peer_join(&peer);
    h = open_device();
    /* No context and no memory yet: not a process running on the device. */
    NV_OK(nvmlDeviceGetComputeRunningProcesses_v3(h, &n, NULL));
    cr_expect_eq(n, 0, "%u processes before the tenant used the device", n);

    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 4 * MiB));
    n = 0;
    NV_IS(nvmlDeviceGetComputeRunningProcesses_v3(h, &n, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
    cr_expect_eq(n, 1, "%u processes, the neighbour's included", n);
    n = 4;
    NV_OK(nvmlDeviceGetComputeRunningProcesses_v3(h, &n, p));
    cr_assert_eq(n, 1);
    cr_expect_eq(p[0].pid, (unsigned)getpid(), "pid %u, not ours (%d)", p[0].pid, (int)getpid());
    cr_expect_eq(p[0].usedGpuMemory, 4 * MiB);
    n = 4;
    NV_OK(nvmlDeviceGetGraphicsRunningProcesses_v3(h, &n, p));
    cr_expect_eq(n, 0);
    CU_OK(cuMemFree(d));
    NV_OK(nvmlShutdown());
    ds_test_peer_leave(&peer);
}

Test(nvml, the_device_is_the_devices)
{
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], cu_name[256], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char want[NVML_DEVICE_UUID_V2_BUFFER_SIZE], bus[32];
    const unsigned char *b;
    nvmlPciInfo_t pci;
    nvmlDevice_t h, again;
    CUuuid u;
    int major, minor, cu_major;

    h = open_device();
    NV_OK(nvmlDeviceGetName(h, name, sizeof(name)));
    CU_OK(cuDeviceGetName(cu_name, sizeof(cu_name), 0));
    cr_expect_str_eq(name, cu_name);
    NV_IS(nvmlDeviceGetName(h, name, 2), NVML_ERROR_INSUFFICIENT_SIZE);

    NV_OK(nvmlDeviceGetUUID(h, uuid, sizeof(uuid)));
    CU_OK(cuDeviceGetUuid(&u, 0));
    b = (const unsigned char *)u.bytes;
    snprintf(want, sizeof(want),
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    cr_expect_str_eq(uuid, want);
    NV_OK(nvmlDeviceGetHandleByUUID(uuid, &again));
    cr_expect_eq(again, h);
    NV_IS(nvmlDeviceGetHandleByUUID("GPU-nothing", &again), NVML_ERROR_NOT_FOUND);

    NV_OK(nvmlDeviceGetPciInfo_v3(h, &pci));
    CU_OK(cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
    cr_expect_str_eq(pci.busIdLegacy, bus);
    NV_OK(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &again));
    cr_expect_eq(again, h);

    NV_OK(nvmlDeviceGetCudaComputeCapability(h, &major, &minor));
    CU_OK(cuDeviceGetAttribute(&cu_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    cr_expect_eq(major, cu_major);
    NV_OK(nvmlShutdown());
}

/* Kernels of about 2 ms on the sim, two at a time, for `ms` of wall time: the share of
 * that time the device spent on them, as test_throttle.c measures it. */
static double keep_busy(CUfunction fill, CUdeviceptr d, double ms)
{
    double t0 = now_ms(), kernel_ms = 0;
    int v = 1, z = 0, n = 0;
    void *params[] = { &d, &v, &z };
    CUevent a, b;
    float one;

    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, 0));
    while (now_ms() - t0 < ms) {
        CU_OK(cuEventRecord(a, NULL));
        CU_OK(cuLaunchKernel(fill, 264 * 2000, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        CU_OK(cuEventRecord(b, NULL));
        CU_OK(cuLaunchKernel(fill, 264 * 2000, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        CU_OK(cuCtxSynchronize());
        CU_OK(cuEventElapsedTime(&one, a, b));
        kernel_ms += 2 * one;
        n += 2;
    }
    cuEventDestroy(a);
    cuEventDestroy(b);
    return kernel_ms / (now_ms() - t0);
}

Test(nvml, utilization_is_how_busy_the_tenants_work_kept_its_sms)
{
    nvmlUtilization_t busy, idle;
    CUfunction fill;
    CUdeviceptr d;
    nvmlDevice_t h;
    double share;

    ds_test_ctx();
    CU_OK(cuModuleGetFunction(&fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill"));
    CU_OK(cuMemAlloc(&d, 4096));
    h = open_device();
    share = keep_busy(fill, d, 1200);
    NV_OK(nvmlDeviceGetUtilizationRates(h, &busy));
    cr_log_info("%u%% busy, the device ran the kernels %.0f%% of the time", busy.gpu,
                share * 100);
    cr_expect(busy.gpu > 0 && busy.gpu >= share * 100 / 2 && busy.gpu <= 100,
              "%u%% busy while the device ran the tenant's kernels %.0f%% of the time",
              busy.gpu, share * 100);
    usleep(1100 * 1000);
    NV_OK(nvmlDeviceGetUtilizationRates(h, &idle));
    cr_expect_leq(idle.gpu, 2, "%u%% busy over a second of doing nothing", idle.gpu);
    CU_OK(cuMemFree(d));
    NV_OK(nvmlShutdown());
}

/* A program that loads libnvidia-ml.so.1 and no libcuda, as nvidia-smi does: the
 * library finds detshare's libcuda beside itself and the program is a tenant of its
 * own, with the quota of its name, holding nothing. */
Test(nvml, a_program_with_nvml_alone_is_a_tenant_of_its_own)
{
    char line[256] = "";
    unsigned long long total = 0, used = 1, free_b = 0;
    unsigned n = 0, procs = 9;
    FILE *p = popen(DS_NVML_PROBE, "r");

    cr_assert_not_null(p);
    cr_assert_not_null(fgets(line, sizeof(line), p), "the probe printed nothing");
    cr_assert_eq(pclose(p), 0, "the probe: %s", line);
    cr_assert_eq(sscanf(line, "count=%u total=%llu used=%llu free=%llu processes=%u", &n, &total,
                        &used, &free_b, &procs),
                 5, "%s", line);
    cr_expect_eq(n, 1);
    cr_expect_eq(total, 64 * MiB, "%s", line);
    cr_expect_eq(used, 0, "%s", line);
    cr_expect_eq(free_b, 64 * MiB, "%s", line);
    cr_expect_eq(procs, 0, "%s", line);
}

/* What the device's settings read, answers and values: power limit, persistence,
 * application clocks (a GPU may not report one: then it must go on not reporting it). */
struct settings {
    nvmlReturn_t rc[4];
    unsigned limit, app_sm, app_mem;
    nvmlEnableState_t persistence;
};

static void read_settings(nvmlDevice_t h, struct settings *s)
{
    memset(s, 0, sizeof(*s));
    s->rc[0] = nvmlDeviceGetPowerManagementLimit(h, &s->limit);
    s->rc[1] = nvmlDeviceGetPersistenceMode(h, &s->persistence);
    s->rc[2] = nvmlDeviceGetApplicationsClock(h, NVML_CLOCK_SM, &s->app_sm);
    s->rc[3] = nvmlDeviceGetApplicationsClock(h, NVML_CLOCK_MEM, &s->app_mem);
    if (ds_test_on_sim())
        for (int i = 0; i < 4; i++)
            cr_expect_eq(s->rc[i], NVML_SUCCESS, "setting %d: %s", i, nvmlErrorString(s->rc[i]));
}

Test(nvml, changes_are_refused_and_the_unserved_says_so)
{
    struct settings before, after;
    nvmlDevice_t h;
    unsigned n, u;

    NV_IS(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    h = open_device();
    read_settings(h, &before);
    NV_IS(nvmlDeviceSetPowerManagementLimit(h, 100000), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceSetPersistenceMode(h, NVML_FEATURE_DISABLED), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceResetGpuLockedClocks(h), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceSetGpuLockedClocks(h, 345, 345), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceSetApplicationsClocks(h, 2619, 1410), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceResetApplicationsClocks(h), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceSetComputeMode(h, NVML_COMPUTEMODE_PROHIBITED), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceSetEccMode(h, NVML_FEATURE_DISABLED), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceClearEccErrorCounts(h, NVML_VOLATILE_ECC), NVML_ERROR_NO_PERMISSION);
    NV_IS(nvmlDeviceSetMigMode(h, NVML_DEVICE_MIG_ENABLE, &n), NVML_ERROR_NO_PERMISSION);
    read_settings(h, &after);
    cr_expect_eq(memcmp(after.rc, before.rc, sizeof(after.rc)), 0);
    cr_expect_eq(after.limit, before.limit);
    cr_expect_eq(after.persistence, before.persistence);
    cr_expect_eq(after.app_sm, before.app_sm);
    cr_expect_eq(after.app_mem, before.app_mem);
    /* What the sim has not (a fan, a NUMA node of its own) and what is never served. */
    if (ds_test_on_sim()) {
        NV_IS(nvmlDeviceGetFanSpeed(h, &u), NVML_ERROR_NOT_SUPPORTED);
        NV_IS(nvmlDeviceGetNumaNodeId(h, &u), NVML_ERROR_NOT_SUPPORTED);
    }
    NV_IS(nvmlDeviceGetEncoderCapacity(h, NVML_ENCODER_QUERY_H264, &u), NVML_ERROR_NOT_SUPPORTED);
    NV_OK(nvmlShutdown());
    NV_IS(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    NV_IS(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
}

#define NV_U32(call, want)                                                             \
    do {                                                                               \
        unsigned v_ = 0xdead;                                                          \
        NV_OK(call);                                                                   \
        cr_expect_eq(v_, (unsigned)(want), "%s: %u, not %u", #call, v_, (unsigned)(want)); \
    } while (0)

/* The device's facts and telemetry, as the server read them: on the sim, its fixed values
 * (server/backend/sim/sim_facts.c, docs/sim-device.md). */
static void expect_sim_values(nvmlDevice_t h)
{
    char s[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    nvmlBrandType_t brand;
    nvmlPstates_t ps;
    nvmlEnableState_t e;
    nvmlPciInfo_t pci;
    nvmlTemperature_t tv = { .version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU };
    unsigned long long ull;
    unsigned lo, hi;

    NV_OK(nvmlDeviceGetBrand(h, &brand));
    cr_expect_eq(brand, NVML_BRAND_NVIDIA);
    NV_U32(nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &v_), 34);
    NV_OK(nvmlDeviceGetTemperatureV(h, &tv));
    cr_expect_eq(tv.temperature, 34);
    NV_U32(nvmlDeviceGetTemperatureThreshold(h, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &v_), 92);
    NV_U32(nvmlDeviceGetTemperatureThreshold(h, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &v_), 89);
    NV_U32(nvmlDeviceGetPowerUsage(h, &v_), 71000);
    NV_U32(nvmlDeviceGetEnforcedPowerLimit(h, &v_), 700000);
    NV_U32(nvmlDeviceGetPowerManagementDefaultLimit(h, &v_), 700000);
    NV_OK(nvmlDeviceGetPowerManagementLimitConstraints(h, &lo, &hi));
    cr_expect(lo == 200000 && hi == 700000, "limits %u-%u mW", lo, hi);
    NV_U32(nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM, &v_), 345);
    NV_U32(nvmlDeviceGetClockInfo(h, NVML_CLOCK_MEM, &v_), 2619);
    NV_U32(nvmlDeviceGetClock(h, NVML_CLOCK_GRAPHICS, NVML_CLOCK_ID_CURRENT, &v_), 345);
    NV_U32(nvmlDeviceGetClock(h, NVML_CLOCK_SM, NVML_CLOCK_ID_APP_CLOCK_DEFAULT, &v_), 1980);
    NV_U32(nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_VIDEO, &v_), 1545);
    NV_OK(nvmlDeviceGetPerformanceState(h, &ps));
    cr_expect_eq(ps, NVML_PSTATE_0);
    NV_OK(nvmlDeviceGetCurrentClocksEventReasons(h, &ull));
    cr_expect_eq(ull, nvmlClocksEventReasonGpuIdle);
    NV_U32(nvmlDeviceGetCurrPcieLinkGeneration(h, &v_), 5);
    NV_U32(nvmlDeviceGetMaxPcieLinkGeneration(h, &v_), 5);
    NV_U32(nvmlDeviceGetCurrPcieLinkWidth(h, &v_), 16);
    NV_U32(nvmlDeviceGetMaxPcieLinkWidth(h, &v_), 16);
    NV_OK(nvmlDeviceGetPersistenceMode(h, &e));
    cr_expect_eq(e, NVML_FEATURE_ENABLED);
    NV_OK(nvmlDeviceGetDisplayActive(h, &e));
    cr_expect_eq(e, NVML_FEATURE_DISABLED);
    NV_OK(nvmlDeviceGetTotalEccErrors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC,
                                      &ull));
    cr_expect_eq(ull, 0);
    NV_OK(nvmlDeviceGetPciInfo_v3(h, &pci));
    cr_expect_eq(pci.pciDeviceId, 0x233010de);
    NV_OK(nvmlSystemGetDriverVersion(s, sizeof(s)));
    cr_expect_str_eq(s, "580.00-sim");
    NV_OK(nvmlSystemGetNVMLVersion(s, sizeof(s)));
    cr_expect_str_eq(s, "13.580.00-sim");
    NV_OK(nvmlDeviceGetSerial(h, s, sizeof(s)));
    cr_expect_str_eq(s, "detshare-sim-0");
    NV_OK(nvmlDeviceGetVbiosVersion(h, s, sizeof(s)));
    cr_expect_str_eq(s, "00.00.00.00.00");
}

/* On a GPU, what any running datacenter GPU reports (gpu_nvml). */
static void expect_gpu_values(nvmlDevice_t h)
{
    char s[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    nvmlBrandType_t brand;
    nvmlPstates_t ps;
    unsigned t, power, limit, clock, gen;

    NV_OK(nvmlDeviceGetBrand(h, &brand));
    cr_expect_neq(brand, NVML_BRAND_UNKNOWN);
    NV_OK(nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &t));
    cr_expect(t > 0 && t < 120, "%u C", t);
    NV_OK(nvmlDeviceGetPowerUsage(h, &power));
    NV_OK(nvmlDeviceGetEnforcedPowerLimit(h, &limit));
    cr_expect(power > 0 && limit > 0, "%u of %u mW", power, limit);
    NV_OK(nvmlDeviceGetClockInfo(h, NVML_CLOCK_MEM, &clock));
    cr_expect_gt(clock, 0);
    NV_OK(nvmlDeviceGetPerformanceState(h, &ps));
    cr_expect_leq(ps, NVML_PSTATE_15);
    NV_OK(nvmlDeviceGetMaxPcieLinkGeneration(h, &gen));
    cr_expect(gen >= 1 && gen <= 6, "PCIe gen %u", gen);
    NV_OK(nvmlSystemGetDriverVersion(s, sizeof(s)));
    cr_expect(s[0] >= '1' && s[0] <= '9' && strchr(s, '.') != NULL, "driver version %s", s);
    cr_log_info("the server's NVML: driver %s, %u C, %u of %u mW, P%d, PCIe gen %u", s, t,
                power, limit, (int)ps, gen);
}

Test(nvml, the_devices_telemetry_is_the_servers)
{
    char s[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    nvmlDevice_t h;
    unsigned lo;

    h = open_device();
    if (ds_test_on_sim())
        expect_sim_values(h);
    else
        expect_gpu_values(h);
    /* NVML's argument checks. */
    NV_IS(nvmlSystemGetDriverVersion(s, 3), NVML_ERROR_INSUFFICIENT_SIZE);
    NV_IS(nvmlDeviceGetPowerUsage(h, NULL), NVML_ERROR_INVALID_ARGUMENT);
    NV_IS(nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_COUNT, &lo), NVML_ERROR_INVALID_ARGUMENT);
    NV_IS(nvmlDeviceGetClockInfo(h, NVML_CLOCK_COUNT, &lo), NVML_ERROR_INVALID_ARGUMENT);
    NV_IS(nvmlDeviceGetPowerUsage((nvmlDevice_t)&lo, &lo), NVML_ERROR_INVALID_ARGUMENT);
    NV_OK(nvmlShutdown());
    NV_IS(nvmlDeviceGetPowerUsage(h, &lo), NVML_ERROR_UNINITIALIZED);
    NV_IS(nvmlSystemGetDriverVersion(s, sizeof(s)), NVML_ERROR_UNINITIALIZED);
}

/* The first CPU of set (of words words), or -1. */
static int first_cpu(const unsigned long *set, unsigned words)
{
    for (unsigned c = 0; c < words * 64; c++)
        if (set[c / 64] >> (c % 64) & 1)
            return (int)c;
    return -1;
}

/* One device, on the CPUs of the host it is near (on the sim: all of them, node 0), as a
 * machine with one GPU answers. */
Test(nvml, the_topology_is_a_one_gpu_machines)
{
    unsigned long cpus[16] = { 0 }, nodes[4] = { 0 };
    nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
    nvmlDevice_t h, set[2] = { NULL, NULL };
    unsigned n = 5;
    int cpu;

    h = open_device();
    NV_OK(nvmlDeviceGetCpuAffinity(h, 16, cpus));
    cpu = first_cpu(cpus, 16);
    cr_assert_geq(cpu, 0, "no CPU is near the device");
    if (ds_test_on_sim())
        cr_expect_eq(cpu, 0, "CPU 0 is not near the sim: %#lx", cpus[0]);
    NV_OK(nvmlDeviceGetCpuAffinityWithinScope(h, 16, cpus, NVML_AFFINITY_SCOPE_NODE));
    cr_expect_eq(first_cpu(cpus, 16), cpu);
    NV_OK(nvmlDeviceGetMemoryAffinity(h, 4, nodes, NVML_AFFINITY_SCOPE_NODE));
    cr_expect_geq(first_cpu(nodes, 4), 0, "no NUMA node is near the device");
    if (ds_test_on_sim())
        cr_expect_eq(nodes[0], 1);
    NV_IS(nvmlDeviceGetCpuAffinity(h, 0, cpus), NVML_ERROR_INVALID_ARGUMENT);
    NV_OK(nvmlDeviceGetTopologyCommonAncestor(h, h, &level));
    cr_expect_eq(level, NVML_TOPOLOGY_INTERNAL);
    NV_OK(nvmlDeviceGetTopologyNearestGpus(h, NVML_TOPOLOGY_SYSTEM, &n, set));
    cr_expect_eq(n, 0, "%u other GPUs", n);
    n = 0;
    NV_OK(nvmlSystemGetTopologyGpuSet((unsigned)cpu, &n, NULL));
    cr_expect_eq(n, 1);
    n = 2;
    NV_OK(nvmlSystemGetTopologyGpuSet((unsigned)cpu, &n, set));
    cr_expect(n == 1 && set[0] == h, "%u devices near CPU %d", n, cpu);
    NV_OK(nvmlShutdown());
}

static double elapsed_ms(double since)
{
    return now_ms() - since;
}

/* Event sets are the caller's: registering the supported types works, and a wait lasts
 * its timeout, for the server forwards no event. */
Test(nvml, event_sets_wait_their_timeout)
{
    nvmlSystemEventSetCreateRequest_t sc = { .version = nvmlSystemEventSetCreateRequest_v1 };
    nvmlSystemRegisterEventRequest_t sr = { .version = nvmlSystemRegisterEventRequest_v1 };
    nvmlSystemEventSetWaitRequest_t sw = { .version = nvmlSystemEventSetWaitRequest_v1,
                                           .timeoutms = 100 };
    nvmlSystemEventSetFreeRequest_t sf = { .version = nvmlSystemEventSetFreeRequest_v1 };
    nvmlSystemEventData_v1_t sdata[2];
    unsigned long long types = 0;
    nvmlEventData_t data;
    nvmlEventSet_t set;
    nvmlDevice_t h;
    double t0;

    h = open_device();
    NV_OK(nvmlEventSetCreate(&set));
    NV_OK(nvmlDeviceGetSupportedEventTypes(h, &types));
    cr_expect_eq(types & nvmlEventTypeXidCriticalError, nvmlEventTypeXidCriticalError,
                 "types %#llx", types);
    if (ds_test_on_sim())
        cr_expect_eq(types & nvmlEventTypeDoubleBitEccError, nvmlEventTypeDoubleBitEccError,
                     "ECC is on, types %#llx", types);
    NV_OK(nvmlDeviceRegisterEvents(h, types, set));
    NV_IS(nvmlDeviceRegisterEvents(h, nvmlEventTypeClock, set), NVML_ERROR_NOT_SUPPORTED);
    NV_IS(nvmlDeviceRegisterEvents(h, 1ull << 62, set), NVML_ERROR_INVALID_ARGUMENT);
    t0 = now_ms();
    NV_IS(nvmlEventSetWait_v2(set, &data, 200), NVML_ERROR_TIMEOUT);
    cr_expect_geq(elapsed_ms(t0), 195, "the wait ended after %.0f ms", elapsed_ms(t0));
    NV_IS(nvmlEventSetWait_v2(set, NULL, 0), NVML_ERROR_INVALID_ARGUMENT);
    NV_OK(nvmlEventSetFree(set));
    NV_IS(nvmlEventSetFree(set), NVML_ERROR_INVALID_ARGUMENT);

    NV_OK(nvmlSystemEventSetCreate(&sc));
    sr.set = sw.set = sf.set = sc.set;
    sr.eventTypes = nvmlSystemEventTypeGpuDriverBind | nvmlSystemEventTypeGpuDriverUnbind;
    NV_OK(nvmlSystemRegisterEvents(&sr));
    sw.data = sdata;
    sw.dataSize = 2;
    sw.numEvent = 9;
    t0 = now_ms();
    NV_IS(nvmlSystemEventSetWait(&sw), NVML_ERROR_TIMEOUT);
    cr_expect_geq(elapsed_ms(t0), 95, "the wait ended after %.0f ms", elapsed_ms(t0));
    cr_expect_eq(sw.numEvent, 0);
    sw.version = 0;
    NV_IS(nvmlSystemEventSetWait(&sw), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    NV_OK(nvmlSystemEventSetFree(&sf));
    NV_IS(nvmlSystemEventSetFree(&sf), NVML_ERROR_INVALID_ARGUMENT);
    NV_OK(nvmlShutdown());
}

/* Fails the test unless `call` gave a value or NVML_ERROR_NOT_SUPPORTED, the two answers
 * nvidia-smi prints (a value or "N/A"); counts the values. */
#define ANSWERS(call, values)                                                          \
    do {                                                                               \
        nvmlReturn_t rc_ = (call);                                                     \
        cr_expect(rc_ == NVML_SUCCESS || rc_ == NVML_ERROR_NOT_SUPPORTED, "%s -> %s",  \
                  #call, nvmlErrorString(rc_));                                        \
        (values) += rc_ == NVML_SUCCESS;                                               \
    } while (0)

/* The public queries behind nvidia-smi's plain view and the sections of -q (header,
 * identity, PCI, memory, utilisation, ECC, temperature, power, clocks, processes, MIG),
 * called as nvidia-smi calls them: a value or "not supported", never another error that
 * it could take for a broken library. */
Test(nvml, what_nvidia_smi_q_asks_gets_a_value_or_not_supported)
{
    char s[NVML_DEVICE_NAME_V2_BUFFER_SIZE + NVML_DEVICE_SERIAL_BUFFER_SIZE];
    unsigned u, u2, n = 0, served = 0;
    unsigned long long ull;
    int i, i2;
    nvmlDevice_t h;
    nvmlEnableState_t e, e2;
    nvmlPciInfo_t pci;
    nvmlMemory_t m;
    nvmlMemory_v2_t m2 = { .version = nvmlMemory_v2 };
    nvmlBAR1Memory_t bar1;
    nvmlUtilization_t util;
    nvmlComputeMode_t mode;
    nvmlPstates_t ps;
    nvmlBrandType_t brand;
    nvmlDeviceArchitecture_t arch;
    nvmlProcessInfo_t procs[4];
    nvmlEventSet_t set;

    NV_OK(nvmlInit_v2());
    ANSWERS(nvmlSystemGetDriverVersion(s, sizeof(s)), served);
    ANSWERS(nvmlSystemGetNVMLVersion(s, sizeof(s)), served);
    ANSWERS(nvmlSystemGetCudaDriverVersion_v2(&i), served);
    ANSWERS(nvmlDeviceGetCount_v2(&u), served);
    NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &h));
    ANSWERS(nvmlDeviceGetName(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetBrand(h, &brand), served);
    ANSWERS(nvmlDeviceGetUUID(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetSerial(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetMinorNumber(h, &u), served);
    ANSWERS(nvmlDeviceGetVbiosVersion(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetBoardId(h, &u), served);
    ANSWERS(nvmlDeviceGetBoardPartNumber(h, s, sizeof(s)), served);
    ANSWERS(nvmlDeviceGetDisplayMode(h, &e), served);
    ANSWERS(nvmlDeviceGetDisplayActive(h, &e), served);
    ANSWERS(nvmlDeviceGetPersistenceMode(h, &e), served);
    ANSWERS(nvmlDeviceGetAccountingMode(h, &e), served);
    ANSWERS(nvmlDeviceGetMigMode(h, &u, &u2), served);
    ANSWERS(nvmlDeviceGetMaxMigDeviceCount(h, &u), served);
    ANSWERS(nvmlDeviceGetPciInfo_v3(h, &pci), served);
    ANSWERS(nvmlDeviceGetMaxPcieLinkGeneration(h, &u), served);
    ANSWERS(nvmlDeviceGetCurrPcieLinkWidth(h, &u), served);
    ANSWERS(nvmlDeviceGetPcieThroughput(h, NVML_PCIE_UTIL_TX_BYTES, &u), served);
    ANSWERS(nvmlDeviceGetFanSpeed(h, &u), served);
    ANSWERS(nvmlDeviceGetPerformanceState(h, &ps), served);
    ANSWERS(nvmlDeviceGetCurrentClocksEventReasons(h, &ull), served);
    ANSWERS(nvmlDeviceGetMemoryInfo(h, &m), served);
    ANSWERS(nvmlDeviceGetMemoryInfo_v2(h, &m2), served);
    ANSWERS(nvmlDeviceGetBAR1MemoryInfo(h, &bar1), served);
    ANSWERS(nvmlDeviceGetComputeMode(h, &mode), served);
    ANSWERS(nvmlDeviceGetUtilizationRates(h, &util), served);
    ANSWERS(nvmlDeviceGetEncoderUtilization(h, &u, &u2), served);
    ANSWERS(nvmlDeviceGetEccMode(h, &e, &e2), served);
    ANSWERS(nvmlDeviceGetTotalEccErrors(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC,
                                        &ull), served);
    ANSWERS(nvmlDeviceGetRetiredPagesPendingStatus(h, &e), served);
    ANSWERS(nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &u), served);
    ANSWERS(nvmlDeviceGetTemperatureThreshold(h, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &u),
            served);
    ANSWERS(nvmlDeviceGetPowerUsage(h, &u), served);
    ANSWERS(nvmlDeviceGetEnforcedPowerLimit(h, &u), served);
    ANSWERS(nvmlDeviceGetPowerManagementLimitConstraints(h, &u, &u2), served);
    for (nvmlClockType_t c = NVML_CLOCK_GRAPHICS; c < NVML_CLOCK_COUNT; c++) {
        ANSWERS(nvmlDeviceGetClockInfo(h, c, &u), served);
        ANSWERS(nvmlDeviceGetMaxClockInfo(h, c, &u), served);
        ANSWERS(nvmlDeviceGetApplicationsClock(h, c, &u), served);
    }
    ANSWERS(nvmlDeviceGetCudaComputeCapability(h, &i, &i2), served);
    ANSWERS(nvmlDeviceGetArchitecture(h, &arch), served);
    ANSWERS(nvmlDeviceGetMemoryBusWidth(h, &u), served);
    n = 0;
    ANSWERS(nvmlDeviceGetComputeRunningProcesses_v3(h, &n, NULL), served);
    n = 4;
    ANSWERS(nvmlDeviceGetGraphicsRunningProcesses_v3(h, &n, procs), served);
    n = 4;
    ANSWERS(nvmlDeviceGetMPSComputeRunningProcesses_v3(h, &n, procs), served);
    ANSWERS(nvmlEventSetCreate(&set), served);
    /* What detshare serves on the sim (docs/nvml.md, "What a tenant sees"), so that a
     * change that lost one to "not supported" shows: all but the minor number,
     * accounting, PCIe throughput, fan, BAR1, encoder and retired pages. */
    if (ds_test_on_sim())
        cr_expect_eq(served, 51, "%u of the queries gave a value", served);
    else
        cr_log_info("%u of the queries gave a value (51 on the sim)", served);
    NV_OK(nvmlEventSetFree(set));
    NV_OK(nvmlShutdown());
}

/* Plain nvidia-smi, beyond what -q asks: it exited 3 through detshare on an H200 (runs
 * 129 and 131) while these were not served. */
Test(nvml, what_plain_nvidia_smi_asks_more_is_served)
{
    nvmlGpuVirtualizationMode_t mode = NVML_GPU_VIRTUALIZATION_MODE_VGPU;
    unsigned is_mig = 7, cur = 7, pending = 7, most = 7;
    nvmlDevice_t h;

    NV_OK(nvmlInit_v2());
    NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &h));
    NV_OK(nvmlDeviceIsMigDeviceHandle(h, &is_mig));
    cr_expect_eq(is_mig, 0, "a tenant's device is no MIG instance");
    cr_expect_eq(nvmlDeviceIsMigDeviceHandle(h, NULL), NVML_ERROR_INVALID_ARGUMENT);
    NV_OK(nvmlDeviceGetMigMode(h, &cur, &pending));
    cr_expect(cur == NVML_DEVICE_MIG_DISABLE && pending == NVML_DEVICE_MIG_DISABLE,
              "MIG is off in a tenant: %u/%u", cur, pending);
    cr_expect_eq(nvmlDeviceGetMigMode(h, &cur, NULL), NVML_ERROR_INVALID_ARGUMENT);
    NV_OK(nvmlDeviceGetMaxMigDeviceCount(h, &most));
    cr_expect_eq(most, 0, "no MIG device can be made in a tenant's device");
    NV_OK(nvmlDeviceValidateInforom(h));
    NV_OK(nvmlDeviceGetVirtualizationMode(h, &mode));
    if (ds_test_on_sim())
        cr_expect_eq(mode, NVML_GPU_VIRTUALIZATION_MODE_NONE, "the sim's mode");
    else
        cr_log_info("virtualization mode %d, as the server's NVML reads it", (int)mode);
    NV_OK(nvmlShutdown());
}
