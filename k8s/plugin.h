// The DevicePlugin service the kubelet calls on this plugin's socket.
#ifndef DSK_PLUGIN_H
#define DSK_PLUGIN_H

#include "allocations.h"
#include "devices.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "options.h"

namespace dsk {

class Plugin final : public v1beta1::DevicePlugin::Service {
public:
    Plugin(const Options &o, Devices &d, Allocations &a) : o_(o), d_(d), a_(a) {}

    grpc::Status GetDevicePluginOptions(grpc::ServerContext *, const v1beta1::Empty *,
                                        v1beta1::DevicePluginOptions *out) override;
    grpc::Status ListAndWatch(grpc::ServerContext *ctx, const v1beta1::Empty *,
                              grpc::ServerWriter<v1beta1::ListAndWatchResponse> *w) override;
    grpc::Status GetPreferredAllocation(grpc::ServerContext *,
                                        const v1beta1::PreferredAllocationRequest *req,
                                        v1beta1::PreferredAllocationResponse *out) override;
    grpc::Status Allocate(grpc::ServerContext *, const v1beta1::AllocateRequest *req,
                          v1beta1::AllocateResponse *out) override;
    grpc::Status PreStartContainer(grpc::ServerContext *, const v1beta1::PreStartContainerRequest *,
                                   v1beta1::PreStartContainerResponse *) override;

private:
    grpc::Status allocate_one(const v1beta1::ContainerAllocateRequest &req,
                              v1beta1::ContainerAllocateResponse *out);
    const Options &o_;
    Devices &d_;
    Allocations &a_;
};

// The IDs to prefer from `available`: all of must_include, then as many as `size` asks
// from the GPU that must_include's first lies on (else the one with the most available),
// then from the others.  Pure, for the kubelet's GetPreferredAllocation.
std::vector<std::string> prefer(const Devices &d, const std::vector<std::string> &available,
                                const std::vector<std::string> &must_include, size_t size);

} // namespace dsk

#endif
