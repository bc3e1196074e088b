/* The device view the cuda backend gives every tenant (ds__cuda_describe), from a driver
 * whose every attribute is 1, as a Grace-Hopper or an HMM host answers the host-memory
 * ones: the device's own attributes pass through, and what a tenant cannot have reads 0
 * (docs/memory.md, "What the device attributes say"). No GPU: the driver is a fake. */
#include "cuda_backend.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static CUresult attribute(int *v, CUdevice_attribute a, CUdevice dev)
{
    (void)a;
    (void)dev;
    *v = 1;
    return CUDA_SUCCESS;
}

static CUresult name(char *s, int len, CUdevice dev)
{
    (void)dev;
    strncpy(s, "fake", (size_t)len);
    return CUDA_SUCCESS;
}

static CUresult uuid(CUuuid *u, CUdevice dev)
{
    (void)dev;
    memset(u, 7, sizeof(*u));
    return CUDA_SUCCESS;
}

static CUresult total(size_t *bytes, CUdevice dev)
{
    (void)dev;
    *bytes = 1u << 30;
    return CUDA_SUCCESS;
}

static CUresult version(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}

Test(cuda_describe, a_tenant_sees_no_reach_into_its_pageable_memory_nor_host_atomics)
{
    struct ds_backend *b = calloc(1, sizeof(*b));
    struct ds_device_view *v = calloc(1, sizeof(*v));
    const CUdevice_attribute none[] = {
        CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
        CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
        CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED,
        CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
        CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
        CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES,
    };
    const CUdevice_attribute kept[] = {
        CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
        CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
        CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    };

    cr_assert_not_null(b);
    cr_assert_not_null(v);
    b->cu.cuDeviceGetAttribute = attribute;
    b->cu.cuDeviceGetName = name;
    b->cu.cuDeviceGetUuid = uuid;
    b->cu.cuDeviceTotalMem = total;
    b->cu.cuDriverGetVersion = version;
    ds__cuda_describe(b, v);
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
        cr_expect_eq(v->attrs[none[i]], 0, "attribute %d reads %d", (int)none[i],
                     v->attrs[none[i]]);
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        cr_expect_eq(v->attrs[kept[i]], 1, "attribute %d reads %d, not the device's",
                     (int)kept[i], v->attrs[kept[i]]);
    cr_expect_str_eq(v->name, "fake");
    free(v);
    free(b);
}
