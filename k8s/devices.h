// The replicas this plugin advertises: --replicas per GPU, each healthy while its GPU's
// server answers on its admin socket.  ListAndWatch waits here for changes.
#ifndef DSK_DEVICES_H
#define DSK_DEVICES_H

#include "options.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

namespace dsk {

struct Replica {
    std::string id; // GPU name, "-r", index: gpu0-r3
    size_t gpu;     // index into Options::gpus
    bool healthy;
};

class Devices {
public:
    explicit Devices(const Options &o);

    // Every replica, and the version of that list (it grows with each change).
    std::vector<Replica> list(uint64_t *version) const;
    // Wait until the version is past `seen`, or timeout_ms passes or stop() is called.
    // Returns true when it changed.
    bool wait(uint64_t seen, int timeout_ms) const;
    // Set GPU g's health; a change bumps the version and wakes the waiters.
    void set_health(size_t g, bool healthy);
    // The GPU of replica `id`, or -1 for an ID this plugin never advertised.
    int gpu_of(const std::string &id) const;
    void stop();

private:
    mutable std::mutex lock_;
    mutable std::condition_variable changed_;
    std::vector<Replica> replicas_;
    uint64_t version_ = 1;
    bool stopping_ = false;
};

// Ask each GPU's admin socket every o.health_ms, in a thread of its own, until stop():
// a server that does not answer makes its replicas unhealthy, one that answers again
// healthy.  Logs each change.
class HealthWatch {
public:
    HealthWatch(const Options &o, Devices &d);
    ~HealthWatch();
    void stop();

private:
    void run();
    const Options &o_;
    Devices &d_;
    std::mutex lock_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::vector<int> known_; // -1: not asked yet, 0: down, 1: up
    std::thread *thread_;
};

} // namespace dsk

#endif
