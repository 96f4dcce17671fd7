// SPDX-License-Identifier: Apache-2.0
#include "idempotency/scope.hpp"

#include <idemgate/common/digest.hpp>
#include <idemgate/gateway/decision.hpp>

namespace idemgate::gateway {

resolved_scope resolve_scope(const scope_source& source, const std::string& key_secret)
{
    resolved_scope out;
    out.tenant =
        source.tenant_from_certificate ? certificate_scope_tenant(source.tenant) : std::string(source.tenant);
    // The credentials' hashes, or the hashes the admin API was given as a principal.
    for (std::size_t i = 0; i < source.credentials.size(); ++i) {
        if (i > 0)
            out.principal.push_back(',');
        if (source.credentials[i])
            out.principal += hmac_sha256_hex(key_secret, *source.credentials[i]);
        else
            out.principal.push_back('-');
    }
    if (source.credentials.empty() && is_principal(source.principal))
        out.principal = source.principal;
    // In the store's scope each entry follows a space.
    if (!out.principal.empty()) {
        out.tenant.push_back(' ');
        for (char c : out.principal)
            out.tenant.push_back(c == ',' ? ' ' : c);
    }
    if (!source.route.empty()) {
        static constexpr char hex[] = "0123456789ABCDEF";
        out.tenant.push_back('\x02');
        for (char ch : source.route) {
            auto c = static_cast<unsigned char>(ch);
            if (c == '%' || c <= 0x20 || c >= 0x7f) {
                out.tenant.push_back('%');
                out.tenant.push_back(hex[c >> 4]);
                out.tenant.push_back(hex[c & 0xf]);
            } else {
                out.tenant.push_back(ch);
            }
        }
    }
    return out;
}

bool is_principal(std::string_view text) noexcept
{
    std::size_t entries = 0;
    while (entries++ < 16) {
        auto comma = text.find(',');
        auto entry = text.substr(0, comma);
        bool hex =
            entry.size() == 64 && entry.find_first_not_of("0123456789abcdef") == std::string_view::npos;
        if (entry != "-" && !hex)
            return false;
        if (comma == std::string_view::npos)
            return true;
        text.remove_prefix(comma + 1);
    }
    return false;
}

bool set_scope_parameter(scope_source& source, std::string_view name, std::string_view value)
{
    if (name == "tenant" || name == "cert_tenant") {
        source.tenant = value;
        source.tenant_from_certificate = name == "cert_tenant";
        return true;
    }
    if (name == "principal") {
        source.principal = value;
        return true;
    }
    if (name == "route") {
        source.route = value;
        return true;
    }
    if (name == "credential") {
        if (value.empty())
            source.credentials.emplace_back();
        else
            source.credentials.emplace_back(std::string(value));
        return true;
    }
    return false;
}

} // namespace idemgate::gateway

namespace idemgate::gateway::detail {

scope_source request_scope_source(const config::route_config& route, std::string_view tenant,
                                  const request_type& req)
{
    const auto& policy = route.idempotency;
    scope_source source;
    source.tenant = tenant;
    if (policy.key_space == config::key_space_mode::route)
        source.route = route.path_prefix;
    source.tenant_from_certificate = policy.tenant_from == config::tenant_source::client_cert;
    if (policy.credential_headers.empty())
        return source;
    source.credentials.reserve(policy.credential_headers.size());
    for (const auto& name : policy.credential_headers) {
        auto range = req.equal_range(name);
        if (range.first == range.second) {
            source.credentials.emplace_back();
            continue;
        }
        std::string value;
        for (auto it = range.first; it != range.second; ++it) {
            if (!value.empty())
                value.push_back('\n');
            value.append(it->value());
        }
        source.credentials.emplace_back(std::move(value));
    }
    return source;
}

} // namespace idemgate::gateway::detail
