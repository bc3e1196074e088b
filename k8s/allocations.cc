#include "allocations.h"

#include "admin.h"
#include "annotations.h"
#include "log.h"

#include <sys/random.h>

namespace dsk {

namespace {

// n random bytes as hex.  Returns "" when the kernel gives none.
std::string random_hex(size_t n)
{
    static const char digits[] = "0123456789abcdef";
    std::vector<unsigned char> raw(n);
    std::string out;

    if (getrandom(raw.data(), n, 0) != (ssize_t)n)
        return "";
    for (unsigned char b : raw) {
        out += digits[b >> 4];
        out += digits[b & 15];
    }
    return out;
}

std::string join(const std::vector<std::string> &v)
{
    std::string s;

    for (const std::string &x : v)
        s += (s.empty() ? "" : ",") + x;
    return s;
}

} // namespace

Allocations::Allocations(const Options &o) : o_(o) {}

std::string Allocations::create(size_t g, const std::vector<std::string> &replicas, Allocation &a)
{
    // 192 bits: the token is all that stands between a pod and another's replica.
    std::string token = random_hex(24), id = random_hex(4), why;

    if (token.empty() || id.empty())
        return "no random bytes from the kernel";
    a = Allocation{};
    a.token = token;
    // The name's trailing '-' keeps one allocation's prefix from being another's.
    a.tenant = "k8s-" + o_.gpus[g].name + "-" + id + "-";
    a.name = a.tenant;
    a.gpu = g;
    a.replicas = replicas;
    a.made = std::chrono::steady_clock::now();
    why = admin_token_add(o_.gpus[g].admin, a.token, a.tenant);
    if (!why.empty())
        return "GPU " + o_.gpus[g].name + "'s server did not take the allocation's token: " + why;
    std::lock_guard<std::mutex> l(lock_);
    v_.push_back(a);
    info("allocated " + join(replicas) + " as tenant " + a.tenant);
    return "";
}

// A tenant name holds DS_NAME_MAX (64) bytes; Kubernetes' names are longer at most.
constexpr size_t kNameMax = 64;

void Allocations::bind(Allocation &a, const std::string &pod)
{
    std::string why;

    a.pod = pod;
    // The token names the tenants after the pod from now on: logs, status and metrics
    // say which pod a tenant is.  Tenants connected before keep their name.
    why = admin_token_add(o_.gpus[a.gpu].admin, a.token, a.tenant, pod.substr(0, kNameMax));
    if (!why.empty()) {
        warn("tenant " + a.tenant + " is pod " + pod + ", but its server would not name it "
             "so: " + why);
    } else {
        a.name = pod.substr(0, kNameMax);
        info("tenant " + a.tenant + " (" + join(a.replicas) + ") is pod " + pod +
             (pod.size() > kNameMax ? ", named " + a.name : ""));
    }
    apply_annotations(a);
}

void Allocations::apply_annotations(Allocation &a)
{
    const std::string &pod = a.pod;
    std::map<std::string, std::string> ann;
    size_t slash = pod.find('/');
    std::string why;
    PodSettings s;

    if (api_server_url(o_).empty())
        return;
    why = fetch_annotations(o_, pod.substr(0, slash), pod.substr(slash + 1), ann);
    if (!why.empty()) {
        warn("pod " + pod + ": its annotations could not be read, defaults apply: " + why);
        return;
    }
    s = parse_annotations(ann);
    for (const std::string &p : s.problems)
        warn("pod " + pod + ": annotation refused, the default applies: " + p);
    if (!s.any())
        return;
    // The rule names the allocation's tenants: the token admits them under no other name.
    why = admin_quota(o_.gpus[a.gpu].admin, a.name, s.rule);
    if (!why.empty()) {
        warn("pod " + pod + ": its quota rule was refused, defaults apply: " + why);
        return;
    }
    a.has_rule = true;
    a.slo_us = s.slo_us;
    info("pod " + pod + ": quota rule " + a.name + " set from its annotations");
}

void Allocations::free_one(const Allocation &a, const std::vector<Allocation> &kept)
{
    const std::string &admin = o_.gpus[a.gpu].admin;
    std::string why = admin_token_revoke(admin, a.token);
    bool shared = false;

    if (!why.empty())
        warn("tenant " + a.tenant + ": its token could not be revoked: " + why);
    // Another container of the pod on this GPU keeps the pod's rule.
    for (const Allocation &k : kept)
        shared |= k.gpu == a.gpu && k.name == a.name;
    if (a.has_rule && !shared && !(why = admin_quota(admin, a.name, QuotaRule{})).empty())
        warn("tenant " + a.name + ": its quota rule could not be lifted: " + why);
    info("freed " + join(a.replicas) + " (tenant " + a.tenant +
         (a.pod.empty() ? "" : ", pod " + a.pod) + "): its token is revoked");
}

void Allocations::reconcile(const Holders &holders)
{
    std::lock_guard<std::mutex> l(lock_);
    auto now = std::chrono::steady_clock::now();
    std::vector<Allocation> kept, freed;

    for (Allocation &a : v_) {
        std::string pod;

        for (const std::string &r : a.replicas) {
            auto h = holders.find(r);
            if (h != holders.end())
                pod = h->second;
        }
        if (!pod.empty() && pod != a.pod)
            bind(a, pod);
        if (!pod.empty() || now - a.made < std::chrono::milliseconds(o_.grace_ms)) {
            // An SLO is given to tenants connected: again each round, for those new.
            if (a.slo_us)
                admin_tenant(o_.gpus[a.gpu].admin, a.name, "latency", a.slo_us);
            kept.push_back(a);
            continue;
        }
        freed.push_back(a);
    }
    for (const Allocation &a : freed)
        free_one(a, kept);
    v_.swap(kept);
}

} // namespace dsk
