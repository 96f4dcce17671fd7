// SPDX-License-Identifier: Apache-2.0
#pragma once
// One record as the admin API names it (GET and DELETE /admin/v1/records, POST
// /admin/v1/records/resolve): its key as a client sends it and the scope parameters, resolved as
// the filter resolves a request's scope; then looked up, or the problem to answer.
#include "admin/admin.hpp"

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idemgate::gateway::detail {

// The scope parameters (tenant, cert_tenant, credential, principal, route), already checked.
using scope_parameters = std::vector<std::pair<std::string, std::string>>;

// The record `key` (quoted or bare, as in the Idempotency-Key field) names under `parameters`;
// `problem` is the key's syntax error ("" when it is valid).
struct named_record {
    std::string tenant; // the store's tenant part of the scope (credentials and route joined in)
    std::string key;    // the key, unquoted
    std::string problem;
    // A view of the two above: valid while this record is, and not moved.
    store::scope scope() const noexcept { return {tenant, key}; }
};
named_record record_scope(std::string_view key, const scope_parameters& parameters,
                          const std::string& key_secret);

// What the store has at a scope, or the problem to answer: 503 store-unavailable when the store
// failed, 404 record-not-found when it has no record there.
struct record_lookup {
    store::lookup_result found; // `existing` is set when `problem` is not
    std::optional<response_type> problem;
};
boost::asio::awaitable<record_lookup> lookup_or_problem(store::session& store, store::scope scope,
                                                        std::string base, unsigned version);

} // namespace idemgate::gateway::detail
