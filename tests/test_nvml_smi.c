/* The table nvidia-smi asks detshare's libnvidia-ml.so.1 for (nvmlInternalGetExportTable,
 * nvml/internal.c), driven as nvidia-smi drives it, by a tenant under a memory quota
 * that loads the library with dlopen: the table is served for nvidia-smi's id alone, its
 * device slot gives the handle the public API gives, its process lists hold the calling
 * process alone, slots 26 and 72 succeed as NVIDIA's mock answers them, every other slot
 * fails without touching its arguments, and nvidia-smi itself, where installed, prints
 * its views as a tenant. */
#include "ds_test.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nvml.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define SLOTS 512
#define ENTRY 4128 /* bytes of one process-list entry */
#define GUARD 0xA5

typedef void *slot_t;
typedef nvmlReturn_t (*get_table_fn)(const void **table, const void *id);
typedef nvmlReturn_t (*by_index_fn)(unsigned index, nvmlDevice_t *out, unsigned flags);
typedef nvmlReturn_t (*list_fn)(nvmlDevice_t h, unsigned *count, void *entries);
typedef nvmlReturn_t (*any_fn)(void *a0, void *a1, void *a2, void *a3);

/* 6c3efec4-8fc9-4e6c-a327-ee696e12f7c4, as nvidia-smi passes it. */
static const unsigned char smi_id[16] = { 0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
                                          0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4 };

static struct ds_test_server srv;
static char dir[64];

/* The library's functions this file calls, from dlopen as nvidia-smi has them. */
static struct {
    get_table_fn get_table;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
} nv;

