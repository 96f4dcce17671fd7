// SPDX-License-Identifier: Apache-2.0
#pragma once
// The scope a record is stored under, resolved in one place for the filter (from a request) and
// for the admin API (from its query parameters), so both name the same record. A new scope
// source (a JWT claim, say) is a member of scope_source, read by the filter's
// request_scope_source and by set_scope_parameter, and joined in by resolve_scope.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::gateway {

// What a scope is made of, as the client presented it.
struct scope_source {
    std::string_view tenant;              // "" = the default scope
    bool tenant_from_certificate = false; // the tenant is a client certificate's common name
    // One per credential header of the route, in its order: the header's value (its lines
    // joined by '\n'), or nothing when the request did not carry it.
    std::vector<std::optional<std::string>> credentials;
    // Instead of `credentials`: their hashes as the access log's `principal` shows them (see
    // resolved_scope::principal); valid only where is_principal says so.
    std::string_view principal;
    // The route's path_prefix on a route with key_space: route; "" = the tenant's key space,
    // shared by every route.
    std::string_view route;
};

// The store's tenant part of a scope, and who the access log says made the request.
struct resolved_scope {
    // The tenant (a certificate's common name as certificate_scope_tenant encodes it), then per
    // credential a space and its HMAC-SHA256 under store.key_secret in lower-case hex ("-" for an
    // absent one, so requests without a credential share an anonymous scope of their own); then,
    // for a route's key space, "\x02" and the route's path_prefix with '%', bytes up to ' ' and
    // from 0x7F percent-encoded. Header tenants are visible ASCII and certificate tenants have no
    // space and no control character, so the first space starts the credentials, the only 0x02
    // starts the route, and no two scopes collide.
    std::string tenant;
    // With credentials: the credential part of the scope as the access log shows it, one entry
    // per credential header joined by ',': its HMAC in lower-case hex, or "-" when absent (so
    // "-" is the anonymous scope of a one-header route); without: "". The admin API takes it back
    // as principal=. Raw credentials never leave resolve_scope.
    std::string principal;
};

resolved_scope resolve_scope(const scope_source& source, const std::string& key_secret);

// A principal as resolved_scope::principal writes one: 1 to 16 entries of 64 lower-case hex digits
// or "-", joined by ','.
bool is_principal(std::string_view text) noexcept;

// The admin API's names for a scope's parts: tenant=<header tenant>, cert_tenant=<common name>,
// credential=<value> (one per credential header of the route, in its order; empty: the header
// was absent), principal=<the access log's principal> (instead of credential=),
// route=<path_prefix> (a route with key_space: route). Sets the part `name` names and returns
// true, or returns false for another name. `value` must outlive `source`.
bool set_scope_parameter(scope_source& source, std::string_view name, std::string_view value);

} // namespace idemgate::gateway
