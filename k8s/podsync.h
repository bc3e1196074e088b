// Every o.sync_ms, list the kubelet's PodResources and reconcile the allocations with
// what pods hold (allocations.h), in a thread of its own until stop().
#ifndef DSK_PODSYNC_H
#define DSK_PODSYNC_H

#include "allocations.h"
#include "options.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace dsk {

class PodSync {
public:
    PodSync(const Options &o, Allocations &a);
    ~PodSync();
    void stop();

private:
    void run();
    // Which pod holds each of our replicas; false (logged once per failure spell) when
    // the kubelet did not answer.
    bool list(Holders &out);
    const Options &o_;
    Allocations &a_;
    std::mutex lock_;
    std::condition_variable wake_;
    bool stopping_ = false;
    bool failing_ = false;
    std::thread *thread_;
};

} // namespace dsk

#endif
