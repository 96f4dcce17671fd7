// SPDX-License-Identifier: Apache-2.0
// GET and DELETE /admin/v1/records (records_api.hpp).
#include "admin/records_api.hpp"

#include "admin/record_lookup.hpp"
#include "core/problem.hpp"

#include <algorithm>
#include <boost/json/object.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/scope.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;

asio::awaitable<response_type> answer_records(gateway_context& ctx, store::session& store,
                                              const admin_request& req, std::string base)
{
    const unsigned version = req.version();
    if (req.method() != http::verb::get && req.method() != http::verb::delete_) {
        auto res = make_problem(
            base, {problems::method_not_allowed, "/admin/v1/records answers GET and DELETE"}, version, true);
        res.set(http::field::allow, "GET, DELETE");
        co_return res;
    }
    auto params = query_params(req.target());
    if (!params)
        co_return make_problem(
            base, {problems::bad_request, "the query string is not valid percent-encoding"}, version, true);
    std::string key;
    scope_parameters scope_given; // the record's scope, resolved as the filter resolves a request's
    for (const auto& [name, value] : *params) {
        if (name == "key")
            key = value;
        else if (name == "credential" && ctx.boot.store.key_secret.empty())
            co_return make_problem(
                base, {problems::bad_request, "credential given but store.key_secret_env is not set"},
                version, true);
        else if (name == "principal" && !is_principal(value))
            co_return make_problem(base,
                                   {problems::bad_request,
                                    "principal must be as the access log shows it: per credential header "
                                    "64 lower-case hex digits or \"-\", joined by ','"},
                                   version, true);
        else
            scope_given.emplace_back(name, value);
    }
    const auto given = [&](std::string_view name) {
        return std::ranges::any_of(scope_given, [&](const auto& p) { return p.first == name; });
    };
    if (given("principal") && given("credential"))
        co_return make_problem(base, {problems::bad_request, "give credential= or principal=, not both"},
                               version, true);
    if (key.empty())
        co_return make_problem(base, {problems::bad_request, "the key parameter is required"}, version, true);
    // The key as a client sends it: a quoted spelling names the same record as the bare one.
    const auto named = record_scope(key, scope_given, ctx.boot.store.key_secret);
    if (!named.problem.empty())
        co_return make_problem(base, {problems::bad_request, named.problem}, version, true);
    if (req.method() == http::verb::delete_) {
        bool removed = false;
        auto ec = co_await store.remove(named.scope(), removed);
        if (ec)
            co_return make_problem(base, {problems::store_unavailable, "the store failed: " + ec.message()},
                                   version, true);
        // The tenant part of the scope, without the credentials (they start at a space) and the
        // route (at 0x02).
        auto tenant = named.tenant.substr(0, named.tenant.find_first_of(std::string_view(" \x02", 2)));
        log::warn("admin: record deleted", {{"tenant", tenant}, {"key", named.key}, {"found", removed}});
        if (!removed)
            co_return make_problem(base, {problems::record_not_found, "no record for this scope and key"},
                                   version, true);
        response_type res{http::status::no_content, version};
        co_return res;
    }
    auto lookup = co_await lookup_or_problem(store, named.scope(), std::string(base), version);
    if (lookup.problem)
        co_return std::move(*lookup.problem);
    const auto& found = lookup.found;
    boost::json::object body;
    body["state"] = state_name(found.existing->state);
    body["fingerprint"] = found.existing->fingerprint;
    body["created_unix_ms"] = found.existing->created_unix_ms;
    body["expires_in_ms"] = found.expires_in_ms;
    if (found.existing->state == store::record_state::completed) {
        body["status"] = found.existing->response.status;
        body["body_bytes"] = found.existing->response.body.size();
    } else if (found.existing->state == store::record_state::status_only) {
        body["status"] = found.existing->response.status;
        body["body_bytes"] = found.existing->body_length;
        body["body_sha256"] = found.existing->body_sha256;
    }
    co_return json_answer(body, version);
}

} // namespace idemgate::gateway::detail
