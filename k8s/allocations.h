// What the kubelet allocated: per container, a token minted on that GPU's server for a
// tenant name of its own.  The pod that holds it is learnt from PodResources; an
// allocation no pod holds any more is freed, and its token revoked.
#ifndef DSK_ALLOCATIONS_H
#define DSK_ALLOCATIONS_H

#include "options.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace dsk {

struct Allocation {
    std::string token;  // DETSHARE_TOKEN
    std::string tenant; // DETSHARE_TENANT, the token's tenant-name prefix
    size_t gpu;
    std::vector<std::string> replicas;
    std::chrono::steady_clock::time_point made;
    std::string pod;    // NAMESPACE/NAME once PodResources names it
    std::string name;   // what its tenants are called: the pod, once known, else tenant
    bool has_rule = false; // a quota rule was set for name
    unsigned slo_us = 0;   // the SLO its connected tenants are given, in us (0: none)
};

// Which pod ("NAMESPACE/NAME") holds each replica ID, as PodResources says.
using Holders = std::map<std::string, std::string>;

class Allocations {
public:
    explicit Allocations(const Options &o);

    // Mint a token for a container given `replicas` of GPU g and add it to g's server.
    // Returns "" with a filled, or why not.
    std::string create(size_t g, const std::vector<std::string> &replicas, Allocation &a);

    // Bind allocations to the pods holding their replicas (and apply their annotations),
    // free those no pod has held for o.grace_ms.
    void reconcile(const Holders &holders);

private:
    void bind(Allocation &a, const std::string &pod);
    // Revoke a's token and lift its rule, unless one of `kept` shares the rule.
    void free_one(const Allocation &a, const std::vector<Allocation> &kept);
    void apply_annotations(Allocation &a);
    const Options &o_;
    mutable std::mutex lock_;
    std::vector<Allocation> v_;
};

} // namespace dsk

#endif
