// detshare-device-plugin: advertises detshare.io/gpu replicas to the kubelet
// (docs/device-plugin.md).
#include "allocations.h"
#include "annotations.h"
#include "devices.h"
#include "log.h"
#include "options.h"
#include "podsync.h"
#include "registrar.h"

#include <curl/curl.h>

#include <csignal>
#include <cstdio>

int main(int argc, char **argv)
{
    dsk::Options o;
    std::string why = dsk::parse_options(argc, argv, o);
    int rc;

    if (why == "help") {
        std::fputs(dsk::usage().c_str(), stdout);
        return 0;
    }
    if (!why.empty()) {
        std::fprintf(stderr, "detshare-device-plugin: %s\n\n%s", why.c_str(), dsk::usage().c_str());
        return 2;
    }
    // Blocked before any thread starts, so that every thread leaves SIGTERM and SIGINT to
    // the registrar's signalfd.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (dsk::api_server_url(o).empty())
        dsk::info("no API server (--api-server, or KUBERNETES_SERVICE_HOST): pods' "
                  "annotations are not read");
    dsk::info(std::to_string(o.gpus.size()) + " GPU(s), " + std::to_string(o.replicas) +
              " replicas each, as " + o.resource);
    {
        dsk::Devices d(o);
        dsk::Allocations a(o);
        // Health first: the kubelet's first list should say which servers answer.
        dsk::HealthWatch health(o, d);
        dsk::PodSync sync(o, a);

        rc = dsk::serve_and_register(o, d, a);
    }
    curl_global_cleanup();
    return rc;
}
