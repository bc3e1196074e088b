/*
 * One line per event on stderr (or the descriptor set), prefixed with the program and, when known, the tenant.
 * DETSHARE_LOG=debug|info|warn|error picks the threshold (default info).  Never stdout:
 * the client lives inside applications whose stdout is theirs.
 */
#ifndef DS_LOG_H
#define DS_LOG_H

enum ds_log_level { DS_LOG_DEBUG, DS_LOG_INFO, DS_LOG_WARN, DS_LOG_ERROR };

/* Set the prefix ("detshare-server", "executor[alice]") used by later lines; copied. */
void ds_log_set_prefix(const char *prefix);

/* Write later lines to fd instead of stderr (fd 2), which the executor gives to its
 * tenant's device output (server/exec/devout.h).  The descriptor stays the caller's. */
void ds_log_set_fd(int fd);

/* 1 when lines at `level` are printed. */
int ds_log_enabled(enum ds_log_level level);

void ds_log(enum ds_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define ds_debug(...) ds_log(DS_LOG_DEBUG, __VA_ARGS__)
#define ds_info(...) ds_log(DS_LOG_INFO, __VA_ARGS__)
#define ds_warn(...) ds_log(DS_LOG_WARN, __VA_ARGS__)
#define ds_error(...) ds_log(DS_LOG_ERROR, __VA_ARGS__)

#endif
