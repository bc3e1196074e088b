// A pod's detshare annotations (docs/device-plugin.md, "Annotations"), read from the API
// server and turned into the quota rule and class of that pod's tenants.
#ifndef DSK_ANNOTATIONS_H
#define DSK_ANNOTATIONS_H

#include "admin.h"
#include "options.h"

#include <map>
#include <string>
#include <vector>

namespace dsk {

struct PodSettings {
    QuotaRule rule;
    unsigned slo_us = 0; // detshare.io/slo-ms, in us
    // One line per annotation refused (its name, its value and what it takes); the
    // others apply.
    std::vector<std::string> problems;
    bool any() const
    {
        return rule.memory || rule.sm_share || rule.kernel_time || !rule.klass.empty() || slo_us;
    }
};

// The detshare.io/ annotations among `annotations`, checked.
PodSettings parse_annotations(const std::map<std::string, std::string> &annotations);

// GET the pod's annotations from the API server (o.api_server, with the ServiceAccount
// token and CA of o.sa_dir).  Returns "" with out filled, or why it could not.
std::string fetch_annotations(const Options &o, const std::string &ns, const std::string &pod,
                              std::map<std::string, std::string> &out);

// The API server's URL: o.api_server, else the in-cluster one from the environment;
// "" when there is none (annotations are then not read).
std::string api_server_url(const Options &o);

} // namespace dsk

#endif
