/*
 * The tenants of scripts/crash-soak.sh: plain driver-API programs, one role each.
 *
 *   soak_tenant good READY STOP  copies known bytes in and out until file STOP exists,
 *                                checking every byte; prints its rounds; exits 1 on a
 *                                wrong byte
 *   soak_tenant copy|launch|capture|pinned READY FATBIN
 *                                a victim: allocates device memory, touches READY once it
 *                                is in its loop, then loops at its work until SIGKILL
 *   soak_tenant meminfo          prints the device's free and total memory
 *
 * READY is a file created when the tenant reaches its loop, so the script can kill it
 * there or before.  FATBIN holds tests/kernels/launch.cu (kernels fill and spin).
 */
#include <cuda.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                         \
    do {                                                                    \
        CUresult rc_ = (call);                                              \
        if (rc_ != CUDA_SUCCESS) {                                          \
            const char *name_ = NULL;                                       \
            cuGetErrorName(rc_, &name_);                                    \
            fprintf(stderr, "soak_tenant: %s: %s\n", #call, name_ ? name_ : "?"); \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#define BUF_BYTES (1u << 20)
#define VICTIM_BYTES (8u << 20)

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

    if (fd >= 0)
        close(fd);
}

static int start(void)
{
    CUdevice dev;
    CUcontext ctx;

    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    return 0;
}

/* Round r's bytes: differ from round to round and from byte to byte. */
static void pattern(unsigned char *p, size_t n, unsigned long r)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + r * 7u + (i >> 12));
}

/* A file, not a signal, ends it: a signal could interrupt a call mid-transfer. */
static int good(const char *ready, const char *stop)
{
    static unsigned char in[BUF_BYTES], out[BUF_BYTES];
    CUdeviceptr d;
    unsigned long r;

    if (start() != 0)
        return 1;
    CHECK(cuMemAlloc(&d, BUF_BYTES));
    touch(ready);
    for (r = 0; access(stop, F_OK) != 0; r++) {
        pattern(in, sizeof(in), r);
        memset(out, 0, sizeof(out));
        CHECK(cuMemcpyHtoD(d, in, sizeof(in)));
        CHECK(cuMemcpyDtoH(out, d, sizeof(out)));
        if (memcmp(in, out, sizeof(in)) != 0) {
            fprintf(stderr, "soak_tenant: round %lu: the bytes read back differ\n", r);
            return 1;
        }
    }
    CHECK(cuMemFree(d));
    printf("%lu\n", r);
    return 0;
}

static int copy_loop(CUdeviceptr d, const char *ready)
{
    unsigned char *h = malloc(VICTIM_BYTES);
    CUstream s;

    if (h == NULL)
        return 1;
    memset(h, 0x5a, VICTIM_BYTES);
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    touch(ready);
    for (;;) {
        CHECK(cuMemcpyHtoD(d, h, VICTIM_BYTES));
        CHECK(cuMemcpyHtoDAsync(d, h, VICTIM_BYTES / 2, s));
        CHECK(cuMemcpyDtoH(h, d, VICTIM_BYTES));
    }
}

static int launch_loop(CUdeviceptr d, CUmodule m, const char *ready)
{
    CUfunction fill, spin;
    int n = VICTIM_BYTES / sizeof(int), v = 0;
    unsigned long long ns = 20000;
    void *fill_args[] = { &d, &v, &n }, *spin_args[] = { &ns };

    CHECK(cuModuleGetFunction(&fill, m, "fill"));
    CHECK(cuModuleGetFunction(&spin, m, "spin"));
    touch(ready);
    for (;; v++) {
        CHECK(cuLaunchKernel(fill, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, fill_args, NULL));
        CHECK(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, NULL, spin_args, NULL));
        if (v % 64 == 0)
            CHECK(cuCtxSynchronize());
    }
}

/* Most of each round is spent capturing, so that most kills land mid-capture. */
static int capture_loop(CUdeviceptr d, CUmodule m, const char *ready)
{
    CUfunction fill;
    CUstream s;
    CUgraph g;
    CUgraphExec e;
    int n = VICTIM_BYTES / sizeof(int), v = 1;
    void *args[] = { &d, &v, &n };

    CHECK(cuModuleGetFunction(&fill, m, "fill"));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    touch(ready);
    for (;;) {
        CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        for (int i = 0; i < 64; i++) {
            CHECK(cuLaunchKernel(fill, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
            CHECK(cuMemsetD32Async(d, (unsigned)i, 1024, s));
        }
        CHECK(cuStreamEndCapture(s, &g));
        CHECK(cuGraphInstantiate(&e, g, 0));
        CHECK(cuGraphLaunch(e, s));
        CHECK(cuStreamSynchronize(s));
        CHECK(cuGraphExecDestroy(e));
        CHECK(cuGraphDestroy(g));
    }
}

/* Holds pinned buffers (two ways of asking) and keeps taking and freeing more. */
static int pinned_loop(CUdeviceptr d, const char *ready)
{
    void *held, *mapped, *more;
    CUstream s;

    CHECK(cuMemAllocHost(&held, VICTIM_BYTES));
    CHECK(cuMemHostAlloc(&mapped, VICTIM_BYTES, CU_MEMHOSTALLOC_PORTABLE));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(held, 0x3c, VICTIM_BYTES);
    touch(ready);
    for (;;) {
        CHECK(cuMemcpyHtoDAsync(d, held, VICTIM_BYTES, s));
        CHECK(cuMemcpyDtoHAsync(mapped, d, VICTIM_BYTES, s));
        CHECK(cuMemAllocHost(&more, 1u << 20));
        CHECK(cuMemcpyHtoDAsync(d, more, 1u << 20, s));
        CHECK(cuStreamSynchronize(s));
        CHECK(cuMemFreeHost(more));
    }
}

static int victim(const char *mode, const char *ready, const char *fatbin)
{
    CUdeviceptr d;
    CUmodule m;

    if (start() != 0)
        return 1;
    CHECK(cuMemAlloc(&d, VICTIM_BYTES));
    if (strcmp(mode, "copy") == 0)
        return copy_loop(d, ready);
    if (strcmp(mode, "pinned") == 0)
        return pinned_loop(d, ready);
    CHECK(cuModuleLoad(&m, fatbin));
    if (strcmp(mode, "launch") == 0)
        return launch_loop(d, m, ready);
    if (strcmp(mode, "capture") == 0)
        return capture_loop(d, m, ready);
    fprintf(stderr, "soak_tenant: no mode %s\n", mode);
    return 2;
}

static int meminfo(void)
{
    size_t free_b, total_b;

    if (start() != 0)
        return 1;
    CHECK(cuMemGetInfo(&free_b, &total_b));
    printf("%zu %zu\n", free_b, total_b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "meminfo") == 0)
        return meminfo();
    if (argc == 4 && strcmp(argv[1], "good") == 0)
        return good(argv[2], argv[3]);
    if (argc == 4)
        return victim(argv[1], argv[2], argv[3]);
    fprintf(stderr, "usage: soak_tenant good READY STOP | copy|launch|capture|pinned READY FATBIN "
                    "| meminfo\n");
    return 2;
}
