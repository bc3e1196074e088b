/* Criterion checks of NVML calls for the tests linked to detshare's libnvidia-ml
 * (test_nvml.c, test_nvml_multi.c): the call's text and NVML's name for what it gave. */
#ifndef DS_NVML_CHECK_H
#define DS_NVML_CHECK_H

#include <criterion/criterion.h>
#include <nvml.h>

#define NV_OK(call)                                                                    \
    do {                                                                               \
        nvmlReturn_t rc_ = (call);                                                     \
        cr_assert_eq(rc_, NVML_SUCCESS, "%s -> %s", #call, nvmlErrorString(rc_));      \
    } while (0)

#define NV_IS(call, want)                                                              \
    do {                                                                               \
        nvmlReturn_t rc_ = (call);                                                     \
        cr_assert_eq(rc_, (want), "%s -> %s, expected %s", #call, nvmlErrorString(rc_), \
                     nvmlErrorString(want));                                           \
    } while (0)

#endif
