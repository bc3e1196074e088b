// detshare-device-plugin's command line (docs/device-plugin.md, "Options").
#ifndef DSK_OPTIONS_H
#define DSK_OPTIONS_H

#include <string>
#include <vector>

namespace dsk {

// One GPU a detshare-server serves: --server NAME=unix:SOCKET,admin=unix:PATH.
struct Gpu {
    std::string name;   // in replica IDs and tenant names: [a-z0-9-], e.g. gpu0
    std::string socket; // the tenant socket's path on the host
    std::string admin;  // the admin socket's path, outside the socket's directory
};

struct Options {
    std::vector<Gpu> gpus;
    int replicas = 4;
    std::string resource = "detshare.io/gpu";
    std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
    std::string endpoint = "detshare-gpu.sock"; // our socket, in kubelet_dir
    std::string pod_resources = "/var/lib/kubelet/pod-resources/kubelet.sock";
    std::string lib_dir;                               // host: our libcuda.so.1
    std::string container_lib_dir = "/usr/local/lib/detshare";
    std::string server_uid; // DETSHARE_SERVER_UID for tenants, empty: none
    int health_ms = 1000;   // how often each server's admin socket is asked
    int sync_ms = 2000;     // how often PodResources is listed
    int grace_ms = 10000;   // an allocation no pod holds is freed after this long
    std::string api_server; // empty: from KUBERNETES_SERVICE_HOST/PORT; "none": off
    std::string sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// Parse argv into o.  Returns an empty string, or what is wrong (for a usage line); "help"
// when --help was asked.
std::string parse_options(int argc, char **argv, Options &o);

// --help's text.
std::string usage();

} // namespace dsk

#endif
