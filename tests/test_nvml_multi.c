/* detshare's libnvidia-ml.so.1 in a tenant of two servers (DETSHARE_SERVER=a,b): NVML
 * shows the two devices libcuda shows, in its order, each answered by its own server,
 * and the two as devices of one host: peers for reads and writes, never over NVLink.
 * NCCL and PyTorch find a rank's device by its PCI bus id and read the pair's topology
 * and peer status here (docs/nvml.md, "Several servers"). */
#include "ds_test.h"
#include "nvml_check.h"

#include <errno.h>
#include <fcntl.h>
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB (1ull << 20)

static struct ds_test_server srv[2];
static char dir[64];

/* Two servers of distinct devices (on a GPU box only with DS_TEST_GPU_PAIR: GPUs 0 and
 * 1); only the second's rule gives tenant "nvm" a quota of 64 MiB. */
static void start(void)
{
    char config[128], args[192];
    const char *rules = "quota nvm memory=64MiB\n";
    int pair = !ds_test_on_sim() && getenv("DS_TEST_GPU_PAIR") != NULL;
    int fd;

    snprintf(dir, sizeof(dir), "/tmp/dsnvmlm.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(config, sizeof(config), "%s/detshare.conf", dir);
    fd = open(config, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0, "%s: %s", config, strerror(errno));
    cr_assert_eq(write(fd, rules, strlen(rules)), (ssize_t)strlen(rules));
    close(fd);
    ds_test_server_start(&srv[0], 0, ds_test_on_sim() ? NULL : pair ? "--gpu 0" : "--mps off");
    snprintf(args, sizeof(args), "--config %s %s", config,
             ds_test_on_sim() ? "--sim-sms 66 --gpu 1"
             : pair           ? "--gpu 1"
                              : "--mps off");
    ds_test_server_start(&srv[1], 0, args);
    ds_test_servers_use(srv, 2);
    setenv("DETSHARE_TENANT", "nvm", 1);
}

static void stop(void)
{
    ds_test_server_stop(&srv[1]);
    ds_test_server_stop(&srv[0]);
    ds_test_remove_tree(dir);
}

TestSuite(nvml_multi, .init = start, .fini = stop, .timeout = 120);

/* Two distinct devices to compare: the sim's two, or a GPU pair. */
static void need_two_devices(void)
{
    if (!ds_test_on_sim() && getenv("DS_TEST_GPU_PAIR") == NULL)
        cr_skip_test("both servers serve GPU 0 without DS_TEST_GPU_PAIR");
}

/* nvmlInit (and cuInit, to compare), and the two devices' handles. */
static void open_devices(nvmlDevice_t h[2])
{
    unsigned n = 0;

    CU_OK(cuInit(0));
    NV_OK(nvmlInit_v2());
    NV_OK(nvmlDeviceGetCount_v2(&n));
    cr_assert_eq(n, 2, "%u devices", n);
    NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &h[0]));
    NV_OK(nvmlDeviceGetHandleByIndex_v2(1, &h[1]));
    cr_assert_neq(h[0], h[1]);
}

/* Each device's identity is its own server's device's, as libcuda shows the same index:
 * its UUID, PCI location and serial, and a lookup by either finds it. */
