/*
 * SM groups, as both the control process (placement, policies) and the executors
 * (binding) name them: a device's SMs handed out in aligned groups, and a set of groups
 * as a 64-bit mask (bit i: group i; 0: the whole device).
 */
#ifndef DS_GROUPS_H
#define DS_GROUPS_H

#include <stddef.h>
#include <stdint.h>

/* How a device's SMs are handed out: in `count` aligned groups of `size` SMs (an H100's
 * 132 SMs: 16 groups of 8, and 4 SMs no partition uses).  The same group index names
 * the same SMs in every executor, MPS clients included. */
struct ds_sm_groups {
    unsigned sms;   /* the whole device */
    unsigned size;  /* SMs per group */
    unsigned count; /* at most 64 */
};

/* Writes "SM groups 0-7 (64 SMs)", "the whole device" or "SM groups 0 2-3 (24 SMs)" for
 * `groups` of group_size SMs each into buf, truncated to len bytes. */
void ds_groups_format(uint64_t groups, unsigned group_size, char *buf, size_t len);

#endif
