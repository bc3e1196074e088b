#include "podsync.h"

#include "log.h"
#include "podresources/v1/api.grpc.pb.h"

#include <grpcpp/grpcpp.h>

namespace dsk {

PodSync::PodSync(const Options &o, Allocations &a)
    : o_(o), a_(a), thread_(new std::thread([this] { run(); }))
{
}

PodSync::~PodSync()
{
    stop();
    thread_->join();
    delete thread_;
}

void PodSync::stop()
{
    std::lock_guard<std::mutex> g(lock_);

    stopping_ = true;
    wake_.notify_all();
}

bool PodSync::list(Holders &out)
{
    auto channel = grpc::CreateChannel("unix:" + o_.pod_resources,
                                       grpc::InsecureChannelCredentials());
    auto stub = v1::PodResourcesLister::NewStub(channel);
    v1::ListPodResourcesRequest req;
    v1::ListPodResourcesResponse res;
    grpc::ClientContext ctx;

    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::Status st = stub->List(&ctx, req, &res);
    if (!st.ok()) {
        if (!failing_)
            warn("PodResources List on " + o_.pod_resources + " failed (" + st.error_message() +
                 "): allocations are kept until it answers");
        failing_ = true;
        return false;
    }
    if (failing_)
        info("PodResources answers again");
    failing_ = false;
    for (const auto &pod : res.pod_resources())
        for (const auto &c : pod.containers())
            for (const auto &d : c.devices())
                if (d.resource_name() == o_.resource)
                    for (const auto &id : d.device_ids())
                        out[id] = pod.namespace_() + "/" + pod.name();
    return true;
}

void PodSync::run()
{
    std::unique_lock<std::mutex> g(lock_);

    while (!stopping_) {
        Holders h;

        g.unlock();
        if (list(h))
            a_.reconcile(h);
        g.lock();
        wake_.wait_for(g, std::chrono::milliseconds(o_.sync_ms), [&] { return stopping_; });
    }
}

} // namespace dsk
