/* The executor's device address space and the tenant's (docs/memory.md): the executor's
 * reservations are made below the room a tenant's memory needs, so pages a program mapped
 * before connecting register at their own address; what the executor holds reserved is
 * reserved in the tenant too, so no device address is a host address of the tenant's, and
 * memory the tenant maps asking for a device address lands elsewhere and registers at its
 * own address; pages whose address is taken in the executor register at the address the
 * device reaches them at, with a warning. */
#define _GNU_SOURCE /* MAP_FIXED_NOREPLACE */
#include "ds_test.h"
#include "ds_vamap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096

static struct ds_test_server srv;

static void start(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
}

TestSuite(va, .init = start, .fini = stop, .timeout = 120);

/* The executor of the tenant that connected last, from the server's log. */
static int executor_pid(void)
{
    char line[512];
    int pid = 0;
    FILE *f = fopen(srv.log, "r");

    cr_assert_not_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char *p = strstr(line, "(executor pid ");

        if (p != NULL)
            pid = atoi(p + strlen("(executor pid "));
    }
    fclose(f);
    cr_assert_gt(pid, 0, "no executor named in the server's log");
    return pid;
}

/* The walk over this process's mappings that finds how far from `at` they leave no hole. */
struct cover {
    uint64_t at, end;
};

static int covers(const struct ds_vamap_entry *e, void *arg)
{
    struct cover *c = arg;

    if (e->base + e->size <= c->at)
        return 0;
    if (e->base > c->at)
        return 1;
    c->at = e->base + e->size;
    return c->at >= c->end;
}

/* Whether every page of [base, base+size) is mapped in this process, by anything. */
static int covered(uint64_t base, uint64_t size)
{
    struct cover c = { base, base + size };

    cr_assert_geq(ds_vamap_each(0, covers, &c), 0);
    return c.at >= c.end;
}

/* A program's memory made before it connects: 0 when it registers at its own address. */
static int registers_in_place(void)
{
    unsigned char *p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CUdeviceptr dev = 0;

    if (p == MAP_FAILED || ds_test_connect() != CUDA_SUCCESS)
        return 1;
    if (cuMemHostRegister(p, 3 * PAGE, CU_MEMHOSTREGISTER_DEVICEMAP) != CUDA_SUCCESS)
        return 2;
    if (cuMemHostGetDevicePointer(&dev, p, 0) != CUDA_SUCCESS ||
        dev != (CUdeviceptr)(uintptr_t)p)
        return 3;
    return cuMemHostUnregister(p) == CUDA_SUCCESS ? 0 : 4;
}

/* Where the executor's reservations land is chance: several tenants, one after another,
 * each with fresh address spaces on both sides. */
Test(va, memory_mapped_before_connecting_registers_at_its_own_address)
{
    for (int i = 0; i < 8; i++) {
        int status = 0;
        pid_t pid = fork();

        cr_assert_geq(pid, 0);
        if (pid == 0)
            _exit(registers_in_place());
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "tenant %d: status %#x (1: no connection, 2: refused, 3: another address)",
                  i, status);
    }
}

/* Only the large ranges: the executor's smaller ones (glibc heaps of threads started
 * after the hello) are not its driver's. */
Test(va, the_executors_reserved_address_space_is_reserved_in_the_tenant)
{
    struct ds_vamap_range v[64];
    int n;

    ds_test_ctx();
    n = ds_vamap_reserved(executor_pid(), 1ull << 30, v, 64);
    cr_assert_gt(n, 0, "the executor holds no reserved address space");
    for (int i = 0; i < n; i++)
        cr_assert(covered(v[i].base, v[i].size),
                  "the executor's reserved range %#llx-%#llx is not reserved in the tenant",
                  (unsigned long long)v[i].base, (unsigned long long)(v[i].base + v[i].size));
}

Test(va, a_device_address_is_no_host_address_of_the_tenant)
{
    CUdeviceptr d;
    void *p;

    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 1 << 20));
    errno = 0;
    p = mmap((void *)(uintptr_t)d, PAGE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    cr_assert_eq(p, MAP_FAILED, "the tenant mapped memory of its own at device address %#llx",
                 (unsigned long long)d);
    cr_assert_eq(errno, EEXIST);
    CU_OK(cuMemFree(d));
}

/* Natively the driver's reservation is in the program's own process: asking mmap for a
 * device address gets memory elsewhere, which registers at its own address. */
Test(va, memory_mapped_asking_for_a_device_address_registers_at_its_own_address)
{
    CUdeviceptr d, dev = 0;
    unsigned char *p;

    ds_test_ctx();
    CU_OK(cuMemAlloc(&d, 1 << 20));
    CU_OK(cuMemFree(d));
    p = mmap((void *)(uintptr_t)d, 3 * PAGE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    memset(p, 0x5a, 3 * PAGE);
    CU_OK(cuMemHostRegister(p + 16, 3000, CU_MEMHOSTREGISTER_DEVICEMAP));
    CU_OK(cuMemHostGetDevicePointer(&dev, p + 16, 0));
    cr_assert_eq(dev, (CUdeviceptr)(uintptr_t)(p + 16), "device %#llx, host %p",
                 (unsigned long long)dev, (void *)(p + 16));
    CU_OK(cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                (CUdeviceptr)(uintptr_t)(p + 24)));
    cr_assert_eq(dev, (CUdeviceptr)(uintptr_t)(p + 24));
    CU_OK(cuMemHostUnregister(p + 16));
    munmap(p, 3 * PAGE);
}

/* Map a page of this process where the executor has a mapping that is free here. */
static int take_one(const struct ds_vamap_entry *e, void *arg)
{
    void *p;

    if (e->base >= DS_VAMAP_USER_END)
        return 0;
    p = ds_vamap_at(e->base, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    *(unsigned char **)arg = p;
    return 1;
}

/* The device reaches such pages only at another address: the registration stands, for
 * copies and for kernels handed the device pointer, which the program is told, and the
 * server warns, naming the address, since a kernel handed the host pointer would not find
 * them. */
Test(va, pages_whose_address_is_taken_in_the_executor_register_elsewhere_with_a_warning)
{
    unsigned char *p = NULL, back[PAGE];
    CUdeviceptr dev = 0;
    char want[96];

    ds_test_ctx();
    cr_assert_eq(ds_vamap_each(executor_pid(), take_one, &p), 1,
                 "every mapping of the executor is taken in the tenant too");
    memset(p, 0x77, PAGE);
    CU_OK(cuMemHostRegister(p, PAGE, CU_MEMHOSTREGISTER_DEVICEMAP));
    CU_OK(cuMemHostGetDevicePointer(&dev, p, 0));
    cr_assert_neq(dev, (CUdeviceptr)(uintptr_t)p);
    CU_OK(cuMemcpyDtoH(back, dev, PAGE));
    cr_assert_arr_eq(back, p, PAGE, "the device pointer does not reach the pages");
    snprintf(want, sizeof(want), "the tenant's address %#llx is taken in its executor",
             (unsigned long long)(uintptr_t)p);
    cr_assert(ds_test_log_has(&srv, want), "no warning naming the address");
    CU_OK(cuMemHostUnregister(p));
    munmap(p, PAGE);
}
