/*
 * Which addresses are this tenant's device memory, as far as the client has seen.
 * Used only to tell device from host pointers in cuMemcpy/cuMemcpyAsync; the executor
 * remains the authority and checks every address itself.
 */
#ifndef DS_MEM_H
#define DS_MEM_H

#include <stdint.h>

/* 1 when p lies in device memory this client allocated and has not freed. */
int ds__mem_is_device(uint64_t p);

/* Note [base, base+size) as device memory (an allocation, a module's global). */
void ds__mem_remember(uint64_t base, uint64_t size);

#endif
