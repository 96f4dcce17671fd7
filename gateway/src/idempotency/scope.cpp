#include "idempotency/scope.hpp"

#include <idemgate/common/digest.hpp>
#include <idemgate/gateway/decision.hpp>

namespace idemgate::gateway {

resolved_scope resolve_scope(const scope_source& source, const std::string& key_secret)
{
    resolved_scope out;
    out.tenant =
        source.tenant_from_certificate ? certificate_scope_tenant(source.tenant) : std::string(source.tenant);
    if (!source.credentials.empty()) {
        auto credentials_start = out.tenant.size();
        for (const auto& credential : source.credentials) {
            out.tenant.push_back(' ');
            if (credential)
                out.tenant += hmac_sha256_hex(key_secret, *credential);
            else
                out.tenant.push_back('-');
        }
        auto credentials = std::string_view(out.tenant).substr(credentials_start);
        auto digits = credentials.find_first_not_of(" -");
        out.principal =
            digits == std::string_view::npos ? "anonymous" : std::string(credentials.substr(digits, 16));
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

bool set_scope_parameter(scope_source& source, std::string_view name, std::string_view value)
{
    if (name == "tenant" || name == "cert_tenant") {
        source.tenant = value;
        source.tenant_from_certificate = name == "cert_tenant";
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
