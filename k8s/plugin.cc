#include "plugin.h"

#include "log.h"

#include <algorithm>
#include <map>
#include <set>

namespace dsk {

grpc::Status Plugin::GetDevicePluginOptions(grpc::ServerContext *, const v1beta1::Empty *,
                                            v1beta1::DevicePluginOptions *out)
{
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(true);
    return grpc::Status::OK;
}

grpc::Status Plugin::ListAndWatch(grpc::ServerContext *ctx, const v1beta1::Empty *,
                                  grpc::ServerWriter<v1beta1::ListAndWatchResponse> *w)
{
    uint64_t seen = 0;

    for (;;) {
        v1beta1::ListAndWatchResponse res;

        for (const Replica &r : d_.list(&seen)) {
            v1beta1::Device *dev = res.add_devices();

            dev->set_id(r.id);
            dev->set_health(r.healthy ? "Healthy" : "Unhealthy");
        }
        if (!w->Write(res))
            return grpc::Status::OK;
        // Woken by a change; otherwise the wait ends now and then to notice a kubelet
        // that has gone.
        while (!d_.wait(seen, 500))
            if (ctx->IsCancelled())
                return grpc::Status::OK;
    }
}

std::vector<std::string> prefer(const Devices &d, const std::vector<std::string> &available,
                                const std::vector<std::string> &must_include, size_t size)
{
    std::vector<std::string> out(must_include.begin(), must_include.end());
    std::set<std::string> taken(out.begin(), out.end());
    std::map<int, size_t> free_on;
    int best = -1;

    for (const std::string &id : available)
        if (!taken.count(id))
            free_on[d.gpu_of(id)]++;
    if (!must_include.empty())
        best = d.gpu_of(must_include[0]);
    for (const auto &kv : free_on)
        if (best < 0 || (must_include.empty() && kv.second > free_on[best]))
            best = kv.first;
    // Packed on one GPU: one server, one DETSHARE_SERVER, for the whole container.
    for (int pass = 0; pass < 2; pass++)
        for (const std::string &id : available)
            if (out.size() < size && !taken.count(id) && (pass == 1 || d.gpu_of(id) == best)) {
                out.push_back(id);
                taken.insert(id);
            }
    return out;
}

grpc::Status Plugin::GetPreferredAllocation(grpc::ServerContext *,
                                            const v1beta1::PreferredAllocationRequest *req,
                                            v1beta1::PreferredAllocationResponse *out)
{
    for (const auto &c : req->container_requests()) {
        std::vector<std::string> avail(c.available_deviceids().begin(),
                                       c.available_deviceids().end());
        std::vector<std::string> must(c.must_include_deviceids().begin(),
                                      c.must_include_deviceids().end());
        auto *res = out->add_container_responses();

        for (const std::string &id : prefer(d_, avail, must, (size_t)std::max(0, c.allocation_size())))
            res->add_deviceids(id);
    }
    return grpc::Status::OK;
}

namespace {

void mount(v1beta1::ContainerAllocateResponse *out, const std::string &host,
           const std::string &container)
{
    v1beta1::Mount *m = out->add_mounts();

    m->set_host_path(host);
    m->set_container_path(container);
    // Read-only both: a container has nothing to write beside our libraries or the
    // server's sockets (connecting to a socket needs no write access to its mount).
    m->set_read_only(true);
}

std::string dir_of(const std::string &path)
{
    size_t slash = path.rfind('/');

    return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

grpc::Status Plugin::allocate_one(const v1beta1::ContainerAllocateRequest &req,
                                  v1beta1::ContainerAllocateResponse *out)
{
    std::vector<std::string> ids(req.devices_ids().begin(), req.devices_ids().end());
    int g = ids.empty() ? -1 : d_.gpu_of(ids[0]);
    Allocation a;
    std::string why;

    for (const std::string &id : ids)
        if (d_.gpu_of(id) < 0)
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unknown device " + id);
    if (g < 0)
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no device asked for");
    for (const std::string &id : ids)
        if (d_.gpu_of(id) != g)
            warn("a container got replicas of several GPUs (" + ids[0] + ", " + id +
                 "): it is served by " + o_.gpus[g].name + "'s server alone");
    why = a_.create((size_t)g, ids, a);
    if (!why.empty()) {
        error("Allocate: " + why);
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, why);
    }
    const Gpu &gpu = o_.gpus[g];
    mount(out, o_.lib_dir, o_.container_lib_dir);
    mount(out, dir_of(gpu.socket), dir_of(gpu.socket));
    auto &env = *out->mutable_envs();
    env["LD_LIBRARY_PATH"] = o_.container_lib_dir;
    env["DETSHARE_SERVER"] = "unix:" + gpu.socket;
    env["DETSHARE_TOKEN"] = a.token;
    env["DETSHARE_TENANT"] = a.tenant;
    if (!o_.server_uid.empty())
        env["DETSHARE_SERVER_UID"] = o_.server_uid;
    // No device nodes: the container reaches the GPU through the server alone.
    return grpc::Status::OK;
}

grpc::Status Plugin::Allocate(grpc::ServerContext *, const v1beta1::AllocateRequest *req,
                              v1beta1::AllocateResponse *out)
{
    for (const auto &c : req->container_requests()) {
        grpc::Status st = allocate_one(c, out->add_container_responses());

        if (!st.ok())
            return st;
    }
    return grpc::Status::OK;
}

grpc::Status Plugin::PreStartContainer(grpc::ServerContext *,
                                       const v1beta1::PreStartContainerRequest *,
                                       v1beta1::PreStartContainerResponse *)
{
    return grpc::Status::OK;
}

} // namespace dsk
