// SPDX-License-Identifier: Apache-2.0
// How scopes, tenants and quotas are named in Redis: the record key (escaped, or an HMAC with
// store.hash_keys), the tenant tag and the quota keys, all inside one hash tag per tenant so a
// Redis Cluster keeps a tenant's keys in one slot.
#include "redis/redis_keys.hpp"

#include <idemgate/common/digest.hpp>
#include <idemgate/store/protected_backend.hpp>
#include <idemgate/store/redis_store.hpp>
#include <openssl/hmac.h>
#include <openssl/sha.h>

namespace idemgate::store {

namespace {

// Percent-encodes ':' '%' and bytes outside printable ASCII, and with `braces` '{' '}' too (a
// part inside a Redis Cluster hash tag must not end it). Record keys keep their braces: their
// encoding has never changed, so records made by older versions are still found.
void append_escaped(std::string& out, std::string_view part, bool braces = false)
{
    static constexpr char hex[] = "0123456789ABCDEF";
    for (char ch : part) {
        auto c = static_cast<unsigned char>(ch);
        if (c == ':' || c == '%' || (braces && (c == '{' || c == '}')) || c <= 0x20 || c >= 0x7f) {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xf]);
        } else {
            out.push_back(ch);
        }
    }
}

// Appends the lower-case hex HMAC-SHA256(secret, message).
void append_hmac_hex(std::string& out, std::string_view secret, std::string_view message)
{
    auto mac = hmac_sha256(secret, message);
    append_hex(out, mac.data(), mac.size());
}

} // namespace

std::string redis_key(std::string_view prefix, scope s)
{
    std::string out;
    out.reserve(prefix.size() + s.tenant.size() + s.key.size() + 2);
    out.append(prefix);
    out.push_back(':');
    append_escaped(out, s.tenant);
    out.push_back(':');
    append_escaped(out, s.key);
    return out;
}

std::string hashed_redis_key(std::string_view prefix, scope s, std::string_view secret)
{
    std::string out;
    out.reserve(prefix.size() + 3 + 2 * 32);
    out.append(prefix);
    out.append(":{");
    out.append(scope_digest(secret, s));
    out.push_back('}');
    return out;
}

std::string redis_tenant_tag(std::string_view tenant, std::string_view secret)
{
    std::string out;
    if (secret.empty())
        append_escaped(out, tenant);
    else
        append_hmac_hex(out, secret, tenant);
    return out;
}

namespace detail {

std::string shadow_key(std::string_view key_prefix, std::string_view route, std::string_view part)
{
    std::string out(key_prefix);
    out.append(":s:{");
    append_escaped(out, route, true);
    out.append("}:");
    out.append(part);
    return out;
}

std::string redis_key_of(const redis_shared& shared, scope s)
{
    if (!s.hashed)
        return redis_key(shared.cfg.key_prefix, s);
    // The digest the protection decorator computed: the same key hashed_redis_key spells.
    std::string out;
    out.reserve(shared.cfg.key_prefix.size() + 3 + s.key.size());
    out.append(shared.cfg.key_prefix);
    out.append(":{");
    out.append(s.key);
    out.push_back('}');
    return out;
}

} // namespace detail

std::array<std::string, 2> redis_quota_keys(std::string_view prefix, std::string_view tenant,
                                            std::string_view secret)
{
    std::string base(prefix);
    base.append(":q:{");
    if (secret.empty())
        append_escaped(base, tenant, true);
    else
        append_hmac_hex(base, secret, tenant); // store.hash_keys: no raw tenant in Redis
    base.push_back('}');
    return {base + ":f", base + ":r"};
}

} // namespace idemgate::store
