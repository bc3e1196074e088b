/*
 * The executor's fd 1 and 2 as its tenant's stdout and stderr (common/ds_devout.h), so
 * that what the tenant's kernels print reaches the tenant, and the executor's own log
 * as the server's stderr still.
 *
 * A tenant that sent no descriptors (a remote one) cannot be written to that way: at its
 * hello, its device output is turned into log lines tagged with its name
 * (ds__devout_log_untaken), rather than left to run into the server's own output.  Writes to a descriptor whose
 * reader has gone fail with EPIPE (the executor ignores SIGPIPE); writes to a full pipe
 * nobody reads block the executor, as they would block the tenant natively.
 */
#ifndef DS_EXEC_DEVOUT_H
#define DS_EXEC_DEVOUT_H

/* Move the log off fd 2 onto a descriptor of its own (close-on-exec), before fd 2 can be
 * given away.  Returns 0, or DS_EIO when no descriptor is left (the log then stays on
 * fd 2 and the tenant's stderr is not taken). */
int ds__devout_init(void);

/* 1 when tag announces a tenant's output descriptor. */
int ds__devout_is_marker(char tag);

/* Put descriptor fd, announced by tag, on fd 1 or 2; fd is closed either way.
 * Returns 0, or DS_EIO when it cannot (the previous descriptor stays). */
int ds__devout_take(char tag, int fd);

/* Whichever of fd 1 and 2 the tenant did not hand over, from now on into a pipe that a
 * thread of the executor turns into "device output: ..." log lines (a line at a time, at
 * most DS_DEVOUT_LINE bytes).  Returns 0, or DS_EIO when it cannot (fd 1 and 2 then stay
 * the server's). */
#define DS_DEVOUT_LINE 512
int ds__devout_log_untaken(void);

/* Write out what the driver left in the executor's stdio buffers, before a reply tells
 * the tenant that a synchronisation is over. */
void ds__devout_flush(void);

#endif
