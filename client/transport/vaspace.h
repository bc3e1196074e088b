/*
 * The executor's device address space, kept free in the tenant's process.  A CUDA driver
 * reserves the address space its device addresses come from in the process it runs in,
 * so natively a program's own mappings never land there and no device address is ever
 * one of its host addresses.  Here the driver runs in the executor: the hello's answer
 * lists the executor's reservations, and the client reserves the same ranges in the
 * tenant's process (docs/memory.md).
 */
#ifndef DS_CLIENT_VASPACE_H
#define DS_CLIENT_VASPACE_H

#include "detshare.h"

/* Reserve each of the n ranges in this process (no access, no memory behind it), never
 * replacing anything: a range partly taken is reserved around what is there.  Ranges
 * that are not whole pages of a user address space, and those past half of it in all,
 * are skipped.  What is skipped or taken is logged at debug level; nothing fails. */
void ds__vaspace_reserve(const ds_va_range *v, unsigned n);

#endif
