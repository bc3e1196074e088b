#include "ds_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char prefix[96] = "detshare";
static int threshold = -1;
static int log_fd = 2;

void ds_log_set_prefix(const char *p)
{
    snprintf(prefix, sizeof(prefix), "%s", p);
}

static int parse_threshold(void)
{
    const char *v = getenv("DETSHARE_LOG");

    if (v == NULL)
        return DS_LOG_INFO;
    if (strcmp(v, "debug") == 0)
        return DS_LOG_DEBUG;
    if (strcmp(v, "warn") == 0)
        return DS_LOG_WARN;
    if (strcmp(v, "error") == 0)
        return DS_LOG_ERROR;
    return DS_LOG_INFO;
}

void ds_log_set_fd(int fd)
{
    log_fd = fd;
}

int ds_log_enabled(enum ds_log_level level)
{
    if (threshold < 0)
        threshold = parse_threshold();
    return (int)level >= threshold;
}

void ds_log(enum ds_log_level level, const char *fmt, ...)
{
    static const char *const tags[] = { "debug", "info", "warn", "error" };
    char line[1024];
    struct timespec ts;
    struct tm tm;
    va_list ap;
    int n;

    if (!ds_log_enabled(level))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld %s %s: ", tm.tm_hour, tm.tm_min,
                 tm.tm_sec, ts.tv_nsec / 1000000, prefix, tags[level]);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line) - 1)
        vsnprintf(line + n, sizeof(line) - 1 - (size_t)n, fmt, ap);
    va_end(ap);
    n = (int)strlen(line);
    line[n++] = '\n';
    /* One write per line keeps lines from several processes whole; a log that cannot be
     * written has nowhere to say so. */
    (void)!write(log_fd, line, (size_t)n);
}
