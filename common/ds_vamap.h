/*
 * A process's mappings, as /proc/PID/maps lists them.  A device driver holds the address
 * space its device addresses come from as large reservations of the process it runs in
 * (private anonymous mappings with no access); an executor lists its own for its tenant
 * at hello, and the client reserves the same ranges in the tenant's process
 * (docs/memory.md, "Device addresses and the tenant's address space").
 */
#ifndef DS_VAMAP_H
#define DS_VAMAP_H

#include <stdint.h>

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

#endif
