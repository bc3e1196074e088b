#include "annotations.h"

#include "ds_slo.h"

#include <curl/curl.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace dsk {

namespace {

const std::string kPrefix = "detshare.io/";

// A whole decimal number in [lo, hi].
bool whole(const std::string &s, uint64_t lo, uint64_t hi, uint64_t &out)
{
    uint64_t v = 0;

    if (s.empty() || s.size() > 19)
        return false;
    for (char ch : s) {
        if (ch < '0' || ch > '9')
            return false;
        v = v * 10 + (uint64_t)(ch - '0');
    }
    out = v;
    return v >= lo && v <= hi;
}

// Bytes: a number, optionally with a binary unit as Kubernetes quantities (Gi) or
// detshare's config (GiB) spell it.
bool size(const std::string &s, uint64_t &out)
{
    static const std::pair<const char *, int> units[] = {
        { "KiB", 10 }, { "MiB", 20 }, { "GiB", 30 }, { "TiB", 40 },
        { "Ki", 10 },  { "Mi", 20 },  { "Gi", 30 },  { "Ti", 40 },
    };
    size_t digits = s.find_first_not_of("0123456789");
    std::string unit = digits == std::string::npos ? "" : s.substr(digits);
    int shift = -1;
    uint64_t v;

    if (unit.empty())
        shift = 0;
    for (const auto &u : units)
        if (unit == u.first)
            shift = u.second;
    if (shift < 0 || !whole(s.substr(0, digits), 1, UINT64_MAX >> shift, v))
        return false;
    out = v << shift;
    return true;
}

void take(PodSettings &p, const std::string &key, const std::string &v)
{
    uint64_t n = 0;
    uint32_t us = 0;

    if (key == "class") {
        if (v == "latency" || v == "best-effort")
            p.rule.klass = v;
        else
            p.problems.push_back("detshare.io/class=" + v + ": latency or best-effort");
    } else if (key == "slo-ms") {
        if (ds_slo_parse(v.c_str(), &us) == 0)
            p.slo_us = us;
        else
            p.problems.push_back("detshare.io/slo-ms=" + v + ": milliseconds, more than 0 and "
                                 "up to 3600000, with at most three decimals (4.05)");
    } else if (key == "memory") {
        if (size(v, n))
            p.rule.memory = n;
        else
            p.problems.push_back("detshare.io/memory=" + v + ": bytes, or with Ki, Mi, Gi, Ti "
                                 "(or KiB...)");
    } else if (key == "sm-share" || key == "kernel-time") {
        if (whole(v, 1, 100, n))
            (key == "sm-share" ? p.rule.sm_share : p.rule.kernel_time) = (unsigned)n;
        else
            p.problems.push_back("detshare.io/" + key + "=" + v + ": a percentage, 1 to 100");
    } else {
        p.problems.push_back("detshare.io/" + key + ": not a detshare annotation (class, "
                             "slo-ms, memory, sm-share, kernel-time)");
    }
}

std::string read_file(const std::string &path)
{
    std::ifstream f(path);
    std::stringstream s;

    s << f.rdbuf();
    return s.str();
}

size_t gather(char *data, size_t size, size_t n, void *out)
{
    std::string *s = static_cast<std::string *>(out);

    // A pod is a few KiB; a reply of megabytes is no pod of ours.
    if (s->size() + size * n > (4u << 20))
        return 0;
    s->append(data, size * n);
    return size * n;
}

// metadata.annotations of a Pod object in JSON.
std::string annotations_of(const std::string &json, std::map<std::string, std::string> &out)
{
    google::protobuf::Struct pod;
    google::protobuf::util::JsonParseOptions opts;

    opts.ignore_unknown_fields = true;
    if (!google::protobuf::util::JsonStringToMessage(json, &pod, opts).ok())
        return "the API server's answer is not JSON";
    auto meta = pod.fields().find("metadata");
    if (meta == pod.fields().end() || !meta->second.has_struct_value())
        return "the API server's answer is no pod";
    auto ann = meta->second.struct_value().fields().find("annotations");
    if (ann == meta->second.struct_value().fields().end())
        return "";
    for (const auto &kv : ann->second.struct_value().fields())
        if (kv.second.has_string_value())
            out[kv.first] = kv.second.string_value();
    return "";
}

} // namespace

PodSettings parse_annotations(const std::map<std::string, std::string> &annotations)
{
    PodSettings p;

    for (const auto &kv : annotations)
        if (kv.first.rfind(kPrefix, 0) == 0)
            take(p, kv.first.substr(kPrefix.size()), kv.second);
    // An SLO is a latency tenant's.
    if (p.slo_us && p.rule.klass.empty())
        p.rule.klass = "latency";
    if (p.slo_us && p.rule.klass == "best-effort") {
        p.problems.push_back("detshare.io/slo-ms: a best-effort pod has no SLO");
        p.slo_us = 0;
    }
    return p;
}

std::string api_server_url(const Options &o)
{
    const char *host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char *port = std::getenv("KUBERNETES_SERVICE_PORT");

    if (o.api_server == "none")
        return "";
    if (!o.api_server.empty())
        return o.api_server;
    if (host == nullptr || port == nullptr)
        return "";
    // An IPv6 address goes in brackets.
    return std::string("https://") + (std::string(host).find(':') != std::string::npos
                                          ? "[" + std::string(host) + "]"
                                          : std::string(host)) +
           ":" + port;
}

std::string fetch_annotations(const Options &o, const std::string &ns, const std::string &pod,
                              std::map<std::string, std::string> &out)
{
    std::string url = api_server_url(o), body, why;
    std::string token = read_file(o.sa_dir + "/token"), ca = o.sa_dir + "/ca.crt";
    struct curl_slist *headers = nullptr;
    CURL *c = curl_easy_init();
    long status = 0;
    CURLcode rc;

    if (c == nullptr)
        return "libcurl could not start";
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r'))
        token.pop_back();
    headers = curl_slist_append(headers, "Accept: application/json");
    if (!token.empty())
        headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
    url += "/api/v1/namespaces/" + ns + "/pods/" + pod;
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gather);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (std::ifstream(ca).good())
        curl_easy_setopt(c, CURLOPT_CAINFO, ca.c_str());
    rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK)
        why = std::string("GET ") + url + ": " + curl_easy_strerror(rc);
    else if (status != 200)
        why = "GET " + url + ": HTTP " + std::to_string(status);
    else
        why = annotations_of(body, out);
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    return why;
}

} // namespace dsk
