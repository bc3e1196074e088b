/*
 * The MPS control daemon the server owns for its GPU.  Executors are separate
 * processes; without MPS their kernels take turns on the GPU (time-slicing) instead of
 * running side by side on different SMs.
 *
 * `start` (the default) runs nvidia-cuda-mps-control in the foreground as the server's
 * child, with a private pipe and log directory (DIR/pipe, DIR/log; DIR defaults to
 * $XDG_RUNTIME_DIR or /tmp, plus detshare-mps-UID-gpuN), and points every executor at
 * it through CUDA_MPS_PIPE_DIRECTORY.  A lock file makes the directory one server's; a
 * daemon an earlier, killed server left behind is stopped before a new one starts.
 * Daemons of named groups (ds_mps_group_start) live under the same directory.
 * `external` uses whatever daemon the environment names; `off` hides every daemon from
 * the executors, which then time-slice.  Under `start`, an executor pointed at DIR/none
 * instead is no MPS client: a tenant of a fault domain of its own.
 *
 * DETSHARE_MPS_CONTROL names the control program (default nvidia-cuda-mps-control,
 * looked up in PATH).  Must be called while the process has one thread.
 */
#ifndef DS_MPS_H
#define DS_MPS_H

#include <sys/types.h>

enum ds_mps_mode { DS_MPS_START, DS_MPS_EXTERNAL, DS_MPS_OFF };

struct ds_mps {
    enum ds_mps_mode mode;
    pid_t daemon; /* our child, 0 when none */
    int lock_fd;
    char dir[200];
    char pipe[256];
    char none[256]; /* DIR/none: an empty pipe directory, for executors of their own
                     * fault domain (start and off) */
};

/* Parse start|external|off.  Returns 0, or DS_EINVAL. */
int ds_mps_parse(const char *s, enum ds_mps_mode *mode);

/* Bring MPS to `mode` for GPU `gpu` (dir: NULL for the default).  Returns 0, or a DS_E*
 * code after logging why. */
int ds_mps_start(struct ds_mps *m, enum ds_mps_mode mode, int gpu, const char *dir);

/* Stop the daemon started here (asking it to quit, then by signal) and wait for it. */
void ds_mps_stop(struct ds_mps *m);

/* A named group's MPS control daemon (isolation=group:NAME, docs/reliability.md): the
 * control process starts it when the group's first tenant comes, with pipes and logs of
 * its own under the server's directory (DIR/group-NAME/pipe, DIR/group-NAME/log), and
 * points the group's executors at its pipe.  Its clients share their faults with each
 * other only, and take turns on the GPU with other daemons' clients. */
struct ds_mps_group {
    pid_t daemon; /* our child, 0 when none */
    char dir[248];
    char pipe[264];
};

/* Start group `name`'s daemon under the server's MPS directory `dir` (ds_mps, dir),
 * without waiting for it to take clients (ds_mps_group_ready).  A daemon a killed
 * server left for the group was stopped by ds_mps_start.  The caller reaps the daemon
 * (it is a child of this process).  Returns 0, or a DS_E* code after logging why. */
int ds_mps_group_start(struct ds_mps_group *g, const char *dir, const char *name);

/* 1 once g's daemon takes connections on its control socket, else 0. */
int ds_mps_group_ready(const struct ds_mps_group *g);

/* Ask g's daemon to quit and wait for it (then by signal), unless it is gone (daemon
 * 0); its clients must have left. */
void ds_mps_group_stop(struct ds_mps_group *g);

/* One word for logs and status: "started", "external" or "off". */
const char *ds_mps_mode_name(enum ds_mps_mode mode);

#endif
