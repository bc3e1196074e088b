#include "options.h"

#include <cstdlib>
#include <cstring>
#include <getopt.h>

namespace dsk {

namespace {

// A GPU's name goes into replica IDs (the kubelet takes at most 63 characters) and tenant
// names, so it is short and plain.
bool name_ok(const std::string &n)
{
    if (n.empty() || n.size() > 24)
        return false;
    for (char ch : n)
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-'))
            return false;
    return true;
}

std::string dir_of(const std::string &path)
{
    size_t slash = path.rfind('/');

    return slash == 0 || slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string unix_path(const std::string &addr)
{
    return addr.rfind("unix:", 0) == 0 && addr.size() > 5 ? addr.substr(5) : std::string();
}

// NAME=unix:SOCKET,admin=unix:PATH
std::string parse_gpu(const char *arg, Options &o)
{
    std::string s(arg), rest;
    size_t eq = s.find('='), comma;
    Gpu g;

    if (eq == std::string::npos)
        return "--server takes NAME=unix:SOCKET,admin=unix:PATH";
    g.name = s.substr(0, eq);
    rest = s.substr(eq + 1);
    comma = rest.find(',');
    g.socket = unix_path(rest.substr(0, comma));
    if (comma == std::string::npos || rest.compare(comma + 1, 6, "admin=") != 0)
        return "--server " + s + ": the socket is followed by ,admin=unix:PATH";
    g.admin = unix_path(rest.substr(comma + 7));
    if (!name_ok(g.name))
        return "--server " + s + ": NAME is 1 to 24 of a-z, 0-9 and '-'";
    if (g.socket.empty() || g.admin.empty() || g.socket[0] != '/' || g.admin[0] != '/')
        return "--server " + s + ": the sockets are unix:/ABSOLUTE/PATH";
    // Containers get the tenant socket's directory: an admin socket there would be
    // theirs too, and a container's root may use any socket it sees.
    if (g.admin.rfind(dir_of(g.socket) + "/", 0) == 0)
        return "--server " + s + ": the admin socket must be outside " + dir_of(g.socket) +
               ", which containers are given (e.g. admin=unix:/run/detshare/admin/" + g.name +
               ".sock, and the server's --admin the same)";
    for (const Gpu &other : o.gpus)
        if (other.name == g.name)
            return "--server " + g.name + " given twice";
    o.gpus.push_back(g);
    return "";
}

bool number(const char *arg, int lo, int hi, int &out)
{
    char *end;
    long v = std::strtol(arg, &end, 10);

    if (*arg == '\0' || *end != '\0' || v < lo || v > hi)
        return false;
    out = (int)v;
    return true;
}

const struct option opts[] = {
    { "server", required_argument, nullptr, 's' },
    { "replicas", required_argument, nullptr, 'r' },
    { "resource", required_argument, nullptr, 'R' },
    { "kubelet-dir", required_argument, nullptr, 'k' },
    { "endpoint", required_argument, nullptr, 'e' },
    { "pod-resources", required_argument, nullptr, 'p' },
    { "lib-dir", required_argument, nullptr, 'l' },
    { "container-lib-dir", required_argument, nullptr, 'c' },
    { "server-uid", required_argument, nullptr, 'u' },
    { "health-ms", required_argument, nullptr, 'H' },
    { "sync-ms", required_argument, nullptr, 'S' },
    { "grace-ms", required_argument, nullptr, 'g' },
    { "api-server", required_argument, nullptr, 'a' },
    { "service-account-dir", required_argument, nullptr, 'A' },
    { "help", no_argument, nullptr, 'h' },
    { nullptr, 0, nullptr, 0 },
};

std::string check(const Options &o)
{
    if (o.gpus.empty())
        return "no --server given: which detshare-servers does this node run?";
    if (o.lib_dir.empty() || o.lib_dir[0] != '/')
        return "--lib-dir /ABSOLUTE/PATH (the host's directory holding detshare's "
               "libcuda.so.1) is needed";
    if (o.container_lib_dir.empty() || o.container_lib_dir[0] != '/')
        return "--container-lib-dir is an absolute path";
    if (o.endpoint.find('/') != std::string::npos)
        return "--endpoint is a file name in --kubelet-dir";
    return "";
}

} // namespace

std::string parse_options(int argc, char **argv, Options &o)
{
    std::string why;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, nullptr)) != -1) {
        switch (c) {
        case 's': why = parse_gpu(optarg, o); break;
        case 'r':
            if (!number(optarg, 1, 256, o.replicas))
                why = "--replicas is 1 to 256";
            break;
        case 'R': o.resource = optarg; break;
        case 'k': o.kubelet_dir = optarg; break;
        case 'e': o.endpoint = optarg; break;
        case 'p': o.pod_resources = unix_path(optarg).empty() ? optarg : unix_path(optarg); break;
        case 'l': o.lib_dir = optarg; break;
        case 'c': o.container_lib_dir = optarg; break;
        case 'u': o.server_uid = optarg; break;
        case 'H':
            if (!number(optarg, 50, 60000, o.health_ms))
                why = "--health-ms is 50 to 60000";
            break;
        case 'S':
            if (!number(optarg, 50, 600000, o.sync_ms))
                why = "--sync-ms is 50 to 600000";
            break;
        case 'g':
            if (!number(optarg, 0, 3600000, o.grace_ms))
                why = "--grace-ms is 0 to 3600000";
            break;
        case 'a': o.api_server = optarg; break;
        case 'A': o.sa_dir = optarg; break;
        case 'h': return "help";
        default: return "unknown option";
        }
        if (!why.empty())
            return why;
    }
    if (optind != argc)
        return std::string("unexpected argument ") + argv[optind];
    return check(o);
}

std::string usage()
{
    return "usage: detshare-device-plugin --server NAME=unix:SOCKET,admin=unix:PATH... "
           "--lib-dir DIR [options]\n"
           "A kubelet device plugin advertising detshare.io/gpu: --replicas per GPU that a\n"
           "detshare-server serves (docs/device-plugin.md).\n\n"
           "  --server NAME=unix:SOCKET,admin=unix:PATH\n"
           "                           a GPU: its server's tenant socket and admin socket,\n"
           "                           in another directory (containers get SOCKET's);\n"
           "                           repeatable\n"
           "  --replicas N             replicas advertised per GPU (default 4)\n"
           "  --resource NAME          the extended resource (default detshare.io/gpu)\n"
           "  --lib-dir DIR            the host directory of detshare's libcuda.so.1\n"
           "  --container-lib-dir DIR  where containers see it (default /usr/local/lib/detshare)\n"
           "  --server-uid UID         DETSHARE_SERVER_UID for containers (a server not run\n"
           "                           as root)\n"
           "  --kubelet-dir DIR        default /var/lib/kubelet/device-plugins\n"
           "  --endpoint FILE          this plugin's socket there (default detshare-gpu.sock)\n"
           "  --pod-resources unix:PATH\n"
           "                           the kubelet's PodResources socket (default\n"
           "                           /var/lib/kubelet/pod-resources/kubelet.sock)\n"
           "  --health-ms N            ask each server's admin socket every N ms (default 1000)\n"
           "  --sync-ms N              list PodResources every N ms (default 2000)\n"
           "  --grace-ms N             free an allocation no pod holds after N ms (default\n"
           "                           10000)\n"
           "  --api-server URL|none    for pods' annotations (default: the in-cluster one)\n"
           "  --service-account-dir DIR\n"
           "                           its token and ca.crt (default\n"
           "                           /var/run/secrets/kubernetes.io/serviceaccount)\n"
           "  -h, --help               this text\n";
}

} // namespace dsk