#define NV_IS(call, want)                                                              \
    do {                                                                               \
        nvmlReturn_t rc_ = (call);                                                     \
        cr_assert_eq(rc_, (want), "%s -> %d, expected %d", #call, (int)rc_, (int)(want)); \
    } while (0)

#define NV_OK(call) NV_IS(call, NVML_SUCCESS)

static void *sym(void *lib, const char *name)
{
    void *f = dlsym(lib, name);

    cr_assert_not_null(f, "%s is not exported by %s", name, DS_NVML_LIB);
    return f;
}

/* A server whose only rule gives tenant "smi" 64 MiB, and the library, loaded. */
static void start(void)
{
    char config[128], args[160];
    const char *rules = "quota smi memory=64MiB\n";
    void *lib;
    int fd;

    snprintf(dir, sizeof(dir), "/tmp/dssmi.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(config, sizeof(config), "%s/detshare.conf", dir);
    fd = open(config, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0, "%s: %s", config, strerror(errno));
    cr_assert_eq(write(fd, rules, strlen(rules)), (ssize_t)strlen(rules));
    close(fd);
    snprintf(args, sizeof(args), "--config %s", config);
    ds_test_server_start(&srv, 0, args);
    setenv("DETSHARE_TENANT", "smi", 1);
    lib = dlopen(DS_NVML_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "%s", dlerror());
    nv.get_table = (get_table_fn)sym(lib, "nvmlInternalGetExportTable");
    *(void **)&nv.init = sym(lib, "nvmlInit_v2");
    *(void **)&nv.shutdown = sym(lib, "nvmlShutdown");
    *(void **)&nv.by_index = sym(lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&nv.memory = sym(lib, "nvmlDeviceGetMemoryInfo");
}

static void stop(void)
{
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

TestSuite(nvml_smi, .init = start, .fini = stop, .timeout = 120);

static const slot_t *smi_table(void)
{
    const void *t = NULL;

    NV_OK(nv.get_table(&t, smi_id));
    cr_assert_not_null(t);
    return t;
}

/* nvmlInit, and device 0's handle as nvidia-smi takes it, from slot 81. */
static nvmlDevice_t open_device(const slot_t *t)
{
    nvmlDevice_t h = NULL;

    NV_OK(nv.init());
    NV_OK(((by_index_fn)t[81])(0, &h, 0x22));
    cr_assert_not_null(h);
    return h;
}

/* Another tenant, with memory of its own that this one must not see. */
static int neighbour(void *arg)
{
    CUdeviceptr d;

    (void)arg;
    setenv("DETSHARE_TENANT", "neighbour", 1);
    return ds_test_connect() == CUDA_SUCCESS && cuMemAlloc(&d, 32 * MiB) == CUDA_SUCCESS ? 0 : 1;
}

Test(nvml_smi, the_table_is_served_for_nvidia_smis_id_alone)
{
    unsigned char other[16];
    const void *t = &t;
    const slot_t *table, *again;

    NV_IS(nv.get_table(NULL, smi_id), NVML_ERROR_INVALID_ARGUMENT);
    NV_IS(nv.get_table(&t, NULL), NVML_ERROR_INVALID_ARGUMENT);
    memcpy(other, smi_id, sizeof(other));
    other[15] ^= 1;
    NV_IS(nv.get_table(&t, other), NVML_ERROR_NOT_SUPPORTED);
    cr_expect_null(t, "a table for an id it does not know");

    /* Before nvmlInit too: nvidia-smi may ask first. */
    table = smi_table();
    cr_expect_eq((uintptr_t)table[0], SLOTS * sizeof(slot_t), "size word %#zx",
                 (size_t)(uintptr_t)table[0]);
    for (int i = 1; i < SLOTS; i++)
        cr_expect_not_null(table[i], "slot %d is NULL: nvidia-smi would jump to 0", i);
    again = smi_table();
    cr_expect_eq(again, table);
}

Test(nvml_smi, slot_81_gives_the_handle_the_public_api_gives)
{
    const slot_t *t = smi_table();
    by_index_fn by_index = (by_index_fn)t[81];
    nvmlDevice_t h = NULL, pub = NULL;
    nvmlMemory_t m;

    NV_IS(by_index(0, &h, 0x22), NVML_ERROR_UNINITIALIZED);
    h = open_device(t);
    NV_OK(nv.by_index(0, &pub));
    cr_expect_eq(h, pub);
    NV_IS(by_index(1, &pub, 0x22), NVML_ERROR_INVALID_ARGUMENT);
    NV_IS(by_index(0, NULL, 0x22), NVML_ERROR_INVALID_ARGUMENT);
    NV_OK(nv.memory(h, &m));
    cr_expect_eq(m.total, 64 * MiB, "total %llu: nvidia-smi would show more than the quota",
                 m.total);
    NV_OK(nv.shutdown());
}

/* Slot `slot`'s list into room for 2 entries, filled with GUARD: the count it says. */
static unsigned list(const slot_t *t, int slot, nvmlDevice_t h, unsigned char *buf)
{
    unsigned n = 2;

    memset(buf, GUARD, 2 * ENTRY);
    NV_OK(((list_fn)t[slot])(h, &n, buf));
    return n;
}

static int untouched(const unsigned char *buf, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (buf[i] != GUARD)
            return 0;
    return 1;
}

Test(nvml_smi, the_process_lists_hold_the_calling_process_alone)
{
    static unsigned char buf[2 * ENTRY];
    struct ds_test_peer peer;
    const slot_t *t = smi_table();
    nvmlDevice_t h;
    CUdeviceptr d;
    char comm[64] = "";
    unsigned n, pid;
    unsigned long long used;
    uint32_t gi, ci;
    FILE *f;

    ds_test_peer_fork(&peer, neighbour, NULL);
    ds_test_peer_join(&peer);
    h = open_device(t);
    /* No context and no memory yet: nothing runs, the neighbour's process included. */
    cr_expect_eq(list(t, 213, h, buf), 0);

    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 4 * MiB));
    n = 0;
    NV_IS(((list_fn)t[213])(h, &n, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
    cr_expect_eq(n, 1, "room for %u", n);
    n = 250;
    NV_IS(((list_fn)t[213])(h, &n, NULL), NVML_ERROR_INVALID_ARGUMENT);
    NV_IS(((list_fn)t[213])(h, NULL, buf), NVML_ERROR_INVALID_ARGUMENT);
    NV_IS(((list_fn)t[213])((nvmlDevice_t)buf, &n, buf), NVML_ERROR_INVALID_ARGUMENT);

    cr_assert_eq(list(t, 213, h, buf), 1);
    memcpy(&pid, buf, sizeof(pid));
    memcpy(&used, buf + 8, sizeof(used));
    memcpy(&gi, buf + 16, sizeof(gi));
    memcpy(&ci, buf + 20, sizeof(ci));
    cr_expect_eq(pid, (unsigned)getpid(), "pid %u, not ours (%d)", pid, (int)getpid());
    cr_expect_eq(used, 4 * MiB, "used %llu", used);
    cr_expect_eq(gi, 0xFFFFFFFFu);
    cr_expect_eq(ci, 0xFFFFFFFFu);
    f = fopen("/proc/self/comm", "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(comm, sizeof(comm), f));
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    cr_expect_str_eq((const char *)buf + 32, comm);
    cr_expect(untouched(buf, ENTRY, 2 * ENTRY), "the second entry was written");

    for (int slot = 214; slot <= 215; slot++) {
        cr_expect_eq(list(t, slot, h, buf), 0, "slot %d lists a process", slot);
        cr_expect(untouched(buf, 0, 2 * ENTRY), "slot %d wrote an entry", slot);
    }
    CU_OK(cuMemFree(d));
    NV_OK(nv.shutdown());
    ds_test_peer_leave(&peer);
}

Test(nvml_smi, every_other_slot_fails_and_touches_nothing)
{
    static unsigned char buf[2 * ENTRY];
    const slot_t *t = smi_table();
    nvmlDevice_t h = open_device(t);

    for (int slot = 1; slot < SLOTS; slot++) {
        unsigned n = 65535;

        if (slot == 81 || (slot >= 213 && slot <= 215) || slot == 26 || slot == 72)
            continue;
        memset(buf, GUARD, sizeof(buf));
        NV_IS(((any_fn)t[slot])(h, &n, buf, buf), NVML_ERROR_NOT_SUPPORTED);
        cr_expect_eq(n, 65535, "slot %d wrote a count", slot);
        cr_expect(untouched(buf, 0, sizeof(buf)), "slot %d wrote into a buffer", slot);
    }
    NV_OK(nv.shutdown());
}

/* Plain nvidia-smi and -q stop at an error from slot 26 (run 120); pmon asks for 72. */
Test(nvml_smi, slots_26_and_72_succeed_with_a_zero_count_for_a_device)
{
    static unsigned char buf[2 * ENTRY];
    const slot_t *t = smi_table();
    const int slots[] = { 26, 72 };
    nvmlDevice_t h;

    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        unsigned n = 65535;

        NV_OK(((any_fn)t[slots[i]])(NULL, NULL, NULL, NULL));
        memset(buf, GUARD, sizeof(buf));
        NV_OK(((any_fn)t[slots[i]])(buf, &n, buf, buf));
        cr_expect_eq(n, 65535, "slot %d wrote a count for what is no device", slots[i]);
        cr_expect(untouched(buf, 0, sizeof(buf)), "slot %d wrote into a buffer", slots[i]);
    }
    h = open_device(t);
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        unsigned n = 65535;

        memset(buf, GUARD, sizeof(buf));
        NV_OK(((any_fn)t[slots[i]])(h, &n, buf, buf));
        cr_expect_eq(n, 0, "slot %d: count %u for the device", slots[i], n);
        cr_expect(untouched(buf, 0, sizeof(buf)), "slot %d wrote into a buffer", slots[i]);
        NV_OK(((any_fn)t[slots[i]])(h, NULL, buf, buf));
    }
    NV_OK(nv.shutdown());
}

/* `nvidia-smi ARGS` as a tenant of the fixture's server, through this build's libraries:
 * its exit status; its output into out. */
static int smi(const char *args, char *out, size_t len)
{
    char cmd[512], lib[256], *slash;
    size_t n = 0, got;
    FILE *p;
    int st;

    snprintf(lib, sizeof(lib), "%s", DS_NVML_LIB);
    slash = strrchr(lib, '/');
    cr_assert_not_null(slash);
    *slash = '\0';
    /* Ahead of the caller's path, not instead of it: that is where our libcuda's own
     * libraries (libtirpc, libuv) are found on a machine without them installed. */
    snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} nvidia-smi %s 2>&1",
             lib, args);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    while (n + 1 < len && (got = fread(out + n, 1, len - 1 - n, p)) > 0)
        n += got;
    out[n] = '\0';
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Where nvidia-smi is installed (the GPU box; gpu_nvml_smi and nvml_smi both run it):
 * -L, plain, topo -m and -q print as a tenant, with the tenant's quota as the memory and
 * the driver's version, which the server's NVML gives.  Before event sets and the
 * device's facts were served (H200, driver 580.159.04), plain and -q ended with
 * "Internal NVML error" and topo -m with "Failed to run topology matrix", exit 255. */
Test(nvml_smi, nvidia_smi_prints_its_views_as_a_tenant)
{
    static char out[1 << 16];
    const char *views[] = { "-L", "", "topo -m", "-q" };
    const char *fb, *total, *colon, *driver;

    if (system("command -v nvidia-smi >/dev/null 2>&1") != 0)
        cr_skip_test("no nvidia-smi here");
    for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
        int rc = smi(views[i], out, sizeof(out));

        cr_expect_eq(rc, 0, "nvidia-smi %s exited %d:\n%s", views[i], rc, out);
        cr_expect_null(strstr(out, "Mismatch"), "nvidia-smi %s:\n%s", views[i], out);
        cr_expect_null(strstr(out, "Internal NVML error"), "nvidia-smi %s:\n%s", views[i], out);
        cr_expect_null(strstr(out, "Failed to"), "nvidia-smi %s:\n%s", views[i], out);
    }
    driver = strstr(out, "Driver Version");
    colon = driver != NULL ? strchr(driver, ':') : NULL;
    cr_assert_not_null(colon, "no driver version in -q:\n%s", out);
    cr_expect_neq(strncmp(colon, ": N/A", 5), 0, "-q's driver version is N/A: the server "
                  "did not read its NVML (its log says why)");
    fb = strstr(out, "FB Memory Usage");
    cr_assert_not_null(fb, "no FB Memory Usage in -q:\n%s", out);
    total = strstr(fb, "Total");
    colon = total != NULL ? strchr(total, ':') : NULL;
    cr_assert_not_null(colon, "no FB total in -q:\n%s", out);
    cr_expect_eq(strncmp(colon, ": 64 MiB", 8), 0,
                 "-q's FB total is not the 64 MiB quota: %.60s", total);
}
