#include "log.h"

#include <cstdio>
#include <ctime>
#include <mutex>

namespace dsk {

namespace {

std::mutex lock;

void line(const char *level, const std::string &msg)
{
    std::lock_guard<std::mutex> g(lock);
    struct timespec ts;
    struct tm tm;
    char when[32];

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    std::fprintf(stderr, "%s.%03ldZ detshare-device-plugin %s: %s\n", when,
                 ts.tv_nsec / 1000000, level, msg.c_str());
}

} // namespace

void info(const std::string &msg) { line("info", msg); }
void warn(const std::string &msg) { line("warning", msg); }
void error(const std::string &msg) { line("error", msg); }

} // namespace dsk