Test(nvml_multi, each_device_is_its_servers)
{
    char uuid[2][NVML_DEVICE_UUID_V2_BUFFER_SIZE], serial[2][NVML_DEVICE_SERIAL_BUFFER_SIZE];
    char want[NVML_DEVICE_UUID_V2_BUFFER_SIZE], bus_id[32];
    nvmlDevice_t h[2], found;
    nvmlPciInfo_t pci[2];
    unsigned index;
    int bus, sms;

    need_two_devices();
    open_devices(h);
    for (int i = 0; i < 2; i++) {
        CUuuid u;
        const unsigned char *b = (const unsigned char *)u.bytes;

        NV_OK(nvmlDeviceGetIndex(h[i], &index));
        cr_expect_eq(index, (unsigned)i);
        NV_OK(nvmlDeviceGetUUID(h[i], uuid[i], sizeof(uuid[i])));
        CU_OK(cuDeviceGetUuid(&u, i));
        snprintf(want, sizeof(want),
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                 b[12], b[13], b[14], b[15]);
        cr_expect_str_eq(uuid[i], want, "device %d", i);
        NV_OK(nvmlDeviceGetPciInfo_v3(h[i], &pci[i]));
        CU_OK(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i));
        cr_expect_eq(pci[i].bus, (unsigned)bus, "device %d", i);
        CU_OK(cuDeviceGetPCIBusId(bus_id, sizeof(bus_id), i));
        NV_OK(nvmlDeviceGetHandleByPciBusId_v2(bus_id, &found));
        cr_expect_eq(found, h[i], "%s found another device", bus_id);
        NV_OK(nvmlDeviceGetHandleByUUID(uuid[i], &found));
        cr_expect_eq(found, h[i], "%s found another device", uuid[i]);
        NV_OK(nvmlDeviceGetSerial(h[i], serial[i], sizeof(serial[i])));
    }
    cr_expect_str_neq(uuid[0], uuid[1]);
    cr_expect_str_neq(pci[0].busId, pci[1].busId);
    if (ds_test_on_sim()) {
        /* Asked one after the other, within the second the facts are kept: each
         * device's are its own server's. */
        cr_expect_str_eq(serial[0], "detshare-sim-0");
        cr_expect_str_eq(serial[1], "detshare-sim-1");
        CU_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1));
        cr_expect_eq(sms, 66);
    }
    NV_OK(nvmlShutdown());
}

/* Memory is each device's share: the quota of the one server whose rule gives one, the
 * device's memory of the other, and what the tenant holds on each. */
Test(nvml_multi, memory_is_each_devices_share)
{
    nvmlMemory_t m0, m1, after0, after1;
    nvmlDevice_t h[2];
    CUcontext c;
    CUdeviceptr d;
    size_t free_b, total;

    need_two_devices();
    open_devices(h);
    NV_OK(nvmlDeviceGetMemoryInfo(h[0], &m0));
    NV_OK(nvmlDeviceGetMemoryInfo(h[1], &m1));
    cr_expect_eq(m1.total, 64 * MiB, "device 1's total %llu", m1.total);
    cr_expect_gt(m0.total, 64 * MiB, "device 0's total %llu: not device 1's quota", m0.total);

    CU_OK(cuDevicePrimaryCtxRetain(&c, 1));
    CU_OK(cuCtxSetCurrent(c));
    CU_OK(cuMemAlloc(&d, 8 * MiB));
    CU_OK(cuMemGetInfo(&free_b, &total));
    NV_OK(nvmlDeviceGetMemoryInfo(h[0], &after0));
    NV_OK(nvmlDeviceGetMemoryInfo(h[1], &after1));
    cr_expect_eq(after1.used - m1.used, 8 * MiB, "device 1's used grew by %llu",
                 after1.used - m1.used);
    cr_expect_eq(after1.free, free_b, "NVML free %llu, cuMemGetInfo %zu", after1.free, free_b);
    cr_expect_eq(after1.total, total);
    cr_expect_eq(after0.used, m0.used, "device 0's used moved: %llu to %llu", m0.used,
                 after0.used);
    CU_OK(cuMemFree(d));
    CU_OK(cuDevicePrimaryCtxRelease(1));
    NV_OK(nvmlShutdown());
}

/* Two devices of this host: peers for reads and writes over PCIe, not over NVLink nor
 * for atomics; a common ancestor no closer than their NUMA node (the sim's: node 0 for
 * both); each the other's nearest GPU; both near the CPUs their facts name. */
