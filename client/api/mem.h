/*
 * Which addresses are this tenant's device memory, as far as the client has seen, and
 * on which device.  Used to tell device from host pointers in cuMemcpy/cuMemcpyAsync and
 * to send a call naming a device address to that device's server; the executor remains
 * the authority and checks every address itself.
 */
#ifndef DS_MEM_H
#define DS_MEM_H

#include <stdint.h>

/* 1 when p lies in device memory this client allocated and has not freed. */
int ds__mem_is_device(uint64_t p);

/* 1 when p lies in device memory this client allocated and [p, p+n) runs past the end
 * of that range: a copy the executor would refuse, refused before any of it is sent. */
int ds__mem_runs_past(uint64_t p, uint64_t n);

/* Note [base, base+size) as device memory (an allocation, a module's global, a VMM
 * mapping). */
void ds__mem_remember(uint64_t base, uint64_t size);

/* The same for an allocation of memory pool `pool` (its handle), which pointer
 * attributes name. */
void ds__mem_remember_pool(uint64_t base, uint64_t size, uint64_t pool);

/* Forget the device range that starts at base, if any (an allocation freed), and tell
 * the drop hook, if one is set. */
void ds__mem_drop(uint64_t base);

/* Have fn told of every allocation dropped from now on: its base and device.  Set by
 * whoever keeps something of allocations (peer.c's mappings on other devices), which
 * this module must not call by name: they look allocations up here. */
typedef void (*ds_mem_drop_hook)(uint64_t base, int dev);
void ds__mem_set_drop_hook(ds_mem_drop_hook fn);

/* Forget every device range that overlaps [base, base+size) (VMM mappings unmapped). */
void ds__mem_forget(uint64_t base, uint64_t size);

/* 1 when p lies in a device range, with *base and *size the range, *pool its memory pool
 * (0 when none) and *sync_memops what cuPointerSetAttribute last set on it. */
int ds__mem_range(uint64_t p, uint64_t *base, uint64_t *size, uint64_t *pool,
                  unsigned *sync_memops);

/* Set (on != 0) or clear CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the device range holding p;
 * 0 when p lies in none. */
int ds__mem_set_sync_memops(uint64_t p, int on);

/* The device whose server made the range holding p (route.h), or -1 when p lies in
 * none: the route of a call that names p. */
int ds__mem_device_of(uint64_t p);

#endif
