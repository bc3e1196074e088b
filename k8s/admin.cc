#include "admin.h"

#include "admin_client.h"
#include "admin_fields.h"

#include <cstring>
#include <functional>

namespace dsk {

namespace {

// The server answers at once; a health probe that waits longer is as good as a failure.
constexpr int kTimeoutMs = 2000;

void str(msgpack_packer *pk, const std::string &s)
{
    msgpack_pack_str(pk, s.size());
    msgpack_pack_str_body(pk, s.data(), s.size());
}

const msgpack_object *get(const msgpack_object &m, const char *key)
{
    if (m.type != MSGPACK_OBJECT_MAP)
        return nullptr;
    for (uint32_t i = 0; i < m.via.map.size; i++) {
        const msgpack_object &k = m.via.map.ptr[i].key;

        if (k.type == MSGPACK_OBJECT_STR && k.via.str.size == std::strlen(key) &&
            std::memcmp(k.via.str.ptr, key, k.via.str.size) == 0)
            return &m.via.map.ptr[i].val;
    }
    return nullptr;
}

// Pack a map of `fields` entries with fill, send it, and read the answer's verdict.
std::string ask(const std::string &admin, uint32_t fields,
                const std::function<void(msgpack_packer *)> &fill)
{
    struct ds_addr addr = {};
    msgpack_sbuffer buf;
    msgpack_packer pk;
    msgpack_unpacker u;
    msgpack_unpacked r;
    char why[512] = "";
    std::string out;

    if (ds_addr_parse(("unix:" + admin).c_str(), &addr) != 0)
        return "not a Unix socket path: " + admin;
    msgpack_sbuffer_init(&buf);
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, fields);
    fill(&pk);
    if (!msgpack_unpacker_init(&u, 4096)) {
        msgpack_sbuffer_destroy(&buf);
        return "out of memory";
    }
    msgpack_unpacked_init(&r);
    if (ds_admin_ask(&addr, buf.data, buf.size, kTimeoutMs, &u, &r, why, sizeof(why)) != 0) {
        out = why;
    } else {
        const msgpack_object *ok = get(r.data, DS_ADMIN_KEY_OK), *e = get(r.data, DS_ADMIN_KEY_ERROR);

        if (ok == nullptr || ok->type != MSGPACK_OBJECT_BOOLEAN || !ok->via.boolean)
            out = e != nullptr && e->type == MSGPACK_OBJECT_STR
                      ? std::string(e->via.str.ptr, e->via.str.size)
                      : "the server refused the request";
    }
    msgpack_unpacked_destroy(&r);
    msgpack_unpacker_destroy(&u);
    msgpack_sbuffer_destroy(&buf);
    return out;
}

void cmd(msgpack_packer *pk, const char *name)
{
    str(pk, DS_ADMIN_KEY_CMD);
    str(pk, name);
}

void limit(msgpack_packer *pk, const char *key, uint64_t v)
{
    str(pk, key);
    if (v != 0)
        msgpack_pack_uint64(pk, v);
    else
        msgpack_pack_nil(pk);
}

} // namespace

std::string admin_status(const std::string &admin)
{
    return ask(admin, 1, [](msgpack_packer *pk) { cmd(pk, "status"); });
}

std::string admin_token_add(const std::string &admin, const std::string &token,
                            const std::string &prefix, const std::string &as)
{
    return ask(admin, as.empty() ? 3 : 4, [&](msgpack_packer *pk) {
        cmd(pk, "token");
        str(pk, DS_ADMIN_KEY_TOKEN);
        str(pk, token);
        str(pk, DS_ADMIN_KEY_NAME);
        str(pk, prefix);
        if (!as.empty()) {
            str(pk, DS_ADMIN_KEY_AS);
            str(pk, as);
        }
    });
}

std::string admin_token_revoke(const std::string &admin, const std::string &token)
{
    return ask(admin, 3, [&](msgpack_packer *pk) {
        cmd(pk, "token");
        str(pk, DS_ADMIN_KEY_TOKEN);
        str(pk, token);
        str(pk, DS_ADMIN_KEY_REVOKE);
        msgpack_pack_true(pk);
    });
}

std::string admin_quota(const std::string &admin, const std::string &name, const QuotaRule &r)
{
    return ask(admin, 6, [&](msgpack_packer *pk) {
        cmd(pk, "quota");
        str(pk, DS_ADMIN_KEY_NAME);
        str(pk, name);
        limit(pk, DS_ADMIN_KEY_MEMORY, r.memory);
        limit(pk, DS_ADMIN_KEY_SM_SHARE, r.sm_share);
        limit(pk, DS_ADMIN_KEY_KERNEL_TIME, r.kernel_time);
        str(pk, DS_ADMIN_KEY_CLASS);
        str(pk, r.klass.empty() ? "claimed" : r.klass);
    });
}

std::string admin_tenant(const std::string &admin, const std::string &name,
                         const std::string &klass, unsigned slo_us)
{
    std::string why = ask(admin, slo_us ? 4 : 3, [&](msgpack_packer *pk) {
        cmd(pk, "tenant");
        str(pk, DS_ADMIN_KEY_NAME);
        str(pk, name);
        str(pk, DS_ADMIN_KEY_CLASS);
        str(pk, klass);
        if (slo_us) {
            str(pk, DS_ADMIN_KEY_SLO_US);
            msgpack_pack_unsigned_int(pk, slo_us);
        }
    });
    return why == "no such tenant" ? "" : why;
}

} // namespace dsk