Test(nvml_multi, the_two_are_peers_of_one_host)
{
    nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_INTERNAL;
    nvmlGpuP2PStatus_t st;
    nvmlDevice_t h[2], set[4];
    nvmlEnableState_t active;
    unsigned n;

    need_two_devices();
    open_devices(h);
    NV_OK(nvmlDeviceGetTopologyCommonAncestor(h[0], h[1], &level));
    if (ds_test_on_sim())
        cr_expect_eq(level, NVML_TOPOLOGY_NODE, "level %d", (int)level);
    else
        cr_expect(level == NVML_TOPOLOGY_NODE || level == NVML_TOPOLOGY_SYSTEM, "level %d",
                  (int)level);
    NV_OK(nvmlDeviceGetTopologyCommonAncestor(h[1], h[0], &level));
    NV_OK(nvmlDeviceGetTopologyCommonAncestor(h[1], h[1], &level));
    cr_expect_eq(level, NVML_TOPOLOGY_INTERNAL);

    for (int i = 0; i < 2; i++) {
        NV_OK(nvmlDeviceGetP2PStatus(h[i], h[1 - i], NVML_P2P_CAPS_INDEX_READ, &st));
        cr_expect_eq(st, NVML_P2P_STATUS_OK, "read %d -> %d", i, 1 - i);
        NV_OK(nvmlDeviceGetP2PStatus(h[i], h[1 - i], NVML_P2P_CAPS_INDEX_WRITE, &st));
        cr_expect_eq(st, NVML_P2P_STATUS_OK, "write %d -> %d", i, 1 - i);
        NV_OK(nvmlDeviceGetP2PStatus(h[i], h[1 - i], NVML_P2P_CAPS_INDEX_PCI, &st));
        cr_expect_eq(st, NVML_P2P_STATUS_OK);
        NV_OK(nvmlDeviceGetP2PStatus(h[i], h[1 - i], NVML_P2P_CAPS_INDEX_NVLINK, &st));
        cr_expect_eq(st, NVML_P2P_STATUS_NOT_SUPPORTED);
        NV_OK(nvmlDeviceGetP2PStatus(h[i], h[1 - i], NVML_P2P_CAPS_INDEX_ATOMICS, &st));
        cr_expect_eq(st, NVML_P2P_STATUS_NOT_SUPPORTED);
    }
    NV_OK(nvmlDeviceGetP2PStatus(h[0], h[0], NVML_P2P_CAPS_INDEX_READ, &st));
    cr_expect_eq(st, NVML_P2P_STATUS_NOT_SUPPORTED, "a device is its own peer");
    NV_IS(nvmlDeviceGetP2PStatus(h[0], h[1], NVML_P2P_CAPS_INDEX_UNKNOWN, &st),
          NVML_ERROR_INVALID_ARGUMENT);
    NV_IS(nvmlDeviceGetNvLinkState(h[0], 0, &active), NVML_ERROR_NOT_SUPPORTED);

    n = 0;
    NV_OK(nvmlDeviceGetTopologyNearestGpus(h[0], NVML_TOPOLOGY_SYSTEM, &n, NULL));
    cr_expect_eq(n, 1);
    n = 4;
    NV_OK(nvmlDeviceGetTopologyNearestGpus(h[1], NVML_TOPOLOGY_SYSTEM, &n, set));
    cr_expect(n == 1 && set[0] == h[0], "%u nearest to device 1", n);
    n = 4;
    NV_OK(nvmlDeviceGetTopologyNearestGpus(h[1], NVML_TOPOLOGY_HOSTBRIDGE, &n, set));
    cr_expect_eq(n, 0, "a host bridge the facts do not show");
    if (ds_test_on_sim()) {
        n = 4;
        NV_OK(nvmlSystemGetTopologyGpuSet(0, &n, set));
        cr_expect(n == 2 && set[0] == h[0] && set[1] == h[1], "%u devices near CPU 0", n);
    }
    NV_OK(nvmlShutdown());
}
