/*
 * A process's address space: its mappings, as /proc/PID/maps lists them, and mappings
 * made at an exact address.  A device driver holds the address space its device addresses
 * come from as large reservations of the process it runs in (private anonymous mappings
 * with no access); an executor lists its own for its tenant at hello, and the client
 * reserves the same ranges in the tenant's process (docs/memory.md, "Device addresses and
 * the tenant's address space").  The executor maps a tenant's arena, and the parts of it
 * the tenant registers, at the tenant's own addresses when they are free there.
 */
#ifndef DS_VAMAP_H
#define DS_VAMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The end of a user address space on x86-64 and arm64 (four-level page tables): an
 * address from a tenant at or past it is none of its own. */
#define DS_VAMAP_USER_END (1ull << 47)

struct ds_vamap_range {
    uint64_t base, size;
};

/* One mapping: [base, base+size), its permissions as the maps file spells them ("rw-p"),
 * its file's inode (0 for none) and its path ("" for none). */
struct ds_vamap_entry {
    uint64_t base, size;
    char perms[5];
    uint64_t inode;
    const char *path;
};

/* Call fn(entry, arg) for each mapping of process pid (0: this process), in address
 * order, from a copy of the maps read whole before the first call, so that fn may map and
 * unmap.  Stops at fn's first nonzero return and returns it; otherwise 0, or DS_EIO when
 * the maps cannot be read and DS_ENOMEM. */
int ds_vamap_each(int pid, int (*fn)(const struct ds_vamap_entry *e, void *arg), void *arg);

/* The ranges process pid (0: this process) holds as reserved address space: private
 * anonymous mappings with no access and no name, neighbours merged, each of min_size
 * bytes or more.  Writes up to max of them into out (the largest when there are more), in
 * address order, and returns how many; or DS_EIO, DS_ENOMEM as ds_vamap_each. */
int ds_vamap_reserved(int pid, uint64_t min_size, struct ds_vamap_range *out, int max);

/* Nonzero when [base, base+size) is whole pages of a user address space: not empty, not
 * at address 0, and below DS_VAMAP_USER_END. */
int ds_vamap_user_range(uint64_t base, uint64_t size);

/* Map size bytes exactly at base, as mmap(2) with prot, flags (without any MAP_FIXED
 * flag), fd and offset, replacing nothing of this process: the mapping (base itself), or
 * MAP_FAILED when some of the range is taken or the kernel refused.  The caller munmaps
 * it. */
void *ds_vamap_at(uint64_t base, size_t size, int prot, int flags, int fd, off_t offset);

#endif
