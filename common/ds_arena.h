/*
 * The host arena: memory a local tenant shares with its executor, for page-locked host
 * memory that the device must reach (mapped memory).  The client creates it as a memfd
 * and hands the descriptor over once, right after connecting and before any RPC, as one
 * marker byte with the descriptor attached (SCM_RIGHTS).  An RPC record never starts
 * with a marker, so the executor can tell by peeking at the first byte (ds_fd_peek).
 */
#ifndef DS_ARENA_H
#define DS_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define DS_ARENA_MARKER 'A'
#define DS_ARENA_SIZE (16ull << 30) /* address space reserved; memory only as used */

/* Send fd over socket sock as the arena announcement.  Returns 0 or DS_EIO. */
int ds_arena_send(int sock, int fd);

#endif
