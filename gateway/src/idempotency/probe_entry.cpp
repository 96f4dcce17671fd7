// SPDX-License-Identifier: Apache-2.0
// A held key's probe: its target, rendered from the held request, and its entry on the store's
// schedule (JSON, so an operator can read it in the store).
#include "idempotency/probe_entry.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <idemgate/common/digest.hpp>
#include <idemgate/gateway/json_key.hpp>
#include <vector>

namespace idemgate::gateway::detail {

namespace json = boost::json;

namespace {

void append_encoded(std::string& out, std::string_view part)
{
    static constexpr char hex[] = "0123456789ABCDEF";
    for (char ch : part) {
        auto c = static_cast<unsigned char>(ch);
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
            c == '.' || c == '_' || c == '~') {
            out.push_back(ch);
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xf]);
        }
    }
}

// The scope's tenant part may hold any bytes: kept as hex, since JSON strings are UTF-8.
std::optional<std::string> from_hex(std::string_view hex)
{
    if (hex.size() % 2 != 0)
        return std::nullopt;
    std::string out;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        int hi = idemgate::lower_hex_value(hex[i]);
        int lo = idemgate::lower_hex_value(hex[i + 1]);
        if (hi < 0 || lo < 0)
            return std::nullopt;
        out.push_back(static_cast<char>(hi << 4 | lo));
    }
    return out;
}

} // namespace

std::optional<std::string> render_probe_target(std::string_view path, std::string_view key,
                                               std::string_view tenant, std::string_view body)
{
    std::string out;
    std::string field;
    for (std::size_t i = 0; i < path.size(); ++i) {
        auto end = path[i] == '{' ? path.find('}', i) : std::string_view::npos;
        if (end == std::string_view::npos) {
            out.push_back(path[i]);
            continue;
        }
        auto name = path.substr(i + 1, end - i - 1);
        if (name == "key") {
            append_encoded(out, key);
        } else if (name == "tenant") {
            append_encoded(out, tenant);
        } else if (name.starts_with("json:")) {
            std::vector<std::string> pointer{std::string(name.substr(5))};
            if (key_from_json(body, pointer, field).result != json_key::status::found)
                return std::nullopt;
            append_encoded(out, field);
        } else {
            out.append(path.substr(i, end - i + 1)); // --check refuses these
        }
        i = end;
    }
    return out;
}

std::string encode_probe(const probe_entry& p)
{
    std::string scope_hex;
    append_hex(scope_hex, reinterpret_cast<const unsigned char*>(p.scope_tenant.data()),
               p.scope_tenant.size());
    json::object o;
    o["v"] = 1;
    o["route"] = p.route;
    o["tenant"] = p.tenant;
    o["scope"] = scope_hex;
    o["key"] = p.key;
    o["token"] = p.owner_token;
    o["fingerprint"] = p.fingerprint;
    o["created"] = p.created_unix_ms;
    o["held"] = p.held_unix_ms;
    o["record_ttl_ms"] = p.record_ttl_ms;
    o["target"] = p.target;
    return json::serialize(o);
}

std::optional<probe_entry> decode_probe(std::string_view text)
{
    boost::system::error_code ec;
    auto v = json::parse(json::string_view(text.data(), text.size()), ec);
    if (ec || !v.is_object())
        return std::nullopt;
    const auto& o = v.get_object();
    auto str = [&](const char* name, std::string& out) {
        const auto* f = o.if_contains(name);
        if (!f || !f->is_string())
            return false;
        out = std::string(f->get_string());
        return true;
    };
    auto num = [&](const char* name, std::int64_t& out) {
        const auto* f = o.if_contains(name);
        if (!f || !f->is_int64())
            return false;
        out = f->get_int64();
        return true;
    };
    probe_entry p;
    std::string scope_hex;
    std::int64_t version = 0;
    if (!num("v", version) || version != 1 || !str("route", p.route) || !str("tenant", p.tenant) ||
        !str("scope", scope_hex) || !str("key", p.key) || !str("token", p.owner_token) ||
        !str("fingerprint", p.fingerprint) || !num("created", p.created_unix_ms) ||
        !num("held", p.held_unix_ms) || !num("record_ttl_ms", p.record_ttl_ms) || !str("target", p.target))
        return std::nullopt;
    auto scope = from_hex(scope_hex);
    if (!scope)
        return std::nullopt;
    p.scope_tenant = std::move(*scope);
    return p;
}

} // namespace idemgate::gateway::detail
