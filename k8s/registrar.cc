#include "registrar.h"

#include "log.h"
#include "plugin.h"

#include <grpcpp/grpcpp.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

namespace dsk {

namespace {

constexpr const char *kKubeletSocket = "kubelet.sock";
// Registration is tried again this often while the kubelet refuses or is away.
constexpr int kRetryMs = 5000;

// Our DevicePlugin server on its socket.
struct Endpoint {
    std::unique_ptr<Plugin> plugin;
    std::unique_ptr<grpc::Server> server;
};

void stop_endpoint(Endpoint &e)
{
    if (e.server) {
        // ListAndWatch streams notice the cancellation within their wait.
        e.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
        e.server->Wait();
    }
    e.server.reset();
    e.plugin.reset();
}

bool start_endpoint(const Options &o, Devices &d, Allocations &a, Endpoint &e)
{
    std::string path = o.kubelet_dir + "/" + o.endpoint;
    grpc::ServerBuilder b;

    stop_endpoint(e);
    unlink(path.c_str());
    e.plugin = std::make_unique<Plugin>(o, d, a);
    b.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
    b.RegisterService(e.plugin.get());
    e.server = b.BuildAndStart();
    if (!e.server) {
        error("cannot serve the device plugin on " + path);
        return false;
    }
    return true;
}

bool register_once(const Options &o)
{
    auto channel = grpc::CreateChannel("unix:" + o.kubelet_dir + "/" + kKubeletSocket,
                                       grpc::InsecureChannelCredentials());
    auto stub = v1beta1::Registration::NewStub(channel);
    v1beta1::RegisterRequest req;
    v1beta1::Empty res;
    grpc::ClientContext ctx;

    req.set_version("v1beta1");
    req.set_endpoint(o.endpoint);
    req.set_resource_name(o.resource);
    req.mutable_options()->set_get_preferred_allocation_available(true);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::Status st = stub->Register(&ctx, req, &res);
    if (!st.ok()) {
        warn("registering " + o.resource + " with the kubelet failed (" + st.error_message() +
             "); trying again when kubelet.sock is created, and every 5 s");
        return false;
    }
    info("registered " + o.resource + " with the kubelet (endpoint " + o.endpoint + ")");
    return true;
}

// Whether the inotify events in buf say the kubelet came back.  Only kubelet.sock's
// creation counts: a kubelet that starts removes every socket in the directory first,
// and our own removal of a stale socket must not restart us again.
bool kubelet_restarted(const char *buf, ssize_t n)
{
    bool again = false;

    for (const char *p = buf; p < buf + n;) {
        const struct inotify_event *ev = reinterpret_cast<const struct inotify_event *>(p);

        if (ev->len && std::strcmp(ev->name, kKubeletSocket) == 0 &&
            (ev->mask & (IN_CREATE | IN_MOVED_TO)))
            again = true;
        p += sizeof(*ev) + ev->len;
    }
    return again;
}

bool exists(const std::string &path)
{
    return access(path.c_str(), F_OK) == 0;
}

int signals_fd()
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    return signalfd(-1, &set, SFD_CLOEXEC);
}

} // namespace

int serve_and_register(const Options &o, Devices &d, Allocations &a)
{
    int in = inotify_init1(IN_CLOEXEC), sig = signals_fd();
    std::string path = o.kubelet_dir + "/" + o.endpoint;
    Endpoint e;
    bool registered = false;
    alignas(struct inotify_event) char buf[4096];

    if (in < 0 || sig < 0 ||
        inotify_add_watch(in, o.kubelet_dir.c_str(), IN_CREATE | IN_MOVED_TO) < 0) {
        error("cannot watch " + o.kubelet_dir + ": " + std::strerror(errno));
        return 1;
    }
    if (!start_endpoint(o, d, a, e))
        return 1;
    registered = register_once(o);
    for (;;) {
        struct pollfd p[2] = { { in, POLLIN, 0 }, { sig, POLLIN, 0 } };
        int n = poll(p, 2, kRetryMs);
        bool again = false;

        if (n < 0 && errno != EINTR)
            break;
        if (p[1].revents & POLLIN) {
            info("stopping");
            break;
        }
        if (p[0].revents & POLLIN) {
            ssize_t got = read(in, buf, sizeof(buf));

            again = got > 0 && kubelet_restarted(buf, got);
            if (again)
                info("kubelet.sock was created (the kubelet restarted): serving and "
                     "registering again");
        } else if (n == 0 && !exists(path)) {
            // Removed by someone else than a restarting kubelet: the kubelet can no longer
            // reach us, so come back as after a restart.
            warn(path + " was removed: serving and registering again");
            again = true;
        }
        if (again && !start_endpoint(o, d, a, e))
            break;
        if (again || (n == 0 && !registered))
            registered = register_once(o);
    }
    d.stop();
    stop_endpoint(e);
    unlink(path.c_str());
    close(in);
    close(sig);
    return 0;
}

} // namespace dsk
