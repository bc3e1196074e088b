#include "ds_arena.h"

#include "ds_fdpass.h"

int ds_arena_send(int sock, int fd)
{
    return ds_fd_send(sock, DS_ARENA_MARKER, fd);
}
