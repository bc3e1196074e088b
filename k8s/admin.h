// Requests to a detshare-server's admin socket (docs/admin.md), through the C client the
// server's detshare-ctl uses (server/control/admin_client.h).
#ifndef DSK_ADMIN_H
#define DSK_ADMIN_H

#include <cstdint>
#include <string>

namespace dsk {

// A quota rule's settings (docs/admin.md "quota"); 0 or "" leaves one out of the request.
struct QuotaRule {
    uint64_t memory = 0;      // bytes
    unsigned sm_share = 0;    // percent
    unsigned kernel_time = 0; // percent
    std::string klass;        // latency | best-effort
};

// Each returns "" when the server answered ok, else why not (the server's error, or that
// it could not be reached).
std::string admin_status(const std::string &admin);
// Add `token` for tenant names beginning with `prefix`, naming them `as` when not empty
// (again for a token added before: its name changes).
std::string admin_token_add(const std::string &admin, const std::string &token,
                            const std::string &prefix, const std::string &as = "");
std::string admin_token_revoke(const std::string &admin, const std::string &token);
// Set rule `name` to r exactly: what r leaves out is lifted (a rule with nothing goes).
std::string admin_quota(const std::string &admin, const std::string &name, const QuotaRule &r);
// Give the tenants called `name` a class and SLO in us (0: none; none connected is no
// error here).
std::string admin_tenant(const std::string &admin, const std::string &name,
                         const std::string &klass, unsigned slo_us);

} // namespace dsk

#endif
