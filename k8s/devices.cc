#include "devices.h"

#include "admin.h"
#include "log.h"

#include <chrono>

namespace dsk {

Devices::Devices(const Options &o)
{
    for (size_t g = 0; g < o.gpus.size(); g++)
        for (int r = 0; r < o.replicas; r++)
            replicas_.push_back({ o.gpus[g].name + "-r" + std::to_string(r), g, false });
}

std::vector<Replica> Devices::list(uint64_t *version) const
{
    std::lock_guard<std::mutex> g(lock_);

    *version = version_;
    return replicas_;
}

bool Devices::wait(uint64_t seen, int timeout_ms) const
{
    std::unique_lock<std::mutex> g(lock_);

    return changed_.wait_for(g, std::chrono::milliseconds(timeout_ms),
                             [&] { return version_ != seen || stopping_; }) &&
           version_ != seen;
}

void Devices::set_health(size_t gpu, bool healthy)
{
    std::lock_guard<std::mutex> g(lock_);
    bool changed = false;

    for (Replica &r : replicas_)
        if (r.gpu == gpu && r.healthy != healthy) {
            r.healthy = healthy;
            changed = true;
        }
    if (changed) {
        version_++;
        changed_.notify_all();
    }
}

int Devices::gpu_of(const std::string &id) const
{
    std::lock_guard<std::mutex> g(lock_);

    for (const Replica &r : replicas_)
        if (r.id == id)
            return (int)r.gpu;
    return -1;
}

void Devices::stop()
{
    std::lock_guard<std::mutex> g(lock_);

    stopping_ = true;
    changed_.notify_all();
}

HealthWatch::HealthWatch(const Options &o, Devices &d)
    : o_(o), d_(d), known_(o.gpus.size(), -1), thread_(new std::thread([this] { run(); }))
{
}

HealthWatch::~HealthWatch()
{
    stop();
    thread_->join();
    delete thread_;
}

void HealthWatch::stop()
{
    std::lock_guard<std::mutex> g(lock_);

    stopping_ = true;
    wake_.notify_all();
}

void HealthWatch::run()
{
    std::unique_lock<std::mutex> g(lock_);

    while (!stopping_) {
        g.unlock();
        for (size_t i = 0; i < o_.gpus.size(); i++) {
            std::string why = admin_status(o_.gpus[i].admin);
            int up = why.empty();

            if (up != known_[i])
                (up ? info : warn)("GPU " + o_.gpus[i].name + ": its server " +
                                   (up ? "answers: replicas healthy" : "does not answer (" + why +
                                                                           "): replicas unhealthy"));
            known_[i] = up;
            d_.set_health(i, up);
        }
        g.lock();
        wake_.wait_for(g, std::chrono::milliseconds(o_.health_ms), [&] { return stopping_; });
    }
}

} // namespace dsk
