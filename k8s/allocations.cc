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

size_t Allocations::size() const
{
    std::lock_guard<std::mutex> l(lock_);

    return v_.size();
}

void Allocations::bind(Allocation &a, const std::string &pod)
{
    const std::string &admin = o_.gpus[a.gpu].admin;
    std::map<std::string, std::string> ann;
    std::string url = api_server_url(o_), why;
    size_t slash = pod.find('/');
    PodSettings s;

    a.pod = pod;
    info("tenant " + a.tenant + " (" + join(a.replicas) + ") is pod " + pod);
    if (url.empty())
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
    // The rule names the allocation's tenants: the token admits no other name.
    why = admin_quota(admin, a.tenant + "*", s.rule);
    if (!why.empty()) {
        warn("pod " + pod + ": its quota rule was refused, defaults apply: " + why);
        return;
    }
    a.has_rule = true;
    a.latency = s.rule.klass == "latency";
    a.slo_ms = s.slo_ms;
    info("pod " + pod + ": quota rule " + a.tenant + "* set from its annotations");
}

void Allocations::free_one(const Allocation &a)
{
    const std::string &admin = o_.gpus[a.gpu].admin;
    std::string why = admin_token_revoke(admin, a.token);

    if (!why.empty())
        warn("tenant " + a.tenant + ": its token could not be revoked: " + why);
    if (a.has_rule && !(why = admin_quota(admin, a.tenant + "*", QuotaRule{})).empty())
        warn("tenant " + a.tenant + ": its quota rule could not be lifted: " + why);
    info("freed " + join(a.replicas) + " (tenant " + a.tenant +
         (a.pod.empty() ? "" : ", pod " + a.pod) + "): its token is revoked");
}

void Allocations::reconcile(const Holders &holders)
{
    std::lock_guard<std::mutex> l(lock_);
    auto now = std::chrono::steady_clock::now();
    std::vector<Allocation> kept;

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
            // A class is the tenant's once it has connected: given again each round.
            if (a.slo_ms)
                admin_tenant(o_.gpus[a.gpu].admin, a.tenant, "latency", a.slo_ms);
            kept.push_back(a);
            continue;
        }
        free_one(a);
    }
    v_.swap(kept);
}

} // namespace dsk
